//! Generators of valid conversations ([`cases`]) and the [`Case`] they make.
//!
//! A conversation is first drawn as a [`Plan`] (shapes and text lengths,
//! which proptest shrinks well) and then built into messages. Every message
//! a plan builds is distinct from every other (texts carry a serial number,
//! tool messages a unique call id), so a message of a trimmed result names
//! exactly one message of the input.
//!
//! What the plans cover: no messages at all; leading system prompts, some
//! protected; a summary at the start; user messages (some with an image
//! block); plain replies, with or without reasoning; assistant messages with
//! one to four parallel tool calls whose results answer in any order; system
//! messages in the middle; steps before the first user message; agent-style
//! rounds of one user message and dozens of tool steps; texts of CJK
//! ideographs, and single texts of 5,000 to 20,000 characters; protected
//! messages anywhere (tool results included); a first user message (the
//! task, protected by default) that is often a big request; and histories
//! whose task is forgotten ([`Case::keep_task`]).

use std::fmt;

use memory_core::covered::Covered;
use memory_core::{
    CharTokenCounter, ContentBlock, History, ImageContent, Message, TokenCounter, ToolCall,
    count_messages, summary,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use crate::block_on;

/// What a text is made of, and how long it is (in characters, beyond its
/// serial tag).
///
/// ```
/// use memory_tests::conversation::TextPlan;
/// assert!(matches!(TextPlan::Huge(5_000), TextPlan::Huge(n) if n >= 5_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextPlan {
    /// No text (only for tool-calling replies and tool results, which are
    /// told apart by their call ids).
    Empty,
    /// Latin words.
    Ascii(usize),
    /// CJK ideographs with some kana and Latin letters among them.
    Cjk(usize),
    /// One very long Latin text.
    Huge(usize),
}

/// One step of a plan.
///
/// ```
/// use memory_tests::conversation::{StepPlan, TextPlan};
/// let step = StepPlan::Reply { text: TextPlan::Ascii(3), reasoning: None };
/// assert!(matches!(step, StepPlan::Reply { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepPlan {
    /// An assistant reply without tool calls.
    Reply {
        /// The reply.
        text: TextPlan,
        /// Reasoning of a thinking model.
        reasoning: Option<TextPlan>,
    },
    /// An assistant message with parallel tool calls, then their results.
    Tools {
        /// The reply text (often empty).
        text: TextPlan,
        /// Reasoning of a thinking model.
        reasoning: Option<TextPlan>,
        /// Arguments and result of each call.
        calls: Vec<CallPlan>,
        /// The order in which the results answer (a permutation of the
        /// calls' positions).
        answer_order: Vec<usize>,
    },
    /// A system message in the middle of the conversation.
    System(TextPlan),
}

/// One tool call of a [`StepPlan::Tools`].
///
/// ```
/// use memory_tests::conversation::{CallPlan, TextPlan};
/// let call = CallPlan { arguments: TextPlan::Ascii(8), result: TextPlan::Empty };
/// assert_eq!(call.result, TextPlan::Empty);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPlan {
    /// The call's arguments.
    pub arguments: TextPlan,
    /// The result's text.
    pub result: TextPlan,
}

/// A user message and the steps after it.
///
/// ```
/// use memory_tests::conversation::{RoundPlan, TextPlan};
/// let round = RoundPlan { question: TextPlan::Ascii(5), image: false, steps: vec![] };
/// assert!(round.steps.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundPlan {
    /// The user message.
    pub question: TextPlan,
    /// Whether the user message carries an image block too.
    pub image: bool,
    /// The steps that answer it.
    pub steps: Vec<StepPlan>,
}

/// A whole conversation, before it is built.
///
/// ```
/// use memory_tests::conversation::Plan;
/// assert!(Plan::default().build().messages.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Leading system prompts, each with whether it is protected.
    pub systems: Vec<(TextPlan, bool)>,
    /// A summary at the start, and whether it comes before the system
    /// prompts (else right after them).
    pub summary: Option<(TextPlan, bool)>,
    /// Steps before the first user message.
    pub head: Vec<StepPlan>,
    /// The rounds.
    pub rounds: Vec<RoundPlan>,
    /// More protected messages, anywhere: each pick protects message
    /// `pick % len`.
    pub protect: Vec<u16>,
    /// The text of the first user message, the task, in place of its
    /// round's (often a big request).
    pub task: Option<TextPlan>,
    /// Whether the history forgets the task (leaves it unprotected).
    pub forget_task: bool,
}

/// A built conversation: messages, their [`CharTokenCounter`] counts, and
/// the indices protected on top of the summaries.
///
/// Its `Debug` output shortens long texts, so that a failing case reads well.
///
/// ```
/// use memory_core::Message;
/// use memory_tests::conversation::Case;
/// let mut case = Case::new(vec![Message::system("rules"), Message::user("hi")], vec![0]);
/// assert_eq!(case.counts, vec![2, 1]);
/// // The prompt, and the task (the first user message).
/// assert_eq!(case.history().protected(), &[0, 1]);
/// case.keep_task = false;
/// assert_eq!(case.history().protected(), &[0]);
/// ```
#[derive(Clone, PartialEq)]
pub struct Case {
    /// The transcript.
    pub messages: Vec<Message>,
    /// The count of each message under [`CharTokenCounter`].
    pub counts: Vec<usize>,
    /// Sorted indices of protected messages (summaries and the task are
    /// protected by [`History::new`] already).
    pub protected: Vec<usize>,
    /// Whether the history protects the task (the default); `false` for
    /// a history that [forgets](History::forget_task) it.
    pub keep_task: bool,
    /// Originals the view's summary stands for (see
    /// [`memory_core::covered`]); empty unless [`Case::fold`] made some.
    pub covered: Covered,
}

impl Case {
    /// Counts `messages` and keeps `protected` (sorted, deduplicated, out of
    /// range ones dropped).
    ///
    /// ```
    /// let case = memory_tests::conversation::Case::new(vec![], vec![3]);
    /// assert!(case.protected.is_empty());
    /// ```
    pub fn new(messages: Vec<Message>, mut protected: Vec<usize>) -> Self {
        let counts = block_on(count_messages(&CharTokenCounter, &messages))
            .expect("the char counter never fails");
        protected.retain(|&i| i < messages.len());
        protected.sort_unstable();
        protected.dedup();
        Self {
            messages,
            counts,
            protected,
            keep_task: true,
            covered: Covered::default(),
        }
    }

    /// This case with the `len` messages from `start` (moved to a step
    /// boundary, stopping at a protected message) folded into a summary in
    /// their place and kept as its covered set, as a compaction leaves a
    /// view. `None` when the case already holds a summary or nothing can be
    /// folded there.
    ///
    /// ```
    /// use memory_core::{summary, Message};
    /// use memory_tests::conversation::Case;
    /// let case = Case::new(
    ///     vec![Message::user("task"), Message::assistant("a"), Message::user("b"), Message::assistant("c")],
    ///     vec![],
    /// );
    /// let folded = case.fold(1, 2).unwrap();
    /// assert_eq!(folded.messages.len(), 3);
    /// assert!(summary::is_summary(&folded.messages[1]));
    /// assert_eq!(folded.covered.messages(), &case.messages[1..3]);
    /// assert_eq!(folded.history().covered().len(), 2);
    /// ```
    pub fn fold(&self, start: usize, len: usize) -> Option<Case> {
        if self.messages.iter().any(summary::is_summary) {
            return None;
        }
        let history = self.history();
        let n = self.messages.len();
        let mut from = start.min(n);
        while from < n && (history.is_protected(from) || self.messages[from].is_tool_result()) {
            from += 1;
        }
        let mut to = from;
        while to < n && to < from + len && !history.is_protected(to) {
            to += 1;
        }
        // Whole steps: the span ends before a step's start.
        while to > from && to < n && self.messages[to].is_tool_result() {
            to -= 1;
        }
        if to == from {
            return None;
        }
        let covered = Covered::new(
            self.messages[from..to].to_vec(),
            self.counts[from..to].to_vec(),
        )
        .ok()?
        .before(self.messages.get(to).cloned());
        let body = format!("{} earlier messages, folded.", to - from);
        let folded = summary::message(body);
        let folded_count = block_on(CharTokenCounter.count_message(&folded))
            .expect("the char counter never fails");
        let mut messages = self.messages[..from].to_vec();
        messages.push(folded);
        messages.extend_from_slice(&self.messages[to..]);
        let mut counts = self.counts[..from].to_vec();
        counts.push(folded_count);
        counts.extend_from_slice(&self.counts[to..]);
        let shift = to - from - 1;
        let protected = self
            .protected
            .iter()
            .map(|&p| if p < from { p } else { p - shift })
            .collect();
        Some(Case {
            messages,
            counts,
            protected,
            keep_task: self.keep_task,
            covered,
        })
    }

    /// The history a strategy trims.
    ///
    /// ```
    /// # use memory_core::Message;
    /// let case = memory_tests::conversation::Case::new(vec![Message::user("abcd")], vec![]);
    /// assert_eq!(case.history().total(), 1);
    /// ```
    pub fn history(&self) -> History<'_> {
        let history = History::new(&self.messages, &self.counts).expect("one count per message");
        if self.keep_task {
            history
        } else {
            history.forget_task()
        }
        .protect(&self.protected)
        .with_covered(self.covered.clone())
    }

    /// Total tokens.
    ///
    /// ```
    /// # use memory_core::Message;
    /// let case = memory_tests::conversation::Case::new(vec![Message::user("abcde")], vec![]);
    /// assert_eq!(case.total(), 2);
    /// ```
    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Case {{ {} messages, {} tokens, protected {:?}{}",
            self.messages.len(),
            self.total(),
            self.protected,
            if self.keep_task {
                ""
            } else {
                ", task forgotten"
            }
        )?;
        f.write_str(&describe(&self.messages, &self.counts))?;
        if !self.covered.is_empty() {
            writeln!(f, "covered ({} tokens):", self.covered.total())?;
            f.write_str(&describe(self.covered.messages(), self.covered.counts()))?;
        }
        f.write_str("}")
    }
}

/// One line per message: position, role, tokens, shortened text, tool ids.
///
/// ```
/// use memory_core::Message;
/// let text = memory_tests::conversation::describe(&[Message::user("hi")], &[1]);
/// assert!(text.contains("user"));
/// ```
pub fn describe(messages: &[Message], counts: &[usize]) -> String {
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        let tokens = counts.get(i).map_or_else(|| "?".into(), usize::to_string);
        let mut line = format!(
            "  {i:>3} {:<9} {tokens:>5}t {}",
            m.role(),
            shorten(&m.text())
        );
        if let Message::Assistant {
            reasoning: Some(r), ..
        } = m
        {
            line.push_str(&format!(" reasoning={}", shorten(r)));
        }
        let ids: Vec<&str> = m.tool_calls().iter().map(|c| c.id.as_str()).collect();
        if !ids.is_empty() {
            line.push_str(&format!(" calls={ids:?}"));
        }
        if let Some(id) = m.tool_call_id() {
            line.push_str(&format!(" answers={id}"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn shorten(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= 48 {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(40).collect();
        format!("{head:?}..({chars} chars)")
    }
}

/// Any conversation of the suite.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let case = memory_tests::conversation::cases().new_tree(&mut runner).unwrap().current();
/// assert_eq!(case.counts.len(), case.messages.len());
/// ```
pub fn cases() -> impl Strategy<Value = Case> {
    plans().prop_map(|plan| plan.build())
}

/// Any plan: empty, a chat, or an agent task.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let plan = memory_tests::conversation::plans().new_tree(&mut runner).unwrap().current();
/// let _ = plan.build();
/// ```
pub fn plans() -> impl Strategy<Value = Plan> {
    prop_oneof![
        1 => Just(Plan::default()),
        6 => chat_plans(),
        3 => agent_plans(),
    ]
}

/// Chats: a few short rounds of a few steps each.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let plan = memory_tests::conversation::chat_plans().new_tree(&mut runner).unwrap().current();
/// assert!(plan.rounds.len() < 7);
/// ```
pub fn chat_plans() -> impl Strategy<Value = Plan> {
    (
        leading(),
        prop_oneof![4 => Just(Vec::new()), 1 => vec(step(), 1..3)],
        vec(round(0..5), 0..7),
        vec(any::<u16>(), 0..4),
        task(),
    )
        .prop_map(
            |((systems, summary), head, rounds, protect, (task, forget_task))| Plan {
                systems,
                summary,
                head,
                rounds,
                protect,
                task,
                forget_task,
            },
        )
}

/// Agent tasks: maybe a few earlier rounds, then one user request answered
/// by 8 to 40 steps, most of them tool calls.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let plan = memory_tests::conversation::agent_plans().new_tree(&mut runner).unwrap().current();
/// assert!(plan.rounds.last().unwrap().steps.len() >= 8);
/// ```
pub fn agent_plans() -> impl Strategy<Value = Plan> {
    let long_round = (
        text(),
        vec(prop_oneof![5 => tool_step(), 1 => step()], 8..40),
    )
        .prop_map(|(question, steps)| RoundPlan {
            question,
            image: false,
            steps,
        });
    (
        leading(),
        vec(round(0..3), 0..3),
        long_round,
        vec(any::<u16>(), 0..4),
        task(),
    )
        .prop_map(
            |((systems, summary), mut rounds, long, protect, (task, forget_task))| {
                rounds.push(long);
                Plan {
                    systems,
                    summary,
                    head: Vec::new(),
                    rounds,
                    protect,
                    task,
                    forget_task,
                }
            },
        )
}

/// The task's own text, if any (a big request as often as not), and
/// whether the history forgets the task.
fn task() -> impl Strategy<Value = (Option<TextPlan>, bool)> {
    let big = prop_oneof![
        2 => (400usize..4_000).prop_map(TextPlan::Ascii),
        1 => (5_000usize..=12_000).prop_map(TextPlan::Huge),
        1 => text(),
    ];
    (option::weighted(0.4, big), proptest::bool::weighted(0.2))
}

type Leading = (Vec<(TextPlan, bool)>, Option<(TextPlan, bool)>);

fn leading() -> impl Strategy<Value = Leading> {
    (
        vec((short_text(), any::<bool>()), 0..3),
        option::weighted(0.25, (text(), any::<bool>())),
    )
}

/// Texts of user messages, replies and results.
fn text() -> impl Strategy<Value = TextPlan> {
    prop_oneof![
        16 => (0usize..160).prop_map(TextPlan::Ascii),
        4 => (1usize..60).prop_map(TextPlan::Cjk),
        1 => (5_000usize..=20_000).prop_map(TextPlan::Huge),
    ]
}

/// Texts of system prompts and reasoning: never huge.
fn short_text() -> impl Strategy<Value = TextPlan> {
    prop_oneof![
        4 => (0usize..80).prop_map(TextPlan::Ascii),
        1 => (1usize..30).prop_map(TextPlan::Cjk),
    ]
}

/// Texts that may be empty: tool-calling replies and results.
fn maybe_empty() -> impl Strategy<Value = TextPlan> {
    prop_oneof![1 => Just(TextPlan::Empty), 3 => text()]
}

fn round(steps: std::ops::Range<usize>) -> impl Strategy<Value = RoundPlan> {
    (text(), proptest::bool::weighted(0.1), vec(step(), steps)).prop_map(
        |(question, image, steps)| RoundPlan {
            question,
            image,
            steps,
        },
    )
}

fn step() -> impl Strategy<Value = StepPlan> {
    prop_oneof![
        5 => (text(), option::weighted(0.3, short_text()))
            .prop_map(|(text, reasoning)| StepPlan::Reply { text, reasoning }),
        5 => tool_step(),
        1 => short_text().prop_map(StepPlan::System),
    ]
}

/// A call's arguments: short, but now and then a whole file written.
fn arguments() -> impl Strategy<Value = TextPlan> {
    prop_oneof![
        12 => short_text(),
        1 => (5_000usize..=20_000).prop_map(TextPlan::Huge),
    ]
}

fn tool_step() -> impl Strategy<Value = StepPlan> {
    let call =
        (arguments(), maybe_empty()).prop_map(|(arguments, result)| CallPlan { arguments, result });
    (
        maybe_empty(),
        option::weighted(0.3, short_text()),
        vec(call, 1..=4),
    )
        .prop_flat_map(|(text, reasoning, calls)| {
            let order: Vec<usize> = (0..calls.len()).collect();
            (
                Just(text),
                Just(reasoning),
                Just(calls),
                Just(order).prop_shuffle(),
            )
        })
        .prop_map(|(text, reasoning, calls, answer_order)| StepPlan::Tools {
            text,
            reasoning,
            calls,
            answer_order,
        })
}

const TOOLS: [&str; 5] = ["read_file", "run_tests", "grep", "edit_file", "list_dir"];
const WORDS: [&str; 12] = [
    "the", "budget", "keeps", "newest", "rounds", "while", "older", "steps", "drop", "tool",
    "results", "stay",
];

/// Turns plans into messages, numbering texts and calls.
#[derive(Default)]
struct Builder {
    messages: Vec<Message>,
    protected: Vec<usize>,
    serial: usize,
    calls: usize,
}

impl Builder {
    /// A text tagged with a fresh serial number (never empty, never equal to
    /// another tagged text).
    fn tagged(&mut self, plan: TextPlan) -> String {
        self.serial += 1;
        let tag = format!("[{}]", self.serial);
        match plan {
            TextPlan::Empty => tag,
            _ => format!("{tag} {}", fill(plan, self.serial)),
        }
    }

    /// An untagged text (may be empty).
    fn plain(&mut self, plan: TextPlan) -> String {
        self.serial += 1;
        fill(plan, self.serial)
    }

    fn push(&mut self, message: Message, protected: bool) {
        if protected {
            self.protected.push(self.messages.len());
        }
        self.messages.push(message);
    }

    fn step(&mut self, step: &StepPlan) {
        match step {
            StepPlan::Reply { text, reasoning } => {
                let content = self.tagged(*text);
                let reasoning = reasoning.map(|r| self.plain(r));
                self.push(
                    Message::Assistant {
                        content,
                        reasoning,
                        tool_calls: Vec::new(),
                    },
                    false,
                );
            }
            StepPlan::Tools {
                text,
                reasoning,
                calls,
                answer_order,
            } => {
                let content = self.plain(*text);
                let reasoning = reasoning.map(|r| self.plain(r));
                let mut tool_calls = Vec::with_capacity(calls.len());
                for call in calls {
                    self.calls += 1;
                    let name = TOOLS[self.calls % TOOLS.len()];
                    let arguments = format!("{{\"q\":{:?}}}", self.plain(call.arguments));
                    tool_calls.push(ToolCall::new(
                        format!("call_{}", self.calls),
                        name,
                        arguments,
                    ));
                }
                let results: Vec<Message> = answer_order
                    .iter()
                    .map(|&k| {
                        let content = self.plain(calls[k].result);
                        let call = &tool_calls[k];
                        Message::ToolResult {
                            tool_call_id: call.id.clone(),
                            content,
                            // Some sources record the tool's name, some do not.
                            name: (k % 2 == 0).then(|| call.name.clone()),
                        }
                    })
                    .collect();
                self.push(
                    Message::Assistant {
                        content,
                        reasoning,
                        tool_calls,
                    },
                    false,
                );
                for result in results {
                    self.push(result, false);
                }
            }
            StepPlan::System(text) => {
                let text = self.tagged(*text);
                self.push(Message::system(text), false);
            }
        }
    }
}

impl Plan {
    /// The conversation this plan describes.
    ///
    /// ```
    /// use memory_tests::conversation::{Plan, RoundPlan, TextPlan};
    /// let plan = Plan {
    ///     systems: vec![(TextPlan::Ascii(10), true)],
    ///     rounds: vec![RoundPlan { question: TextPlan::Cjk(4), image: false, steps: vec![] }],
    ///     ..Plan::default()
    /// };
    /// let case = plan.build();
    /// assert_eq!(case.messages.len(), 2);
    /// assert_eq!(case.protected, vec![0]);
    /// ```
    pub fn build(&self) -> Case {
        let mut b = Builder::default();
        let summary_first = matches!(self.summary, Some((_, true)));
        if summary_first {
            add_summary(&mut b, self.summary);
        }
        for &(text, protected) in &self.systems {
            let text = b.tagged(text);
            b.push(Message::system(text), protected);
        }
        if !summary_first {
            add_summary(&mut b, self.summary);
        }
        for step in &self.head {
            b.step(step);
        }
        for (k, round) in self.rounds.iter().enumerate() {
            let question = match self.task {
                Some(task) if k == 0 => task,
                _ => round.question,
            };
            let text = b.tagged(question);
            let mut blocks = vec![ContentBlock::Text(text)];
            if round.image {
                blocks.push(ContentBlock::Image(ImageContent::new(
                    "image/png",
                    vec![0x89, 0x50, 0x4e, 0x47],
                )));
            }
            b.push(Message::user_blocks(blocks), false);
            for step in &round.steps {
                b.step(step);
            }
        }
        let n = b.messages.len();
        if n > 0 {
            b.protected
                .extend(self.protect.iter().map(|&p| usize::from(p) % n));
        }
        Case {
            keep_task: !self.forget_task,
            ..Case::new(b.messages, b.protected)
        }
    }
}

fn add_summary(b: &mut Builder, summary: Option<(TextPlan, bool)>) {
    if let Some((text, _)) = summary {
        let body = b.tagged(text);
        b.push(summary::message(body), false);
    }
}

/// The text of `plan`, made from `seed` (deterministic).
fn fill(plan: TextPlan, seed: usize) -> String {
    match plan {
        TextPlan::Empty => String::new(),
        TextPlan::Ascii(n) => words(n, seed),
        TextPlan::Huge(n) => {
            let mut text = words(n, seed);
            // Break it into lines as a file dump would be.
            let mut out = String::with_capacity(n + n / 80);
            for (i, c) in text.drain(..).enumerate() {
                if i > 0 && i % 80 == 0 {
                    out.push('\n');
                }
                out.push(c);
            }
            out
        }
        TextPlan::Cjk(n) => (0..n)
            .map(|k| match (seed + k) % 9 {
                4 => 'の',
                7 => char::from(b'a' + (k % 26) as u8),
                _ => char::from_u32(0x4E00 + ((seed * 31 + k * 7) % 2_000) as u32)
                    .expect("a CJK ideograph"),
            })
            .collect(),
    }
}

fn words(n: usize, seed: usize) -> String {
    let mut out = String::with_capacity(n + 8);
    let mut k = seed;
    while out.len() < n {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(WORDS[k % WORDS.len()]);
        k = k.wrapping_mul(7).wrapping_add(3);
    }
    out.truncate(n);
    out
}

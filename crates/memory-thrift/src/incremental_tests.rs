//! What Thrift keeps from call to call changes no result: call after call
//! of generated sessions, one `Thrift` that keeps its memo gives exactly
//! the results and traces of one that reads every history afresh (and,
//! in its drop stage, goes through the whole order of the units rather
//! than stopping once nothing more can be kept).

use memory_core::{
    Budget, CharTokenCounter, ContentBlock, History, ImageContent, MemoryError, Message, ToolCall,
    TrimResult, count_messages, summary,
};

use crate::draw::Draw;
use crate::memo::Memo;
use crate::{Lexical, Relevance, Thrift, ThriftTrace};

/// Words of the generated sessions; the last ones are words of Thrift's
/// placeholders and cut markers, so that a question can share them with
/// what is shown changed.
const WORDS: [&str; 27] = [
    "deploy",
    "deployed",
    "cluster",
    "clusters",
    "parser",
    "billing",
    "invoice",
    "garden",
    "roses",
    "kernel",
    "panic",
    "staging",
    "running",
    "tests",
    "failing",
    "market",
    "forty",
    "euros",
    "what",
    "that",
    "have",
    "about",
    "again",
    "queries",
    "image",
    "omitted",
    "characters",
];

fn sentence(draw: &mut Draw, words: usize) -> String {
    let n = 1 + draw.below(words);
    (0..n)
        .map(|_| WORDS[draw.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A session of about `n` messages: a system prompt, then chat rounds,
/// agent rounds of tool steps (long outputs, reasoning, parallel calls),
/// images, a summary now and then, and text-only observations.
fn session(seed: u64, n: usize) -> Vec<Message> {
    let mut draw = Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut m = vec![Message::system("You are a helpful agent.")];
    let mut call = 0;
    // Whether the last step wrote a command in its text, as a text-only
    // agent does: the next user message is its output.
    let mut commanded = false;
    while m.len() < n {
        if std::mem::take(&mut commanded) {
            let lines = if draw.chance(50) {
                40 + draw.below(120)
            } else {
                1 + draw.below(4)
            };
            let text: Vec<String> = (0..lines).map(|_| sentence(&mut draw, 9)).collect();
            m.push(Message::user(format!("OBSERVATION:\n{}", text.join("\n"))));
        } else {
            match draw.below(10) {
                0 => m.push(summary::message(sentence(&mut draw, 8))),
                1 => m.push(Message::User(vec![
                    ContentBlock::Text(sentence(&mut draw, 6)),
                    ContentBlock::Image(ImageContent::new("image/png", vec![7; 64])),
                ])),
                _ => {
                    // Half of them questions, which may reach back.
                    let mut said = sentence(&mut draw, 12);
                    if draw.chance(50) {
                        said.push('?');
                    }
                    m.push(Message::user(said));
                }
            }
        }
        let steps = if draw.chance(40) {
            1 + draw.below(6)
        } else {
            0
        };
        for _ in 0..steps {
            let calls = 1 + usize::from(draw.chance(20));
            let ids: Vec<String> = (0..calls)
                .map(|_| {
                    call += 1;
                    format!("c{call}")
                })
                .collect();
            let reasoning = draw.chance(30).then(|| sentence(&mut draw, 20));
            m.push(Message::Assistant {
                content: sentence(&mut draw, 5),
                reasoning,
                tool_calls: ids
                    .iter()
                    .map(|id| {
                        ToolCall::new(
                            id,
                            "search",
                            format!(r#"{{"q":"{}"}}"#, sentence(&mut draw, 3)),
                        )
                    })
                    .collect(),
            });
            for id in &ids {
                let lines = if draw.chance(25) {
                    40 + draw.below(120)
                } else {
                    1 + draw.below(4)
                };
                let text: Vec<String> = (0..lines).map(|_| sentence(&mut draw, 9)).collect();
                m.push(Message::tool_result(id, text.join("\n")));
            }
        }
        if draw.chance(30) {
            commanded = true;
            m.push(Message::assistant(format!(
                "{}\n<function=bash>\n<parameter=command>{}</parameter>\n</function>",
                sentence(&mut draw, 15),
                sentence(&mut draw, 3)
            )));
        } else {
            m.push(Message::assistant(sentence(&mut draw, 15)));
        }
    }
    m
}

/// Counts as [`CharTokenCounter`] does, and 500 tokens more for each
/// image, so that images are worth replacing.
struct Pricey;

#[async_trait::async_trait]
impl memory_core::TokenCounter for Pricey {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        CharTokenCounter.count(text).await
    }

    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        let images = match message {
            Message::User(blocks) => blocks
                .iter()
                .filter(|b| matches!(b, ContentBlock::Image(_)))
                .count(),
            _ => 0,
        };
        Ok(CharTokenCounter.count_message(message).await? + 500 * images)
    }
}

/// A relevance that is not [`Lexical`] (so the drop stage scores texts)
/// and scores as it does.
#[derive(Debug)]
struct Plain;

#[async_trait::async_trait]
impl Relevance for Plain {
    fn name(&self) -> &str {
        "plain"
    }

    async fn score(&self, question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
        Ok(Lexical::score_now(question, units))
    }
}

async fn trim(
    thrift: &Thrift,
    m: &[Message],
    counts: &[usize],
    budget: &Budget,
) -> (TrimResult, ThriftTrace) {
    let history = History::new(m, counts).unwrap().protect(&[0]);
    traced(thrift, &history, budget).await
}

/// `thrift`'s trim of `history`.
async fn traced(
    thrift: &Thrift,
    history: &History<'_>,
    budget: &Budget,
) -> (TrimResult, ThriftTrace) {
    let result = thrift.trim_traced(history, budget, &Pricey).await;
    result.unwrap()
}

/// Trims every call of `m` (before each assistant message, and at the
/// end) with `kept`, which keeps its memo, and with a fresh Thrift that
/// keeps nothing, and asserts the same results and traces; returns the
/// traces.
async fn same_calls(
    kept: &Thrift,
    fresh: &Thrift,
    m: &[Message],
    budget: &Budget,
    what: &str,
) -> Vec<ThriftTrace> {
    let counts = count_messages(&Pricey, m).await.unwrap();
    let ends = (1..m.len())
        .filter(|&k| m[k].is_assistant())
        .chain([m.len()]);
    let mut traces = Vec::new();
    for end in ends {
        let got = trim(kept, &m[..end], &counts[..end], budget).await;
        let want = trim(fresh, &m[..end], &counts[..end], budget).await;
        assert_eq!(got.0, want.0, "{what}: the call at {end}");
        assert_eq!(got.1, want.1, "{what}: the trace at {end}");
        traces.push(got.1);
    }
    traces
}

/// Two Thrifts made by `make`: one that keeps its memo, and the reference,
/// which keeps nothing and goes through the drop stage's whole order.
fn pair(make: impl Fn() -> Thrift) -> (Thrift, Thrift) {
    let mut fresh = make();
    fresh.memo = Memo::new(false);
    fresh.settings.shortcuts.stop_early = false;
    (make(), fresh)
}

#[tokio::test]
async fn call_after_call_the_results_are_those_of_reading_afresh() {
    let mut traces = Vec::new();
    for seed in 1..=6 {
        let m = session(seed, 120);
        for budget in [
            Budget::tokens(400),
            Budget::tokens(1_500),
            Budget::both(900, 3),
            Budget::rounds(2),
        ] {
            let (kept, fresh) = pair(Thrift::new);
            let what = format!("seed {seed}, {budget:?}");
            traces.extend(same_calls(&kept, &fresh, &m, &budget, &what).await);
        }
        let shared: std::sync::Arc<dyn Relevance> = std::sync::Arc::new(Lexical);
        let (kept, fresh) = pair(|| Thrift::new().with_relevance(shared.clone()));
        let what = format!("seed {seed}, a shared Lexical");
        same_calls(&kept, &fresh, &m, &Budget::tokens(500), &what).await;
        let (kept, fresh) = pair(|| Thrift::new().with_relevance(Plain));
        let what = format!("seed {seed}, another relevance");
        same_calls(&kept, &fresh, &m, &Budget::tokens(700), &what).await;
    }
    // Every stage had work to do somewhere.
    let some = |f: &dyn Fn(&ThriftTrace) -> bool| traces.iter().any(f);
    assert!(some(&|t| t.reached_back));
    assert!(some(&|t| t.appended.count > 0));
    assert!(some(&|t| t.reasoning.shed() > 0));
    assert!(some(&|t| t.tool_outputs_cut.shed() > 0));
    assert!(some(&|t| t.tool_results_replaced.shed() > 0));
    assert!(some(&|t| t.media_replaced.shed() > 0));
    assert!(some(&|t| t.rounds_dropped.shed() > 0));
    assert!(some(&|t| t.steps_dropped.shed() > 0));
}

#[tokio::test]
async fn a_long_session_keeps_giving_the_results_of_reading_afresh() {
    let m = session(99, 400);
    let (kept, fresh) = pair(Thrift::new);
    same_calls(&kept, &fresh, &m, &Budget::tokens(2_000), "long session").await;
}

#[tokio::test]
async fn histories_that_change_are_read_again_where_they_changed() {
    let (kept, fresh) = pair(Thrift::new);
    let budget = Budget::tokens(600);
    let check = |m: Vec<Message>, what: &'static str| {
        let (kept, fresh, budget) = (&kept, &fresh, &budget);
        async move {
            let counts = count_messages(&Pricey, &m).await.unwrap();
            let got = trim(kept, &m, &counts, budget).await;
            let want = trim(fresh, &m, &counts, budget).await;
            assert_eq!(got, want, "{what}");
        }
    };
    let a = session(7, 300);
    let b = session(8, 300);
    check(a.clone(), "a").await;
    // Another session, then the first again.
    check(b.clone(), "b").await;
    check(a.clone(), "a again").await;
    // The first, shorter; with another question; with a message rewritten
    // to another length in the middle.
    check(a[..200].to_vec(), "a shortened").await;
    let mut asked = a[..200].to_vec();
    asked.push(Message::user("What about the billing clusters again?"));
    check(asked, "another question").await;
    let mut rewritten = a.clone();
    rewritten[120] = Message::user("a rewritten message about the garden roses, longer now");
    check(rewritten, "rewritten").await;
    // A message rewritten to the same count at an anchor (the last one
    // shared with the previous history).
    let mut same_count = a.clone();
    let last = same_count.len() - 1;
    let Message::Assistant { content, .. } = &a[last] else {
        unreachable!("sessions end with an assistant message")
    };
    same_count[last] = Message::assistant(content.chars().rev().collect::<String>());
    check(a.clone(), "a once more").await;
    check(same_count, "same count at an anchor").await;
    // A summary spliced in where messages were (as a compaction does).
    let mut compacted = vec![
        a[0].clone(),
        summary::message("Earlier: deploys and billing."),
    ];
    compacted.extend_from_slice(&a[150..]);
    check(compacted, "compacted").await;
}

#[tokio::test]
async fn protection_that_changes_is_a_change() {
    let m = session(3, 200);
    let counts = count_messages(&Pricey, &m).await.unwrap();
    let budget = Budget::tokens(500);
    let (kept, fresh) = pair(Thrift::new);
    for protect in [vec![0], vec![0, 40], vec![0]] {
        let history = History::new(&m, &counts).unwrap().protect(&protect);
        let got = traced(&kept, &history, &budget).await;
        let want = traced(&fresh, &history, &budget).await;
        assert_eq!(got, want, "{protect:?}");
    }
}

/// One token per word.
struct Words;

#[async_trait::async_trait]
impl memory_core::TokenCounter for Words {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        Ok(text.split_whitespace().count())
    }
}

#[tokio::test]
async fn another_counter_is_a_change() {
    let m = session(5, 250);
    let (kept, fresh) = pair(Thrift::new);
    let budget = Budget::tokens(500);
    let chars = count_messages(&CharTokenCounter, &m).await.unwrap();
    let words = count_messages(&Words, &m).await.unwrap();
    for round in 0..4 {
        let (counter, counts): (&dyn memory_core::TokenCounter, _) = if round % 2 == 0 {
            (&CharTokenCounter, &chars)
        } else {
            (&Words, &words)
        };
        let history = History::new(&m, counts).unwrap().protect(&[0]);
        let got = kept.trim_traced(&history, &budget, counter).await.unwrap();
        let want = fresh.trim_traced(&history, &budget, counter).await.unwrap();
        assert_eq!(got, want, "round {round}");
    }
}

#[tokio::test]
async fn a_cut_output_is_scored_by_what_the_cut_shows() {
    // Round 1 names the zeppelin in a short reply; round 2 only in the
    // middle of a long output, which is cut before units are scored. A
    // rounds limit leaves room for one of them.
    let middle = "the zeppelin zeppelin log line\n".repeat(4);
    let output = format!(
        "{}{middle}{}",
        "plain log line\n".repeat(600),
        "plain log line\n".repeat(600)
    );
    let mut m = vec![
        Message::system("You are a helpful agent."),
        Message::user("Tell me of the airship."),
        Message::assistant("The zeppelin flew in 1900."),
        Message::user("Run the log."),
        Message::assistant_with_tools("", vec![ToolCall::new("c1", "shell", "{}")]),
        Message::tool_result("c1", output),
        Message::assistant("Done."),
    ];
    m.push(Message::user("What about the zeppelin?"));
    let counts = count_messages(&Pricey, &m).await.unwrap();
    let history = History::new(&m, &counts)
        .unwrap()
        .protect(&[0])
        .forget_task();
    let budget = Budget::both(2_000, 2);
    let (kept, fresh) = pair(Thrift::new);
    let got = traced(&kept, &history, &budget).await;
    let want = traced(&fresh, &history, &budget).await;
    assert_eq!(got, want);
    assert!(got.0.messages.contains(&m[2]), "{:?}", got.0.messages);
}

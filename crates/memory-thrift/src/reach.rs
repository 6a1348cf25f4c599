//! Whether a new user message reaches back: whether what it needs lies in
//! turns the context no longer shows, so that choosing the context afresh
//! is worth breaking the prompt cache.
//!
//! A text-only agent gets each observation back as a user message, and a
//! chat partner follows on from the last reply: such a message is best
//! served by what the context already shows (the step it answers, the
//! turns it follows), and appending it keeps the cached prefix. A question
//! about something said long ago is served by turns the context dropped.
//! So only a question reaches back: a short message (at most
//! [`MAX_QUESTION_TOKENS`]) with a question mark ([`is_question`]) that
//! does not answer the step before it (see [`ANSWERED_SHARE`]). The older
//! rounds are scored against it (with their neighbours' share, as the
//! drop stage scores them), and it reaches back when a dropped round
//! scores at least [`MIN_SCORE`] and more than [`SHOWN_SHARE`] of the best
//! shown one, unless the message repeats that round (an observation of
//! the same file again, the same tool output) rather than asks for it. A
//! message after a step that wrote a command in its text (a function tag,
//! or a fenced block of shell that ends the message, as text-only agents
//! write them) answers that step, whatever its words: it is the command's
//! output. Any other message (a remark, a "continue", an instruction) is
//! appended; when the budget forces a shed, the shed chooses by relevance
//! to it.
//!
//! A question's test walks every earlier round within reach (see
//! `past_reach`): their scores come from the index's postings of rounds
//! (for each of the question's terms, the rounds that hold it, each once:
//! the term's document frequency is their number), then each round is
//! weighed beside its neighbours and against what is shown. Walking only
//! the rounds the postings name (and their neighbours) decides the same
//! but costs more in a chat, whose common words name most rounds: on the
//! data set's LoCoMo conversations four times over (16,106 messages,
//! budget 8,000), thrift's mean call over the last 500 calls went from
//! 348-402 us to 625-710 us with the index.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

use memory_core::{Budget, History, Message, TrimResult, structure};

use crate::message_index::MessageIndex;
use crate::neighbours::with_neighbours;
use crate::observation::issues_a_command;
use crate::scoring::Lexical;
use crate::texts::texts_of;
use crate::{dates, past_reach, relevance};
use memory_core::identity::text_key;

/// The least score of the best dropped round for a message to reach back.
/// Why: a round that shares only a common word or two with the question
/// is no reason to break the prompt cache. Figure (chars counter): at
/// 0.05 every figure of the data set is the same (the share of the best
/// shown round, [`SHOWN_SHARE`], decides there); at 0.3 LoCoMo's evidence
/// and answer recall at 2,000 tokens fall from 0.796 and 0.566 to 0.790
/// and 0.562 (at 1,000 from 0.742 and 0.502 to 0.738 and 0.498), and a
/// chat of 16,106 messages at 8,000 tokens costs 3,098 a call against
/// 3,183.
const MIN_SCORE: f64 = 0.15;

/// The best dropped round must score more than this share of the best
/// shown one. Why: when the context already shows a round nearly as
/// relevant, what the question needs is likely shown. Figure (chars
/// counter; LoCoMo's evidence and answer recall at 2,000 tokens, and the
/// cost per call and cache breaks of a chat of 16,106 messages at 8,000
/// tokens, anthropic pricing): 0.7955 and 0.5659, 3,183 and 3,257. A
/// higher share asks more of a dropped round before breaking the cache:
/// at 0.85 0.7807 and 0.5581, 2,655 and 3,033; at 1.0 0.7747 and 0.5514,
/// 2,564 and 2,946; at 1.3 0.7152 and 0.5107, 1,936 and 2,349. A lower
/// one gains a question or two for more breaks: at 0.6 and at 0.5 0.7970
/// and 0.5669, 3,207 and 3,277 (at 0.6). The trajectory files do not move
/// (their observations answer a step).
const SHOWN_SHARE: f64 = 0.7;

/// A user message longer than this many tokens brings its own context (an
/// observation, a pasted file): it is appended, not asked about. Why: a
/// typed question is a sentence or two, a pasted output is not. Figure:
/// none recorded (chosen by hand with the reach-back).
pub(crate) const MAX_QUESTION_TOKENS: usize = 128;

/// A user message at least this share of whose terms the assistant
/// message before it holds answers that step. Why: an output ("File
/// created at src/app.py") or a reply repeats most of the words of the
/// step it follows; a new question does not. Figure: none recorded (half,
/// chosen by hand).
const ANSWERED_SHARE: f64 = 0.5;

/// A dropped round whose terms occur in the new message at this share or
/// more is repeated by it, not asked for. Why: an observation of the same
/// file again supersedes the earlier one rather than needs it. Figure:
/// none recorded (half, chosen by hand).
const REPEATED_SHARE: f64 = 0.5;

/// Whether the newest user message of `seen` reaches back past `shown`,
/// the context the previous call showed, the older rounds scored by
/// [`Lexical`]: from `index` when given (it holds the messages of `seen`),
/// else from their texts.
pub(crate) fn reaches_back(
    seen: &History<'_>,
    shown: &TrimResult,
    mut index: Option<&mut MessageIndex>,
    budget: &Budget,
) -> bool {
    let messages = seen.messages();
    let Some(question) = structure::current_question(messages) else {
        return false;
    };
    if seen.counts()[question] > MAX_QUESTION_TOKENS {
        return false;
    }
    let asked = messages[question].text();
    if !is_question(&asked) {
        return false;
    }
    let said = terms_of(&[asked.as_str()]);
    if answers_the_step(&said, &messages[..question]) {
        return false;
    }
    let (first, earlier) = within_reach(seen, question, index.as_deref(), budget);
    if earlier.is_empty() {
        return false;
    }
    let is_shown = shown_rounds(seen, shown, &earlier, index.as_deref());
    if is_shown.iter().all(|&s| s) {
        return false;
    }
    let own = own_scores(messages, first, &earlier, &asked, index.as_deref_mut());
    let mut scores = with_neighbours(&own);
    dates::lift(&mut scores, &asked, messages, earlier.iter().cloned());
    let kept = scores
        .iter()
        .zip(&is_shown)
        .filter(|(_, s)| **s)
        .map(|(score, _)| *score)
        .fold(0.0, f64::max);
    let bar = MIN_SCORE.max(SHOWN_SHARE * kept);
    // The dropped rounds over the bar, best first: the first that the new
    // message does not already repeat is a reason to choose afresh.
    let mut over: Vec<usize> = (0..earlier.len())
        .filter(|&k| !is_shown[k] && scores[k] >= bar && scores[k] > 0.0)
        .collect();
    over.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    over.iter().any(|&k| match index.as_deref() {
        Some(index) => !repeats(&said, &index.terms.terms_of(earlier[k].clone())),
        None => {
            let terms = terms_of(&texts(messages, &earlier[k..=k])[0]);
            !repeats(&said, &terms.iter().map(String::as_str).collect::<Vec<_>>())
        }
    })
}

/// The rounds of `seen` before its question at `question` and within
/// its reach (see [`past_reach`]), listed by `index` when given, and the
/// number of the first (the rounds of `seen` being numbered from 0).
fn within_reach(
    seen: &History<'_>,
    question: usize,
    index: Option<&MessageIndex>,
    budget: &Budget,
) -> (usize, Vec<Range<usize>>) {
    let messages = seen.messages();
    let starts: Cow<'_, [usize]> = match index {
        Some(index) => index.round_starts(messages.len()).into(),
        None => structure::round_starts(messages).into(),
    };
    let reach = past_reach::reach(budget);
    let (gone, _) = past_reach::past(&starts, seen.counts(), question, reach);
    // Each round ends where the next starts; the question's own is not
    // an earlier one.
    let earlier = starts[gone..]
        .windows(2)
        .filter(|pair| pair[1] <= question)
        .map(|pair| pair[0]..pair[1])
        .collect();
    (gone, earlier)
}

/// Each of the `earlier` rounds' own score against the question `asked`,
/// the first of them numbered `first`: from the index's postings of
/// rounds when there is an index, read afresh otherwise.
fn own_scores(
    messages: &[Message],
    first: usize,
    earlier: &[Range<usize>],
    asked: &str,
    index: Option<&mut MessageIndex>,
) -> Vec<f64> {
    match index {
        Some(index) => {
            index.terms.catch_up(messages);
            index
                .terms
                .score_rounds(asked, first..first + earlier.len())
        }
        None => Lexical::score_now(asked, &texts(messages, earlier)),
    }
}

/// For each of the `rounds` of `seen`, whether `shown` shows it: its last
/// message, or its first unless that is protected (and so shown anyway),
/// by text.
fn shown_rounds(
    seen: &History<'_>,
    shown: &TrimResult,
    rounds: &[Range<usize>],
    index: Option<&MessageIndex>,
) -> Vec<bool> {
    let messages = seen.messages();
    let shows = |r: &Range<usize>, showing: &dyn Fn(usize) -> bool| {
        showing(r.end - 1) || (!seen.is_protected(r.start) && showing(r.start))
    };
    match index {
        // Only the positions shown are looked at: each marks the round
        // it lies in.
        Some(index) => {
            let mut marked = vec![false; rounds.len()];
            for i in index.showing(messages.len(), &shown.messages) {
                let k = rounds.partition_point(|r| r.start <= i);
                if let Some(k) = k.checked_sub(1)
                    && rounds[k].contains(&i)
                    && !marked[k]
                {
                    marked[k] = shows(&rounds[k], &|j| j == i);
                }
            }
            marked
        }
        None => {
            let keys: HashSet<u64> = shown.messages.iter().map(text_key).collect();
            let showing = |i: usize| keys.contains(&text_key(&messages[i]));
            rounds.iter().map(|r| shows(r, &showing)).collect()
        }
    }
}

/// The texts of each of `rounds`.
fn texts<'m>(messages: &'m [Message], rounds: &[Range<usize>]) -> Vec<Vec<&'m str>> {
    rounds
        .iter()
        .map(|r| {
            let mut texts = Vec::new();
            for m in &messages[r.clone()] {
                texts_of(m, &mut texts);
            }
            texts
        })
        .collect()
}

/// Whether the user message at `question` answers the step before it
/// rather than asks something: it is long (more than
/// [`MAX_QUESTION_TOKENS`]: an observation, a pasted file), or most of its
/// terms occur in the assistant message before it (see
/// [`ANSWERED_SHARE`]).
pub(crate) fn answers(history: &History<'_>, question: usize) -> bool {
    if history.counts()[question] > MAX_QUESTION_TOKENS {
        return true;
    }
    let said = terms_of(&[history.messages()[question].text().as_str()]);
    answers_the_step(&said, &history.messages()[..question])
}

/// What older turns are scored against: the current question, and when it
/// [answers](answers) a step, that step too (what the agent is doing is
/// what its next step needs).
pub(crate) fn query(history: &History<'_>, question: usize) -> String {
    let asked = history.messages()[question].text();
    if !answers(history, question) {
        return asked;
    }
    let step = history.messages()[..question]
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }));
    match step {
        Some(step) => {
            let mut texts = Vec::new();
            texts_of(step, &mut texts);
            texts.push(&asked);
            texts.join("\n")
        }
        None => asked,
    }
}

/// Whether `text` asks something: it holds a question mark (the Latin,
/// full-width or Arabic one, or an interrobang). Greek, whose question
/// mark is a semicolon once normalized, is not recognized; a '?' in a URL
/// or in code counts (at worst, a fresh choice the message did not need).
///
/// A chat's remarks rarely need turns the context dropped, and choosing
/// afresh for each of them breaks the prompt cache on most calls of a long
/// chat (on the LoCoMo conversations four times over, letting every user
/// message reach back broke it on 6,705 of 8,052 calls; only questions, on
/// 2,385); questions, which do, nearly always carry the mark (1,346 of the
/// 1,347 LoCoMo questions).
pub(crate) fn is_question(text: &str) -> bool {
    text.contains(['?', '\u{ff1f}', '\u{61f}', '\u{203d}'])
}

/// Whether most of the terms of the new message (`said`) occur in the
/// assistant message before it: the output of the step it answers ("File
/// created at src/app.py" after the call that wrote it), a reply to what
/// was just said.
fn answers_the_step(said: &HashSet<String>, before: &[Message]) -> bool {
    let Some(step) = before
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }))
    else {
        return false;
    };
    if said.is_empty() || issues_a_command(step) {
        return true;
    }
    let mut texts = Vec::new();
    texts_of(step, &mut texts);
    let step = terms_of(&texts);
    let shared = said.iter().filter(|t| step.contains(*t)).count();
    shared as f64 >= ANSWERED_SHARE * said.len() as f64
}

/// The distinct terms of `texts`.
fn terms_of(texts: &[&str]) -> HashSet<String> {
    let mut out = HashSet::new();
    for text in texts {
        relevance::for_each_term(text, |t| {
            if !out.contains(t) {
                out.insert(t.to_string());
            }
        });
    }
    out
}

/// Whether at least [`REPEATED_SHARE`] of the distinct `terms` of a
/// round occur in `said`: an earlier view of the same file, the same tool
/// output again. The new message then supersedes the round rather than
/// asks for it.
fn repeats(said: &HashSet<String>, terms: &[&str]) -> bool {
    if terms.is_empty() {
        return true;
    }
    let shared = terms.iter().filter(|t| said.contains(**t)).count();
    shared as f64 >= REPEATED_SHARE * terms.len() as f64
}

#[cfg(test)]
mod tests {
    use super::is_question;

    #[test]
    fn a_question_carries_a_question_mark() {
        assert!(is_question("When did we deploy the parser?"));
        assert!(is_question("Did you see it? I loved it."));
        assert!(is_question("パーサーはどこで動いていますか？"));
        assert!(is_question("أين يعمل المحلل؟"));
        assert!(is_question("You deployed it where‽"));
        assert!(!is_question("Let me tell you about the parser."));
        assert!(!is_question("Please continue working on the task"));
        assert!(!is_question(""));
    }
}

//! When Compact summarizes under a token budget: on a call where a cut is
//! due (the fit moves), with enough to fold, and only when the compacted
//! history leaves room for the kept turns once more, so that the new
//! prefix lasts; a chosen threshold comes earlier under pressure rather
//! than letting the fit shed verbatim turns; the summary cap and the
//! request's input limit follow the budget unless chosen.
//!
//! The task is left out of the floor here, and the index of what a
//! context leaves out is off: these tests are about when summaries land,
//! and round 1 is folded like the others.
//!
//! Sizes under `CharTokenCounter`: a question is 10 tokens, a reply 40, a
//! round 50. At turn `i` (the question recorded, the reply not yet) the
//! history holds 50 (i - 1) + 10 tokens: 510 at turn 11. Budget 500, so
//! the depth (the least to fold) is 375 tokens.

use crate::common;

use std::sync::Arc;

use common::{reply, user};
use memory_compact::{Compact, DEFAULT_SUMMARY_MAX_TOKENS};
use memory_core::{Budget, CharTokenCounter, FakeProvider, Memory, Message, TrimStrategy, summary};
use memory_session::WindowMemory;

const BUDGET: usize = 500;

fn answering(n: usize) -> Arc<FakeProvider> {
    common::answering("## State\nsummary", n)
}

/// A memory at the budget, compacting with `compact`, without the index
/// and with round 1 foldable like the others.
fn memory(compact: Compact) -> WindowMemory {
    WindowMemory::new(BUDGET)
        .with_index(None)
        .with_strategy(compact)
        .with_task(false)
}

/// Records question `i`, takes the context, records reply `i`.
async fn turn(memory: &mut WindowMemory, i: usize) -> Vec<Message> {
    memory.record(user(i)).await.unwrap();
    let context = memory.context().await.unwrap();
    memory.record(reply(i)).await.unwrap();
    context
}

/// Runs turns 1-11 through `compact` (calling `fake`) at the budget:
/// turns 1-10 fit (460 tokens at turn 10) and make no call; turn 11 (510
/// tokens) is over the budget with rounds 1-8 (400 tokens) older than the
/// two kept rounds, and their summary replaces them instead of a cut.
/// Returns the memory and the context of turn 11.
async fn summarized_at_the_cut(
    compact: Compact,
    fake: &FakeProvider,
) -> (WindowMemory, Vec<Message>) {
    let mut memory = memory(compact);
    for i in 1..=10 {
        let context = turn(&mut memory, i).await;
        assert_eq!(context.len(), 2 * i - 1, "turn {i}: everything verbatim");
    }
    assert!(fake.requests().is_empty());
    let at_cut = turn(&mut memory, 11).await;
    assert_eq!(fake.requests().len(), 1);
    assert!(summary::is_summary(&at_cut[0]));
    assert_eq!(
        at_cut[1..],
        [user(9), reply(9), user(10), reply(10), user(11)]
    );
    (memory, at_cut)
}

#[tokio::test]
async fn by_default_the_summary_lands_where_a_cut_is_due_and_later_calls_append_to_it() {
    let fake = answering(3);
    let (mut memory, at_cut) = summarized_at_the_cut(Compact::new(fake.clone()), &fake).await;
    // The following calls append to that context until the budget is
    // crossed again: its prefix is reused, and no call is made. (Once
    // crossed, the fit sheds the oldest verbatim rounds until they are
    // deep enough to be worth the next summary.)
    let mut previous = at_cut;
    let mut appended = 0;
    let mut kept = true;
    for i in 12..=30 {
        let context = turn(&mut memory, i).await;
        if fake.requests().len() > 1 {
            break;
        }
        kept &= context.starts_with(&previous);
        appended += usize::from(kept);
        previous = context;
    }
    assert!(appended >= 6, "the new prefix lasted {appended} calls");
    assert_eq!(fake.requests().len(), 2, "a second summary at the next cut");
}

/// Each summary names the turns it stands for, the earlier summary's
/// included: one recall of its handle brings back every recorded turn
/// from the first on to the last it folded, exactly.
#[tokio::test]
async fn each_summary_names_every_turn_it_stands_for_and_recall_brings_them_back() {
    use memory_core::recall::RecallRequest;
    let fake = answering(3);
    let (mut memory, at_cut) = summarized_at_the_cut(Compact::new(fake.clone()), &fake).await;
    let recorded =
        |upto: usize| -> Vec<Message> { (1..=upto).flat_map(|i| [user(i), reply(i)]).collect() };
    let first = summary::stands_for(&at_cut[0]).expect("a handle");
    let back = memory
        .recall(&RecallRequest::new(first.to_string()))
        .await
        .unwrap();
    assert_eq!(back.messages, recorded(8), "rounds 1-8");
    let mut i = 12;
    while fake.requests().len() < 2 && i <= 40 {
        turn(&mut memory, i).await;
        i += 1;
    }
    assert_eq!(fake.requests().len(), 2, "a second summary");
    let context = turn(&mut memory, i).await;
    let second = summary::stands_for(&context[0]).expect("a handle");
    let next = context[1].clone();
    let upto = (1..i)
        .find(|&k| user(k) == next)
        .expect("a verbatim question")
        - 1;
    let back = memory
        .recall(&RecallRequest::new(second.to_string()))
        .await
        .unwrap();
    assert_eq!(back.messages, recorded(upto), "rounds 1-{upto}");
    assert!(upto > 8);
}

#[tokio::test]
async fn a_chosen_threshold_comes_earlier_when_the_fit_would_shed_verbatim_turns() {
    let fake = answering(1);
    // A threshold of 10,000 is never passed here; over the budget the
    // depth (375) decides.
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(10_000);
    // Every round is there, verbatim or summarized: nothing was shed.
    summarized_at_the_cut(compact, &fake).await;
    let request = common::sent(&fake, 0);
    for i in 1..=8 {
        assert!(request.contains(&reply(i).text()), "round {i} summarized");
    }
}

#[tokio::test]
async fn too_little_to_fold_is_shed_by_the_fit_until_the_summary_can_last() {
    let fake = answering(1);
    // Three kept rounds and the question (160 tokens) leave rounds 1-7
    // (350 tokens) older at turn 11.
    let compact = Compact::new(fake.clone()).with_keep_verbatim(3);
    let mut memory = memory(compact);
    for i in 1..=10 {
        turn(&mut memory, i).await;
    }
    // Turn 11: over the budget with 350 tokens older, short of the depth:
    // the fit drops the oldest rounds from view, no call is made.
    let context = turn(&mut memory, 11).await;
    assert!(fake.requests().is_empty(), "turn 11: no call");
    assert!(!context.iter().any(summary::is_summary));
    assert!(!context.contains(&user(1)), "turn 11: round 1 shed");
    // Turn 12: rounds 1-8 are older (400 tokens, past the depth of 375),
    // and the compacted history (the summary at its cap of 96 and the
    // 160 kept) leaves 244, room for the kept rounds once more.
    let context = turn(&mut memory, 12).await;
    assert_eq!(fake.requests().len(), 1);
    assert!(summary::is_summary(&context[0]));
    assert_eq!(context[1], user(9));
}

#[tokio::test]
async fn a_summary_that_could_not_last_is_never_asked_for() {
    let fake = answering(1);
    // Four kept rounds and the question hold 210 tokens: beside them a
    // summary at its cap of 96 leaves 194, less than those rounds took,
    // so the next calls would cut the compacted history again. The fit
    // sheds on every call instead, as window drop does, and every context
    // is within the budget.
    let compact = Compact::new(fake.clone()).with_keep_verbatim(4);
    let mut memory = memory(compact);
    for i in 1..=30 {
        let context = turn(&mut memory, i).await;
        let tokens: usize = context
            .iter()
            .map(|m| CharTokenCounter::estimate(&m.text()))
            .sum();
        assert!(tokens <= BUDGET, "turn {i}: {tokens} tokens");
    }
    assert!(fake.requests().is_empty());
}

/// Tokens of a summary's prefix and header by CharTokenCounter.
const HEADER: u32 = 35;

#[tokio::test]
async fn the_summary_cap_and_input_limit_follow_the_budget_unless_chosen() {
    // Ten rounds of a 10-token question and a 1,000-token reply (the
    // ninth reply 40): rounds 1-8 (8,080 tokens) are summarized. The
    // newest reply is what moves the fit, so a cut is due; the two kept
    // rounds (1,060 tokens) leave room beside the compacted history.
    let history: Vec<Message> = (1..=10)
        .flat_map(|i| {
            let chars = if i == 9 { 160 } else { 4_000 };
            [
                user(i),
                Message::assistant(common::text(&format!("a{i}"), chars)),
            ]
        })
        .collect();
    async fn request(
        history: &[Message],
        compact: Compact,
        fake: &FakeProvider,
        budget: Budget,
    ) -> (Option<u32>, usize) {
        compact
            .trim(history, &budget, &CharTokenCounter)
            .await
            .unwrap();
        let request = &fake.requests()[0];
        let input = request
            .messages
            .iter()
            .map(|m| CharTokenCounter::estimate(&m.text()))
            .sum();
        (request.options.max_tokens, input)
    }
    // At a budget of 4,000: a cap of 333 tokens, at most about 2,000 sent
    // (each shortened message carries a short note of what was left out).
    // The cap holds the whole summary message, so the model is asked for
    // the cap less the prefix, the line naming what it stands for and the
    // header (35 tokens of CharTokenCounter).
    let fake = answering(1);
    let (cap, input) = request(
        &history,
        Compact::new(fake.clone()),
        &fake,
        Budget::tokens(4_000),
    )
    .await;
    assert_eq!(cap, Some(333 - HEADER));
    assert!((1_000..2_300).contains(&input), "{input} tokens sent");
    let scaled = input;
    // Chosen values are kept.
    let fake = answering(1);
    let compact = Compact::new(fake.clone())
        .with_summary_max_tokens(700)
        .unwrap()
        .with_max_input_tokens(3_000);
    let (cap, input) = request(&history, compact, &fake, Budget::tokens(4_000)).await;
    assert_eq!(cap, Some(700 - HEADER));
    assert!(input > scaled && input < 3_300, "{input} tokens sent");
    // Without a token budget, the defaults: the whole material is sent.
    let fake = answering(1);
    let (cap, input) = request(
        &history,
        Compact::new(fake.clone()),
        &fake,
        Budget::default(),
    )
    .await;
    assert_eq!(cap, Some(DEFAULT_SUMMARY_MAX_TOKENS - HEADER));
    assert!(input > 8_080, "{input} tokens sent");
}

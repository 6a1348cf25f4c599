//! Skipping the older steps of a long round changes no result: on
//! generated sessions that end in a long agent round, call after call,
//! Thrift gives what it gives when it passes over every step, and its
//! trace differs only in what the skipped steps count towards.

use memory_core::{
    Budget, CharTokenCounter, History, Message, ToolCall, TrimResult, count_messages,
};

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::draw::Draw;
use crate::memo::Memo;
use crate::shortcuts::SkipCounts;
use crate::{Thrift, ThriftTrace};

const WORDS: [&str; 12] = [
    "deploy", "cluster", "parser", "billing", "invoice", "kernel", "panic", "staging", "tests",
    "failing", "module", "again",
];

fn words(draw: &mut Draw, most: usize) -> String {
    (0..=draw.below(most))
        .map(|_| WORDS[draw.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A system prompt, chat rounds, then one agent round of `steps`
/// steps: parallel calls, reasoning, outputs short and long, now and
/// then a step without calls or a result no call asked for. With
/// `heavy` reasoning most steps reason at length, so that most of a
/// step's tokens go when its reasoning does.
fn session(seed: u64, steps: usize, heavy: bool) -> Vec<Message> {
    let mut draw = Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut m = vec![Message::system("You are a coding agent.")];
    // Short chat rounds before the agent's, or (one session in three)
    // long ones, that keep the total over the budget whatever the round.
    let (rounds, answer) = if seed % 3 == 1 { (12, 600) } else { (3, 20) };
    for _ in 0..draw.below(rounds + 1) {
        m.push(Message::user(format!("{}?", words(&mut draw, 8))));
        m.push(Message::assistant(words(&mut draw, answer)));
    }
    m.push(Message::user(format!("Fix the {}.", words(&mut draw, 6))));
    for step in 0..steps {
        if draw.chance(5) {
            m.push(Message::assistant(words(&mut draw, 12)));
            continue;
        }
        if draw.chance(3) {
            m.push(Message::tool_result("stray", words(&mut draw, 30)));
            continue;
        }
        let calls = 1 + usize::from(draw.chance(20));
        let ids: Vec<String> = (0..calls).map(|k| format!("c{step}-{k}")).collect();
        m.push(Message::Assistant {
            content: words(&mut draw, 6),
            reasoning: draw
                .chance(if heavy { 80 } else { 20 })
                .then(|| words(&mut draw, if heavy { 400 } else { 30 })),
            tool_calls: ids
                .iter()
                .map(|id| {
                    ToolCall::new(id, "read", format!(r#"{{"q":"{}"}}"#, words(&mut draw, 3)))
                })
                .collect(),
        });
        for id in &ids {
            let lines = if draw.chance(20) {
                60 + draw.below(300)
            } else {
                1 + draw.below(8)
            };
            let text: Vec<String> = (0..lines).map(|_| words(&mut draw, 10)).collect();
            m.push(Message::tool_result(id, text.join("\n")));
        }
    }
    m
}

async fn traced(
    thrift: &Thrift,
    history: &History<'_>,
    budget: &Budget,
    skip: bool,
) -> (TrimResult, ThriftTrace) {
    // A clone shares the memo: only the setting differs.
    let mut thrift = thrift.clone();
    thrift.settings.shortcuts.skip_long_round = skip;
    let got = thrift.trim_traced(history, budget, &CharTokenCounter).await;
    got.unwrap()
}

/// `thrift`, counting its passes that skip steps into `skips`; the
/// newest steps looked at hold `share` of the budget when given.
fn counted(mut thrift: Thrift, skips: &Arc<SkipCounts>, share: Option<f64>) -> Thrift {
    thrift.settings.shortcuts.skips = skips.clone();
    if let Some(share) = share {
        thrift.settings.shortcuts.horizon_share = share;
    }
    thrift
}

/// `thrift` keeping nothing from call to call.
fn forgetful(mut thrift: Thrift) -> Thrift {
    thrift.memo = Memo::new(false);
    thrift
}

/// The trace without what the skipped steps count towards: the stages'
/// tallies and the tokens of the steps dropped (their number stays).
fn outline(trace: &ThriftTrace) -> ThriftTrace {
    let mut trace = trace.clone();
    let saved = trace.saved();
    for shed in [
        &mut trace.reasoning,
        &mut trace.tool_outputs_cut,
        &mut trace.tool_results_replaced,
        &mut trace.media_replaced,
    ] {
        *shed = crate::Shed::default();
    }
    trace.steps_dropped.before.tokens = saved;
    trace
}

/// Every call of generated long rounds, with and without skipping, under
/// budgets small and large, the newest steps looked at holding `share` of
/// the budget when given; returns how many passes skipped steps and were
/// kept, and how many were made again.
async fn same_with_and_without_skipping(
    seeds: std::ops::RangeInclusive<u64>,
    share: Option<f64>,
) -> (usize, usize) {
    let skips = Arc::new(SkipCounts::default());
    for seed in seeds {
        let m = session(seed, 120 + 30 * seed as usize, seed % 2 == 0);
        let counts = count_messages(&CharTokenCounter, &m).await.unwrap();
        let protect: Vec<usize> = if seed % 3 == 0 { vec![0, 40] } else { vec![0] };
        for budget in [400, 1_500, 4_000] {
            let budget = Budget::tokens(budget);
            let kept = counted(Thrift::new(), &skips, share);
            let fresh = counted(forgetful(Thrift::new()), &skips, share);
            let ends = (1..m.len())
                .filter(|&k| m[k].is_assistant())
                .chain([m.len()]);
            for end in ends.filter(|end| end % 4 == 0 || *end == m.len()) {
                let history = History::new(&m[..end], &counts[..end])
                    .unwrap()
                    .protect(&protect);
                let want = traced(&fresh, &history, &budget, false).await;
                for (thrift, what) in [(&kept, "kept"), (&fresh, "fresh")] {
                    let got = traced(thrift, &history, &budget, true).await;
                    let at = format!("seed {seed}, {budget:?}, {what}, the call at {end}");
                    assert_eq!(got.0, want.0, "{at}");
                    assert_eq!(outline(&got.1), outline(&want.1), "{at}");
                    assert_eq!(
                        got.1.steps_dropped.before.count, want.1.steps_dropped.before.count,
                        "{at}"
                    );
                }
            }
        }
    }
    (
        skips.kept.load(Ordering::Relaxed),
        skips.redone.load(Ordering::Relaxed),
    )
}

#[tokio::test]
async fn a_long_round_gives_what_a_pass_over_every_step_gives() {
    // The steps were skipped, and the pass that skipped them kept, often.
    let (kept, redone) = same_with_and_without_skipping(1..=6, None).await;
    assert_eq!(redone, 0, "the horizon reached far enough every time");
    assert!(kept > 100, "{kept}");
}

// Steps that hold less than the budget, or nothing: the stages get down
// to it, or the run of newest steps goes on past them, and the pass is
// made again over every step. One test a share, so that they run side by
// side.

#[tokio::test]
async fn a_horizon_too_near_is_passed_over_again_when_steps_hold_nothing() {
    passed_over_again(0.0, 1..=2).await;
}

#[tokio::test]
async fn a_horizon_too_near_is_passed_over_again_when_steps_hold_little() {
    passed_over_again(0.3, 3..=4).await;
}

#[tokio::test]
async fn a_horizon_too_near_is_passed_over_again_when_steps_hold_most() {
    passed_over_again(0.9, 5..=9).await;
}

async fn passed_over_again(share: f64, seeds: std::ops::RangeInclusive<u64>) {
    let (_, redone) = same_with_and_without_skipping(seeds, Some(share)).await;
    assert!(redone > 20, "{share}: {redone}");
}

/// A question's words and filler words.
const ASKED: [&str; 6] = [
    "parser", "billing", "invoice", "kernel", "cluster", "staging",
];
const FILLER: [&str; 6] = ["lorem", "ipsum", "dolor", "amet", "sed", "magna"];

/// Chat rounds that each share a few words with the question, then a
/// round of 150 steps with one long reply (`long` tokens) 6 steps before
/// its end: the drop stage's run of newest steps stops there, and the
/// earlier rounds fill what is left, by relevance and recency.
fn ranked_session(seed: u64, long: usize) -> Vec<Message> {
    let mut draw = Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut pick = |asked: usize, filler: usize| {
        let mut words: Vec<&str> = (0..asked).map(|_| ASKED[draw.below(6)]).collect();
        words.extend((0..filler).map(|_| FILLER[draw.below(6)]));
        words.join(" ")
    };
    let mut m = vec![Message::system("You are a coding agent.")];
    for k in 0..12 {
        m.push(Message::user(format!("{}?", pick(1 + k % 4, 20 + 3 * k))));
        m.push(Message::assistant(pick(k % 3, 20 + 2 * k)));
    }
    m.push(Message::user(format!("Fix the {}.", ASKED.join(" "))));
    for step in 0..150 {
        if step == 144 {
            m.push(Message::assistant("x".repeat(long * 4)));
            continue;
        }
        let id = format!("c{step}");
        m.push(Message::assistant_with_tools(
            "ok",
            vec![ToolCall::new(&id, "read", "{}")],
        ));
        m.push(Message::tool_result(&id, "y".repeat(40 + 5 * (step % 16))));
    }
    m
}

#[tokio::test]
async fn earlier_rounds_rank_as_in_a_pass_over_every_step() {
    let skips = Arc::new(SkipCounts::default());
    for weight in [0.02, 0.2, 1.0] {
        for seed in 1..=8u64 {
            for long in [300, 700] {
                let m = ranked_session(seed, long);
                let counts = count_messages(&CharTokenCounter, &m).await.unwrap();
                let history = History::new(&m, &counts).unwrap();
                for budget in [800, 1_200, 1_600] {
                    let budget = Budget::tokens(budget);
                    let weighted = Thrift::new().with_recency_weight(weight);
                    let thrift = counted(forgetful(weighted), &skips, None);
                    let want = traced(&thrift, &history, &budget, false).await;
                    let got = traced(&thrift, &history, &budget, true).await;
                    let at = format!("weight {weight}, seed {seed}, long {long}, {budget:?}");
                    assert_eq!(got.0, want.0, "{at}");
                }
            }
        }
    }
    assert!(skips.kept.load(Ordering::Relaxed) > 100);
}

#[tokio::test]
async fn a_long_round_that_changes_is_read_again_where_it_changed() {
    let skips = Arc::new(SkipCounts::default());
    for seed in [2u64, 5] {
        let m = session(seed, 200, true);
        // A step near the end and its output written again (other words,
        // other counts): the memo forgets from there on. Whether that
        // step is shown depends on the budget; the shrink cache's own
        // forgetting is checked in `shrink_cache`'s unit tests, which fail when
        // it keeps what it made.
        let mut edited = m.clone();
        let middle = (0..m.len() - 12)
            .rev()
            .find(|&i| {
                matches!(&m[i], Message::Assistant { reasoning: Some(_), tool_calls, .. }
                    if !tool_calls.is_empty())
            })
            .unwrap();
        if let Message::Assistant {
            content, reasoning, ..
        } = &mut edited[middle]
        {
            *content = "Reading it again.".into();
            *reasoning = Some("a shorter thought".into());
        }
        if let Message::ToolResult { content, .. } = &mut edited[middle + 1] {
            *content = "other output\n".repeat(400);
        }
        let shorter = &m[..m.len() * 3 / 4];
        for budget in [600, 2_000] {
            let budget = Budget::tokens(budget);
            let kept = counted(Thrift::new(), &skips, None);
            let fresh = counted(forgetful(Thrift::new()), &skips, None);
            for (k, history) in [&m[..], &edited[..], shorter, &m[..]]
                .into_iter()
                .enumerate()
            {
                let counts = count_messages(&CharTokenCounter, history).await.unwrap();
                let history = History::new(history, &counts).unwrap();
                let want = traced(&fresh, &history, &budget, false).await;
                let got = traced(&kept, &history, &budget, true).await;
                assert_eq!(got.0, want.0, "seed {seed}, {budget:?}, history {k}");
            }
        }
    }
    assert!(skips.kept.load(Ordering::Relaxed) > 8);
}

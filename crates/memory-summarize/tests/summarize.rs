//! `SummarizeStrategy` through a `WindowMemory`: what is summarized, what is
//! kept, what each call carries, and how every kind of bad reply leaves the
//! history as it was.
//!
//! With `CharTokenCounter`, "Question from round N" is 6 tokens and "Answer
//! from round N" 5: 11 a round, 44 for four rounds. A summary message is the
//! prefix "Summary of prior context:\n" (26 characters) and its body, so a
//! body of up to 6 characters makes an 8-token summary. The summary cap
//! holds the whole message: a cap of 11 leaves 4 tokens for the body.

use std::sync::Arc;

use memory_core::{
    Budget, CharTokenCounter, ChatResponse, ContentBlock, FakeProvider, FakeReply, History, Memory,
    Message, ModelOptions, ProviderError, StopReason, ToolCall, TrimStrategy, Usage,
    count_messages, structure, summary, validate,
};
use memory_session::WindowMemory;
use memory_summarize::{DEFAULT_SUMMARIZE_PROMPT, ExtractiveSummarizer, SummarizeStrategy};

async fn record_rounds(memory: &mut WindowMemory, from: usize, to: usize) {
    for i in from..=to {
        memory
            .record(Message::user(format!("Question from round {i}")))
            .await
            .unwrap();
        memory
            .record(Message::assistant(format!("Answer from round {i}")))
            .await
            .unwrap();
    }
}

fn round(i: usize) -> [Message; 2] {
    [
        Message::user(format!("Question from round {i}")),
        Message::assistant(format!("Answer from round {i}")),
    ]
}

fn fake(replies: impl IntoIterator<Item = FakeReply>) -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new(replies))
}

fn text(reply: &str) -> FakeReply {
    FakeReply::Text(reply.into())
}

/// The transcript sent in call `call`.
fn sent(provider: &FakeProvider, call: usize) -> String {
    let request = &provider.requests()[call];
    let Message::User(blocks) = &request.messages[1] else {
        panic!("the transcript goes in a user message");
    };
    let [ContentBlock::Text(text)] = blocks.as_slice() else {
        panic!("the transcript is one text block");
    };
    text.clone()
}

/// A memory with the task off: most tests here are about which rounds are
/// summarized, the first one included.
fn memory(budget: usize, strategy: SummarizeStrategy) -> WindowMemory {
    tasked(budget, strategy).with_task(false)
}

/// A memory that keeps the task (the default), without the index of what
/// its context leaves out (these tests measure the room the budget leaves
/// the strategy).
fn tasked(budget: usize, strategy: SummarizeStrategy) -> WindowMemory {
    WindowMemory::new(budget)
        .with_strategy(strategy)
        .with_index(None)
}

#[tokio::test]
async fn older_rounds_become_one_summary_and_the_newest_round_stays() {
    let model = fake([text("Key points from earlier rounds")]);
    let mut memory = memory(30, SummarizeStrategy::new(model.clone()));
    record_rounds(&mut memory, 1, 4).await;

    let context = memory.context().await.unwrap();
    let mut expected = vec![summary::message("Key points from earlier rounds")];
    expected.extend(round(4));
    assert_eq!(context, expected);

    // One call: the prompt, then the transcript of rounds 1-3 only.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].messages[0],
        Message::system(DEFAULT_SUMMARIZE_PROMPT)
    );
    let transcript = sent(&model, 0);
    for i in 1..=3 {
        assert!(transcript.contains(&format!("user: Question from round {i}")));
        assert!(transcript.contains(&format!("assistant: Answer from round {i}")));
    }
    assert!(!transcript.contains("round 4"));

    // Materialized: the store now holds the summary, so the next call
    // neither summarizes again nor changes anything.
    assert_eq!(memory.len(), 3);
    assert_eq!(memory.context().await.unwrap(), expected);
    assert_eq!(model.requests().len(), 1);
    // Nothing is lost: everything recorded stays readable.
    assert_eq!(memory.history().await.unwrap().len(), 8);
}

#[tokio::test]
async fn a_smaller_summary_cap_keeps_more_rounds() {
    // Budget 37 less the cap 11 leaves 26: rounds 4 and 3 (22) fit, round 2
    // (33) does not.
    let model = fake([text("Gist.")]);
    let mut memory = memory(
        37,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(11)
            .unwrap(),
    );
    record_rounds(&mut memory, 1, 4).await;

    let context = memory.context().await.unwrap();
    let mut expected = vec![summary::message("Gist.")];
    expected.extend(round(3));
    expected.extend(round(4));
    assert_eq!(context, expected);
    assert!(!sent(&model, 0).contains("round 3"));
}

#[tokio::test]
async fn options_and_headers_go_with_the_call_and_the_cap_sets_max_tokens() {
    let model = fake([text("Gist.")]);
    let mut options = ModelOptions {
        temperature: Some(0.2),
        max_tokens: Some(9_999),
        ..ModelOptions::default()
    };
    options.headers.insert("x-tenant".into(), "acme".into());
    options
        .extra
        .insert("seed".into(), serde_json::Value::from(7));
    // Budget 42, cap 11: rounds 3 and 4 stay (22 tokens), leaving 20, which
    // holds more than the cap: the cap less the summary's prefix (7) is sent.
    let mut memory = memory(
        42,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(11)
            .unwrap()
            .with_options(options),
    );
    record_rounds(&mut memory, 1, 4).await;
    memory.context().await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0].options;
    assert_eq!(
        sent.headers.get("x-tenant").map(String::as_str),
        Some("acme")
    );
    assert_eq!(sent.temperature, Some(0.2));
    assert_eq!(sent.extra["seed"], 7);
    assert_eq!(sent.max_tokens, Some(4));
}

#[tokio::test]
async fn the_cap_shrinks_to_the_room_the_budget_leaves() {
    // Default cap 1024, but round 4 (11 tokens) leaves 19 of 30, of which
    // the summary's prefix takes 7.
    let model = fake([text("Gist.")]);
    let mut memory = memory(30, SummarizeStrategy::new(model.clone()));
    record_rounds(&mut memory, 1, 4).await;
    memory.context().await.unwrap();
    assert_eq!(model.requests()[0].options.max_tokens, Some(12));
}

#[tokio::test]
async fn the_previous_summary_is_merged_into_the_next_one() {
    let model = fake([text("First."), text("Merged")]);
    let mut memory = memory(
        37,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(11)
            .unwrap(),
    );
    record_rounds(&mut memory, 1, 4).await;
    memory.context().await.unwrap(); // [summary, round 3, round 4]: 30 tokens

    record_rounds(&mut memory, 5, 6).await; // 52 tokens
    let context = memory.context().await.unwrap();
    let mut expected = vec![summary::message("Merged")];
    expected.extend(round(5));
    expected.extend(round(6));
    assert_eq!(context, expected);

    // The second call merges: the first summary, then rounds 3 and 4.
    assert_eq!(model.requests().len(), 2);
    let second = sent(&model, 1);
    assert!(second.starts_with("previous summary: First.\nuser: Question from round 3"));
    assert!(second.contains("Answer from round 4"));
    assert!(!second.contains("round 5"));
    // One summary only, never a summary of a summary.
    assert_eq!(context.iter().filter(|m| summary::is_summary(m)).count(), 1);
}

#[tokio::test]
async fn a_failed_call_shows_the_window_keeps_storage_and_retries_next_time() {
    let model = fake([
        FakeReply::Error(ProviderError::Network("connection reset".into())),
        text("Recovered."),
    ]);
    let mut memory = memory(30, SummarizeStrategy::new(model.clone()));
    record_rounds(&mut memory, 1, 4).await;

    let result = memory.trimmed().await.unwrap();
    let mut window = Vec::new();
    window.extend(round(3));
    window.extend(round(4));
    assert_eq!(result.messages, window);
    assert!(!result.replace);
    assert!(result.to_store().is_none());
    assert_eq!(memory.len(), 8, "storage unchanged");

    let context = memory.context().await.unwrap();
    assert_eq!(context[0], summary::message("Recovered."));
    assert_eq!(model.requests().len(), 2);
}

/// Every reply that must not become a summary (cut off, refused, failed,
/// empty, blank, another role, tool calls, an error): the window is shown,
/// storage is unchanged, and the next call tries again.
#[tokio::test]
async fn bad_replies_never_replace_history() {
    let stopped = |reason| {
        FakeReply::Response(ChatResponse {
            message: Message::assistant("The user asked for a parser and the"),
            usage: Usage {
                input_tokens: 40,
                output_tokens: 9,
            },
            stop_reason: reason,
        })
    };
    let from = |message| {
        FakeReply::Response(ChatResponse {
            message,
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
        })
    };
    let bad = [
        ("truncated", stopped(StopReason::Length)),
        ("refused", stopped(StopReason::Refusal)),
        ("errored", stopped(StopReason::Error)),
        ("empty", text("")),
        ("blank", text(" \n\t ")),
        ("not an assistant", from(Message::user("Summary: all good"))),
        (
            "tool calls",
            from(Message::assistant_with_tools(
                "Let me look first",
                vec![ToolCall::new("c1", "search", "{}")],
            )),
        ),
        (
            "failed",
            FakeReply::Error(ProviderError::Server {
                status: 503,
                message: "overloaded".into(),
            }),
        ),
    ];
    for (kind, reply) in bad {
        let model = fake([reply.clone(), reply]);
        let mut memory = memory(30, SummarizeStrategy::new(model.clone()));
        record_rounds(&mut memory, 1, 4).await;
        for attempt in 1..=2 {
            let result = memory.trimmed().await.unwrap();
            assert!(!result.replace, "{kind}: replaced history");
            assert!(result.to_store().is_none(), "{kind}: wrote back");
            assert_eq!(result.messages.len(), 4, "{kind}: not the window");
            assert!(
                !result.messages.iter().any(summary::is_summary),
                "{kind}: a summary was made"
            );
            assert_eq!(memory.len(), 8, "{kind}: storage changed");
            assert_eq!(model.requests().len(), attempt, "{kind}: not retried");
        }
    }
}

#[tokio::test]
async fn one_round_or_nothing_means_no_call() {
    let model = fake([text("unused")]);
    let mut memory = memory(5, SummarizeStrategy::new(model.clone()));
    memory
        .record(Message::user(
            "One very long question, far over the budget all by itself",
        ))
        .await
        .unwrap();
    memory.record(Message::assistant("A reply")).await.unwrap();
    let result = memory.trimmed().await.unwrap();
    assert_eq!(result.messages.len(), 2);
    assert!(!result.fits && !result.replace);

    let strategy = SummarizeStrategy::new(model.clone());
    let empty = strategy
        .trim(&[], &Budget::tokens(10), &CharTokenCounter)
        .await
        .unwrap();
    assert!(empty.messages.is_empty() && !empty.replace);
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn within_the_budget_nothing_happens() {
    let model = fake([]);
    let mut memory = memory(44, SummarizeStrategy::new(model.clone()));
    record_rounds(&mut memory, 1, 4).await;
    assert_eq!(memory.context().await.unwrap().len(), 8);
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn no_call_when_the_budget_leaves_no_room_for_a_summary() {
    // Round 4 is 11 tokens; in a budget of 15 a summary (8 tokens at least)
    // cannot fit beside it.
    let model = fake([text("unused")]);
    let mut memory = memory(15, SummarizeStrategy::new(model.clone()));
    record_rounds(&mut memory, 1, 4).await;
    assert_eq!(memory.context().await.unwrap(), round(4).to_vec());
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn protected_messages_stay_in_place_and_are_never_sent() {
    let model = fake([text("Gist.")]);
    let mut memory = memory(
        60,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(8)
            .unwrap(),
    );
    memory
        .record_protected(Message::system("Always answer in French."))
        .await
        .unwrap();
    record_rounds(&mut memory, 1, 2).await;
    memory
        .record_protected(Message::user("Remember: the deadline is Friday."))
        .await
        .unwrap();
    record_rounds(&mut memory, 3, 6).await;

    let context = memory.context().await.unwrap();
    assert_eq!(context[0], Message::system("Always answer in French."));
    assert_eq!(context[1], summary::message("Gist."));
    assert_eq!(
        context[2],
        Message::user("Remember: the deadline is Friday.")
    );
    assert_eq!(
        context.last(),
        Some(&Message::assistant("Answer from round 6"))
    );

    let transcript = sent(&model, 0);
    assert!(!transcript.contains("French"));
    assert!(!transcript.contains("deadline"));
    assert!(transcript.contains("Question from round 1"));
}

fn tool_step(i: usize) -> [Message; 2] {
    let id = format!("call_{i}");
    [
        Message::Assistant {
            content: String::new(),
            reasoning: Some(format!("private thought {i}")),
            tool_calls: vec![ToolCall::new(
                id.clone(),
                "read_file",
                format!(r#"{{"path":"src/part_{i}.rs"}}"#),
            )],
        },
        Message::tool_result(id, format!("fn part_{i}() {{ /* {i} lines */ }}")),
    ]
}

/// What the summarizer says of the older steps of the long round.
const PARTS_READ: &str = "Read src/part_1.rs to src/part_6.rs.";

#[tokio::test]
async fn one_long_agent_round_has_its_older_steps_summarized() {
    let model = fake([text(PARTS_READ)]);
    let mut memory = memory(
        107,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(27)
            .unwrap(),
    );
    memory
        .record(Message::user("Refactor every part of the parser."))
        .await
        .unwrap();
    for i in 1..=10 {
        for m in tool_step(i) {
            memory.record(m).await.unwrap();
        }
    }
    let result = memory.trimmed().await.unwrap();
    assert!(result.to_store().is_some() && result.fits);
    let context = result.messages;
    assert!(validate(&context).is_empty(), "tool pairing broken");
    assert_eq!(
        context[0],
        Message::user("Refactor every part of the parser.")
    );
    assert_eq!(summary::body(&context[1]), Some(PARTS_READ));
    assert!(
        summary::stands_for(&context[1]).is_some(),
        "names its originals"
    );
    // The newest steps, whole, end the context.
    let tail = &context[2..];
    assert!(tail.len() >= 2 && tail.len() % 2 == 0);
    assert_eq!(tail[tail.len() - 2..], tool_step(10));

    let transcript = sent(&model, 0);
    assert!(transcript.contains(r#"assistant called read_file {"path":"src/part_1.rs"}"#));
    assert!(transcript.contains("tool result (call_1): fn part_1()"));
    assert!(
        !transcript.contains("private thought"),
        "reasoning was sent"
    );
    assert!(
        !transcript.contains("Refactor every part"),
        "the question was sent"
    );
    assert!(!transcript.contains("part_10"), "a kept step was sent");
}

#[tokio::test]
async fn the_cut_never_separates_a_call_from_its_results() {
    let model = fake([text("Ran ls in /home/dev/app.")]);
    // 18 tokens a round, 72 in all: round 4 and the summary fit in 47.
    let mut memory = memory(
        47,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(17)
            .unwrap(),
    );
    for r in 1..=4 {
        memory
            .record(Message::user(format!("Task {r}")))
            .await
            .unwrap();
        let calls = vec![
            ToolCall::new(format!("a{r}"), "ls", "{}"),
            ToolCall::new(format!("b{r}"), "pwd", "{}"),
        ];
        memory
            .record(Message::assistant_with_tools("", calls))
            .await
            .unwrap();
        memory
            .record(Message::tool_result(format!("b{r}"), "/home/dev/app"))
            .await
            .unwrap();
        memory
            .record(Message::tool_result(format!("a{r}"), "Cargo.toml src"))
            .await
            .unwrap();
        memory
            .record(Message::assistant(format!("Task {r} is done.")))
            .await
            .unwrap();
    }
    let context = memory.context().await.unwrap();
    assert!(summary::is_summary(&context[0]));
    assert!(validate(&context).is_empty());
    let transcript = sent(&model, 0);
    assert!(transcript.contains("tool result (a1): Cargo.toml src"));
    assert!(transcript.contains("tool result (b1): /home/dev/app"));
}

#[tokio::test]
async fn a_large_history_is_summarized_in_chunks_folded_into_one_summary() {
    let model = fake((1..=20).map(|i| text(&format!("S{i}"))));
    let mut memory = memory(
        37,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(11)
            .unwrap()
            .with_prompt("Sum up.")
            .with_max_input_tokens(30),
    );
    record_rounds(&mut memory, 1, 8).await;
    let context = memory.context().await.unwrap();

    let calls = model.requests().len();
    assert!(calls >= 3, "only {calls} calls");
    let mut expected = vec![summary::message(format!("S{calls}"))];
    expected.extend(round(7));
    expected.extend(round(8));
    assert_eq!(context, expected);
    // Each later call folds the running summary in; every older round is
    // sent exactly once.
    for call in 1..calls {
        assert!(sent(&model, call).starts_with(&format!("previous summary: S{call}\n")));
    }
    let all: Vec<String> = (0..calls).map(|c| sent(&model, c)).collect();
    for i in 1..=6 {
        let question = format!("user: Question from round {i}");
        let times = all
            .iter()
            .flat_map(|t| t.lines())
            .filter(|l| *l == question)
            .count();
        assert_eq!(times, 1, "round {i} sent {times} times");
    }
    for transcript in &all {
        // Prompt and transcript within the input limit.
        assert!(
            2 + CharTokenCounter::estimate(transcript) <= 30,
            "{transcript}"
        );
    }
}

#[tokio::test]
async fn a_failed_chunk_fails_the_whole_summary() {
    let model = fake([text("S1"), FakeReply::Error(ProviderError::Timeout(30_000))]);
    let mut memory = memory(
        37,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(11)
            .unwrap()
            .with_prompt("Sum up.")
            .with_max_input_tokens(30),
    );
    record_rounds(&mut memory, 1, 8).await;
    let result = memory.trimmed().await.unwrap();
    assert!(!result.replace && result.to_store().is_none());
    assert!(!result.messages.iter().any(summary::is_summary));
    assert_eq!(memory.len(), 16);
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn a_summary_over_its_cap_or_no_shorter_than_what_it_covers_is_rejected() {
    // Cap 11 keeps rounds 3 and 4 (22 tokens) of a budget of 37; the model
    // ignores its cap and writes a 16-token summary message: rejected, the
    // window shown, nothing stored.
    let model = fake([text("Highlights of rounds 1 and 2, and more")]);
    let mut memory = memory(
        37,
        SummarizeStrategy::new(model.clone())
            .with_summary_max_tokens(11)
            .unwrap(),
    );
    record_rounds(&mut memory, 1, 4).await;
    let result = memory.trimmed().await.unwrap();
    assert!(!result.replace && result.to_store().is_none());
    assert!(!result.messages.iter().any(summary::is_summary));
    assert!(result.fits);
    assert_eq!(memory.len(), 8);

    // Within the default cap, but as long as the three rounds it covers
    // (33 tokens): rejected too.
    let long = format!("Rounds 1 to 3: {}", "q".repeat(90));
    let model = fake([text(&long)]);
    let mut long_memory =
        WindowMemory::new(30).with_strategy(SummarizeStrategy::new(model.clone()));
    record_rounds(&mut long_memory, 1, 4).await;
    let result = long_memory.trimmed().await.unwrap();
    assert!(!result.replace && result.to_store().is_none());
    assert!(!result.messages.iter().any(summary::is_summary));
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn the_extractive_summarizer_works_offline_and_deterministically() {
    async fn run() -> Vec<Message> {
        // 72 tokens in a budget of 70: rounds 1-5 are summarized.
        let mut memory = memory(
            70,
            SummarizeStrategy::new(ExtractiveSummarizer::new())
                .with_summary_max_tokens(60)
                .unwrap(),
        );
        let turns = [
            (
                "Set up the crate in crates/csv-lite",
                "Created crates/csv-lite/Cargo.toml.",
            ),
            (
                "Which delimiter?",
                "We decided to use ';' because of German locales.",
            ),
            (
                "Parse quoted fields",
                "Done in src/parse.rs, 14 tests pass.",
            ),
            ("hello", "hi"),
            ("Add a writer", "Writer added in src/write.rs."),
            ("Benchmark it", "1.2 GB/s on the 100 MB file."),
        ];
        for (q, a) in turns {
            memory.record(Message::user(q)).await.unwrap();
            memory.record(Message::assistant(a)).await.unwrap();
        }
        memory.context().await.unwrap()
    }
    let first = run().await;
    assert_eq!(first, run().await);
    let body = summary::body(&first[0]).expect("a summary first");
    assert!(body.starts_with("Extractive summary (no model):"), "{body}");
    assert!(body.contains("crates/csv-lite"), "{body}");
    assert!(body.contains("src/parse.rs, 14 tests"), "{body}");
    assert_eq!(
        first.last(),
        Some(&Message::assistant("1.2 GB/s on the 100 MB file."))
    );
}

#[tokio::test]
async fn a_rounds_budget_summarizes_the_rounds_beyond_it() {
    let model = fake([text("Rounds 1-2.")]);
    let strategy = SummarizeStrategy::new(model.clone());
    let messages: Vec<Message> = (1..=4).flat_map(round).collect();
    let counts = count_messages(&CharTokenCounter, &messages).await.unwrap();
    // The task off: round 1 is summarized with round 2.
    let history = History::new(&messages, &counts).unwrap().forget_task();
    let result = strategy
        .trim_with_counts(&history, &Budget::rounds(2), &CharTokenCounter)
        .await
        .unwrap();
    assert!(result.replace);
    assert_eq!(summary::body(&result.messages[0]), Some("Rounds 1-2."));
    let originals = summary::stands_for(&result.messages[0]).expect("names its originals");
    assert_eq!(originals.find(&messages), Some(0..4));
    assert_eq!(result.messages[1..], messages[4..]);
    // The default cap less the summary's prefix (7).
    assert_eq!(model.requests()[0].options.max_tokens, Some(1017));
}

#[tokio::test]
async fn a_reply_that_says_nothing_about_the_history_is_rejected() {
    let chatter = "I'm ready to assist with any code you'd like me to work on.";
    let model = fake([
        text(chatter),
        text("Parser: src/parse.rs handles ';' and quotes."),
    ]);
    let mut memory = memory(40, SummarizeStrategy::new(model.clone()));
    let turns = [
        (
            "Port the parser to src/parse.rs",
            "Ported; parse_field handles quotes.",
        ),
        (
            "Use ';' as the delimiter",
            "Changed DELIMITER in src/parse.rs to ';'.",
        ),
        ("Run the tests", "cargo test: 14 passed."),
    ];
    for (q, a) in turns {
        memory.record(Message::user(q)).await.unwrap();
        memory.record(Message::assistant(a)).await.unwrap();
    }
    let result = memory.trimmed().await.unwrap();
    assert!(!result.replace && result.to_store().is_none());
    assert!(!result.messages.iter().any(summary::is_summary));
    assert_eq!(memory.len(), 6);
    // The next call over budget asks again, and a grounded reply lands.
    let context = memory.context().await.unwrap();
    assert!(summary::is_summary(&context[0]), "{context:?}");
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn the_task_stays_verbatim_and_is_never_sent() {
    // Floor: the task 6 + round 4 11 = 17 of 30; the summary ("Gist.", 8
    // tokens) takes the place of the rest of rounds 1-3.
    let model = fake([text("Gist.")]);
    let mut memory = tasked(30, SummarizeStrategy::new(model.clone()));
    record_rounds(&mut memory, 1, 4).await;
    let result = memory.trimmed().await.unwrap();
    assert!(result.to_store().is_some() && result.fits);
    let mut expected = vec![
        Message::user("Question from round 1"),
        summary::message("Gist."),
    ];
    expected.extend(round(4));
    assert_eq!(result.messages, expected);
    assert_eq!(result.protected, vec![0, 1], "the task and the summary");
    let transcript = sent(&model, 0);
    assert!(
        !transcript.contains("Question from round 1"),
        "the task was sent"
    );
    assert!(transcript.contains("Answer from round 1"));
    // Stored so: the next call changes nothing and makes no call.
    assert_eq!(memory.context().await.unwrap(), expected);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_failed_summarizer_falls_back_to_the_task_and_the_newest_history_that_fits() {
    // A text-only agent: the task, then actions whose observations arrive
    // as user messages, and a follow-up that starts a new round.
    let task = format!(
        "Fix the failing test in src/parse.rs. {}",
        "The tokenizer drops a trailing comma. ".repeat(6)
    );
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user(&task),
    ];
    for i in 0..12 {
        messages.push(Message::assistant(format!("Running check {i}.")));
        messages.push(Message::user(format!("Observation {i}: 3 tests pass.")));
    }
    messages.push(Message::user("Please continue working on the task"));
    let budget = 120;
    let model = fake([FakeReply::Error(ProviderError::Server {
        status: 500,
        message: "internal error".into(),
    })]);
    let mut memory = tasked(budget, SummarizeStrategy::new(model.clone()));
    memory.record_protected(messages[0].clone()).await.unwrap();
    for m in &messages[1..] {
        memory.record(m.clone()).await.unwrap();
    }
    let result = memory.trimmed().await.unwrap();
    assert_eq!(model.requests().len(), 1, "the summarizer was tried");
    assert!(!result.replace && result.to_store().is_none());
    assert!(result.fits);
    assert_eq!(
        result.messages[..2],
        messages[..2],
        "the prompt and the task"
    );
    assert_eq!(result.messages.last(), messages.last());
    // The budget it has: the newest rounds after the task, as many as fit,
    // and not one more.
    let shown = result.tokens();
    assert!(shown <= budget);
    let tail = &result.messages[2..];
    let from = messages.len() - tail.len();
    assert_eq!(tail, &messages[from..], "a suffix of the history");
    assert!(from > 3, "the history reaches back to the task");
    let older = structure::round_start(&messages, from);
    let next: usize = count_messages(&CharTokenCounter, &messages[older..from])
        .await
        .unwrap()
        .iter()
        .sum();
    assert!(shown + next > budget, "room for more was left unused");
}

/// The summary names the rounds it stands for, the earlier summary's
/// included once it is folded again: one recall of its handle brings back
/// every recorded round from the first to the last it folded, exactly (no
/// further than the first round shown after it: between two summaries,
/// the fit may shed the oldest verbatim rounds from view).
#[tokio::test]
async fn a_summary_names_the_rounds_it_stands_for_and_recall_brings_them_back() {
    use memory_core::recall::RecallRequest;
    let model = fake((1..=8).map(|k| {
        text(&format!(
            "Summary {k}: each Question from round N had its Answer from round N."
        ))
    }));
    let mut memory = memory(120, SummarizeStrategy::new(model.clone()));
    let recorded: Vec<Message> = (1..=30).flat_map(round).collect();
    let mut folded: Vec<usize> = Vec::new();
    for k in 1..=30 {
        record_rounds(&mut memory, k, k).await;
        let context = memory.context().await.unwrap();
        let Some(handle) = context.first().and_then(summary::stands_for) else {
            continue;
        };
        let shown = recorded
            .iter()
            .position(|m| *m == context[1])
            .expect("a recorded message after the summary");
        let back = memory
            .recall(&RecallRequest::new(handle.to_string()))
            .await
            .unwrap()
            .messages;
        assert!(!back.is_empty() && back.len() <= shown, "after round {k}");
        assert_eq!(back, recorded[..back.len()], "after round {k}");
        if folded.last() != Some(&back.len()) {
            folded.push(back.len());
        }
    }
    assert!(
        folded.len() >= 2 && folded.windows(2).all(|w| w[0] < w[1]),
        "summaries, each standing for more: {folded:?}"
    );
}

#[tokio::test]
async fn a_summary_too_large_beside_a_huge_newest_step_is_replaced_by_a_smaller_one() {
    // The prompt (protected) is 240 tokens of a budget of 400: half the
    // room it leaves is 80. A summary made earlier holds 130 tokens; then
    // a text-only agent's newest observation alone is 2,000 tokens.
    let model = fake([text(
        "Earlier work: read a file; answered round 1 and round 2.",
    )]);
    let mut memory = tasked(400, SummarizeStrategy::new(model.clone())).with_task(false);
    let prompt = format!(
        "You are a coding agent. {}",
        "Keep to the rules. ".repeat(49)
    );
    memory
        .record_protected(Message::system(prompt))
        .await
        .unwrap();
    let earlier = summary::message(format!("Earlier work: {}", "read a file. ".repeat(39)));
    memory.record(earlier.clone()).await.unwrap();
    record_rounds(&mut memory, 1, 2).await;
    let command = "<function=bash>\n<parameter=command>cat big.log</parameter>\n</function>";
    memory.record(Message::assistant(command)).await.unwrap();
    let output = "line of the build log\n".repeat(360);
    memory
        .record(Message::user(format!("OBSERVATION:\n{output}")))
        .await
        .unwrap();
    assert!(tokens_of(&earlier).await > 80);

    let result = memory.fitted().await.unwrap();
    // One call, for at most the 80 tokens less the summary's framing; the
    // context fits, the earlier summary replaced by the new one, the
    // observation cut beside it.
    assert_eq!(model.requests().len(), 1);
    assert!(model.requests()[0].options.max_tokens.unwrap() < 80);
    assert!(result.fits && result.tokens <= 400, "{}", result.tokens);
    assert!(validate(&result.messages).is_empty());
    let summaries: Vec<&Message> = (result.messages.iter())
        .filter(|m| summary::is_summary(m))
        .collect();
    assert_eq!(summaries.len(), 1);
    assert!(
        summary::body(summaries[0])
            .unwrap()
            .contains("answered round 1")
    );
    assert!(tokens_of(summaries[0]).await <= 80);
    let last = result.messages.last().unwrap();
    assert!(
        last.text()
            .starts_with("OBSERVATION:\nline of the build log")
    );
    assert!(last.text().len() < output.len());
    // Stored in its place: the next call keeps the smaller summary.
    let view = memory.view().await.unwrap();
    assert!(view.iter().any(|s| &s.message == summaries[0]));
    assert!(!view.iter().any(|s| s.message == earlier));
}

/// Tokens of `message` by the character estimate.
async fn tokens_of(message: &Message) -> usize {
    count_messages(&CharTokenCounter, std::slice::from_ref(message))
        .await
        .unwrap()[0]
}

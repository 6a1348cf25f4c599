//! Thrift's behaviour, stage by stage, and the promises it keeps.

use memory_core::recall::{Handle, RecallRequest, resolve};
use memory_core::test_util::PricedImages;
use memory_core::{
    Budget, CharTokenCounter, ContentBlock, History, ImageContent, Message, TokenCounter, ToolCall,
    TrimResult, TrimStrategy, count_messages, structure, summary, validate,
};
use memory_thrift::{Thrift, ThriftTrace, cut, placeholder, relevance};

// ---------------------------------------------------------------- helpers

/// Trims `messages` (with `protected` indices) and returns the result and
/// the trace.
async fn trim(
    thrift: &Thrift,
    messages: &[Message],
    protected: &[usize],
    budget: Budget,
) -> (TrimResult, ThriftTrace) {
    trim_counted(thrift, messages, protected, budget, &CharTokenCounter).await
}

async fn trim_counted(
    thrift: &Thrift,
    messages: &[Message],
    protected: &[usize],
    budget: Budget,
    counter: &dyn TokenCounter,
) -> (TrimResult, ThriftTrace) {
    trim_task(thrift, messages, protected, budget, counter, true).await
}

/// Like [`trim_counted`], the task protected (the default) or forgotten
/// (`keep_task: false`, for tests about what goes first, where the first
/// round may go like any other).
async fn trim_task(
    thrift: &Thrift,
    messages: &[Message],
    protected: &[usize],
    budget: Budget,
    counter: &dyn TokenCounter,
    keep_task: bool,
) -> (TrimResult, ThriftTrace) {
    let counts = count_messages(counter, messages).await.unwrap();
    let mut history = History::new(messages, &counts).unwrap();
    if !keep_task {
        history = history.forget_task();
    }
    let history = history.protect(protected);
    thrift
        .trim_traced(&history, &budget, counter)
        .await
        .unwrap()
}

/// Trims the result again, with its own counts and protection, and checks
/// that nothing changes, byte for byte (`at` says where, on failure);
/// returns the second result.
async fn trims_to_itself(
    thrift: &Thrift,
    result: &TrimResult,
    budget: Budget,
    at: &str,
) -> TrimResult {
    let history = result.as_history().unwrap();
    let second = thrift
        .trim_with_counts(&history, &budget, &CharTokenCounter)
        .await
        .unwrap();
    assert_eq!(bytes(&second.messages), bytes(&result.messages), "{at}");
    second
}

fn bytes(messages: &[Message]) -> Vec<u8> {
    serde_json::to_vec(messages).unwrap()
}

fn call(id: &str, name: &str) -> Message {
    Message::assistant_with_tools("", vec![ToolCall::new(id, name, "{}")])
}

fn thinking(content: &str, reasoning: &str, calls: Vec<ToolCall>) -> Message {
    Message::Assistant {
        content: content.into(),
        reasoning: Some(reasoning.into()),
        tool_calls: calls,
    }
}

/// A long tool output whose lines are numbered.
fn output(lines: usize) -> String {
    (1..=lines)
        .map(|i| format!("output line {i:04}\n"))
        .collect()
}

/// An agent task: a protected system prompt, one request, and `steps` tool
/// steps whose results hold `lines` numbered lines each.
fn agent_task(steps: usize, lines: usize) -> Vec<Message> {
    let mut m = vec![
        Message::system("You are a coding agent."),
        Message::user("Find why the parser rejects empty input."),
    ];
    for s in 0..steps {
        let id = format!("c{s}");
        m.push(call(&id, "read_file"));
        m.push(Message::tool_result(id, output(lines)));
    }
    m
}

// ------------------------------------------------------- fitting histories

#[tokio::test]
async fn a_history_within_the_budget_comes_back_byte_for_byte() {
    let m = agent_task(5, 20);
    let budget = Budget::tokens(total_of(&m).await);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert_eq!(bytes(&result.messages), bytes(&m));
    assert!(result.fits && !result.replace);
    assert_eq!(trace.saved(), 0);
    assert!(trace.stages().iter().all(|(_, s)| !s.changed()));
    assert_eq!(trace.target, None);
}

async fn total_of(messages: &[Message]) -> usize {
    count_messages(&CharTokenCounter, messages)
        .await
        .unwrap()
        .iter()
        .sum()
}

// ---------------------------------------------------------- stage 1

#[tokio::test]
async fn reasoning_of_earlier_steps_goes_first_and_the_newest_keeps_its_own() {
    let long = "I should look at the parser module first. ".repeat(10);
    let m = vec![
        Message::user("Fix the parser."),
        thinking("", &long, vec![ToolCall::new("a", "read", "{}")]),
        Message::tool_result("a", output(30)),
        thinking("", &long, vec![ToolCall::new("b", "read", "{}")]),
        Message::tool_result("b", output(30)),
        thinking("Done.", &long, vec![]),
    ];
    let full = total_of(&m).await;
    // Room for everything but about one reasoning block.
    let (result, trace) = trim(&Thrift::new(), &m, &[], Budget::tokens(full - 50)).await;
    assert!(result.fits);
    assert_eq!(result.messages.len(), m.len());
    // The oldest reasoning went (and, the watermark asking for a margin,
    // the next one too), a placeholder with its handle in its stead that
    // brings it back whole; the newest step's stays.
    let Message::Assistant {
        reasoning: Some(placeholder),
        ..
    } = &result.messages[1]
    else {
        panic!("an assistant step: {:?}", result.messages[1]);
    };
    assert!(placeholder.starts_with("[reasoning omitted: ") && placeholder.len() < long.len());
    let handles = Handle::all_in(placeholder);
    assert_eq!(handles, vec![Handle::of(&m[1..2])]);
    let request = RecallRequest::new(handles[0].to_string());
    let recalled = resolve(&m, &request, &CharTokenCounter).await.unwrap();
    assert_eq!(recalled.messages, m[1..2]);
    assert_eq!(result.messages[5], m[5]);
    assert!(trace.reasoning.shed() >= 1);
    // Nothing else was touched.
    for (k, shed) in trace.stages().iter().skip(1) {
        assert!(!shed.changed(), "{k} changed: {shed:?}");
    }
    assert_eq!(result.messages[2], m[2]);
    assert_eq!(result.messages[4], m[4]);
}

// ---------------------------------------------------------- stage 2

#[tokio::test]
async fn long_tool_outputs_are_cut_head_and_tail_with_a_marker() {
    let m = vec![
        Message::user("Read both logs."),
        call("a", "read"),
        Message::tool_result("a", output(200)), // ~1000 tokens
        call("b", "read"),
        Message::tool_result("b", output(5)),
        Message::assistant("Both read."),
    ];
    let thrift = Thrift::new().with_max_tool_output_tokens(100);
    let full = total_of(&m).await;
    let (result, trace) = trim(&thrift, &m, &[], Budget::tokens(full - 300)).await;
    assert!(result.fits);
    assert_eq!(trace.tool_outputs_cut.shed(), 1);
    assert_eq!(trace.tool_results_replaced.shed(), 0);
    let Message::ToolResult {
        tool_call_id,
        content,
        ..
    } = &result.messages[2]
    else {
        panic!("not a tool result: {:?}", result.messages[2]);
    };
    assert_eq!(tool_call_id, "a");
    assert!(content.starts_with("output line 0001\n"));
    assert!(content.ends_with("output line 0200\n"));
    assert!(cut::is_cut(content));
    assert_eq!(cut::original_len(content), output(200).chars().count());
    // About the configured size, counted again.
    assert!(result.counts[2] <= 115, "{}", result.counts[2]);
    // The cut is idempotent.
    assert_eq!(cut::cut_middle(content, 400), content.as_str());
}

// ---------------------------------------------------------- stage 3

#[tokio::test]
async fn earlier_results_become_placeholders_oldest_first_keeping_their_ids() {
    let m = agent_task(9, 40); // each result ~200 tokens; the newest 3 stay
    let full = total_of(&m).await;
    let (result, trace) = trim(&Thrift::new(), &m, &[0], Budget::tokens(full - 500)).await;
    assert!(result.fits);
    assert_eq!(result.messages.len(), m.len(), "nothing is dropped");
    let replaced: Vec<usize> = (0..m.len())
        .filter(|&i| result.messages[i] != m[i])
        .collect();
    // Oldest first: a prefix of the results.
    let results: Vec<usize> = (0..m.len()).filter(|&i| m[i].is_tool_result()).collect();
    assert_eq!(replaced, results[..replaced.len()].to_vec());
    assert_eq!(trace.tool_results_replaced.shed(), replaced.len());
    for &i in &replaced {
        assert_eq!(result.messages[i].tool_call_id(), m[i].tool_call_id());
        assert!(placeholder::is_placeholder(&result.messages[i].text()));
        // Its handle brings back exactly the result it stands in for.
        let handles = memory_core::recall::Handle::all_in(&result.messages[i].text());
        assert_eq!(handles.len(), 1);
        assert_eq!(handles[0].find(&m), Some(i..i + 1));
    }
    assert!(validate(&result.messages).is_empty());
}

#[tokio::test]
async fn the_newest_results_of_the_round_stay() {
    let m = agent_task(8, 40);
    // A budget nothing but dropping can meet: every replaceable result is.
    let (result, _) = trim(&Thrift::new(), &m, &[0], Budget::tokens(400)).await;
    let kept_results: Vec<&Message> = result
        .messages
        .iter()
        .filter(|x| x.is_tool_result())
        .collect();
    // The newest three results of the round are whole, if kept at all.
    for r in &kept_results {
        let original = m
            .iter()
            .find(|x| x.tool_call_id() == r.tool_call_id())
            .unwrap();
        let id: usize = r.tool_call_id().unwrap()[1..].parse().unwrap();
        if id >= 5 {
            assert_eq!(*r, original, "recent result c{id} was changed");
        } else {
            assert!(placeholder::is_placeholder(&r.text()), "c{id} kept whole");
        }
    }
    // The newest is the newest step's: always there.
    assert_eq!(result.messages.last(), m.last());

    // With none kept by choice, the newest still is.
    let thrift = Thrift::new().with_keep_recent_results(0);
    let (result, _) = trim(&thrift, &m, &[0], Budget::tokens(400)).await;
    assert_eq!(result.messages.last(), m.last());
}

// ---------------------------------------------------------- stage 4

/// Prices each image at 300 tokens, text as [`CharTokenCounter`] does.
const PRICED_IMAGES: PricedImages = PricedImages(300);

#[tokio::test]
async fn media_is_replaced_by_placeholders_when_it_costs_tokens() {
    let image = ContentBlock::Image(ImageContent::new("image/png", vec![7; 4096]));
    let wire = ContentBlock::Wire(serde_json::json!({"type": "input_audio", "data": "..."}));
    let m = vec![
        Message::user_blocks(vec![
            ContentBlock::Text("What is in this picture?".into()),
            image.clone(),
        ]),
        Message::assistant("A cat."),
        Message::user_blocks(vec![ContentBlock::Text("And this recording?".into()), wire]),
        Message::assistant("A dog barking."),
        Message::user_blocks(vec![
            ContentBlock::Text("Compare them with this one.".into()),
            image,
        ]),
    ];
    let full: usize = count_messages(&PRICED_IMAGES, &m)
        .await
        .unwrap()
        .iter()
        .sum();
    // The first image is in the task, which would stay verbatim.
    let (result, trace) = trim_task(
        &Thrift::new(),
        &m,
        &[],
        Budget::tokens(full - 400),
        &PRICED_IMAGES,
        false,
    )
    .await;
    assert!(result.fits);
    assert_eq!(result.messages.len(), m.len(), "nothing is dropped");
    assert_eq!(trace.media_replaced.shed(), 2);
    let Message::User(first) = &result.messages[0] else {
        panic!()
    };
    assert_eq!(
        first[1],
        ContentBlock::Text(format!(
            "[image omitted: image/png, 4096 bytes; recall {}]",
            memory_core::recall::Handle::of(&m[0..1])
        ))
    );
    let Message::User(second) = &result.messages[2] else {
        panic!()
    };
    assert_eq!(
        second[1],
        ContentBlock::Text(format!(
            "[attachment omitted: input_audio; recall {}]",
            memory_core::recall::Handle::of(&m[2..3])
        ))
    );
    // The current question keeps its image.
    assert_eq!(result.messages[4], m[4]);
    // Counts of the changed messages come from the counter given.
    let truth = count_messages(&PRICED_IMAGES, &result.messages)
        .await
        .unwrap();
    assert_eq!(result.counts, truth);

    // Under a counter that prices images at nothing, a placeholder would
    // only cost more: they stay.
    let (result, trace) = trim(&Thrift::new(), &m, &[], Budget::tokens(20)).await;
    assert_eq!(trace.media_replaced.shed(), 0);
    assert!(result.messages.iter().all(|x| {
        match x {
            Message::User(b) => b
                .iter()
                .all(|b| !b.as_text().is_some_and(placeholder::is_placeholder)),
            _ => true,
        }
    }));
}

// ---------------------------------------------------------- stage 5

fn chat(rounds: &[(&str, &str)], question: &str) -> Vec<Message> {
    let mut m = vec![Message::system("You are a helpful assistant.")];
    for (q, a) in rounds {
        m.push(Message::user(*q));
        m.push(Message::assistant(*a));
    }
    m.push(Message::user(question));
    m
}

#[tokio::test]
async fn a_rare_word_of_the_question_brings_back_an_old_round() {
    let evidence = (
        "How should we size the Postgres connection pool?",
        "Run pgbouncer in front of Postgres with a pool of 20 connections.",
    );
    let chatter = [
        (
            "What do you think about the weather again?",
            "I think it is sunny, what a day.",
        ),
        (
            "What do you think about lunch again?",
            "I think soup, what do you think?",
        ),
        (
            "What do you think about the match again?",
            "I think it was close, what a game.",
        ),
        (
            "What do you think about my plan again?",
            "I think it is sound, what else?",
        ),
    ];
    let mut rounds = vec![evidence];
    rounds.extend(chatter);
    let question = "What do you think, how big was the postgres pool again?";
    let m = chat(&rounds, question);
    // The plain word-overlap baseline prefers the chatter.
    let round_text = |k: usize| format!("{} {}", m[1 + 2 * k].text(), m[2 + 2 * k].text());
    let plain: Vec<f64> = (0..5)
        .map(|k| relevance::overlap(question, &round_text(k)))
        .collect();
    assert!(plain[1..].iter().all(|&s| s > plain[0]), "{plain:?}");

    // Room for the floor and about one more round.
    let floor = total_of(&[m[0].clone(), m[m.len() - 1].clone()]).await;
    let one_round = total_of(&m[1..3]).await;
    let budget = Budget::tokens(floor + one_round + one_round / 2);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(result.fits);
    assert_eq!(result.messages[0], m[0]);
    assert_eq!(result.messages[1], m[1], "the Postgres round is kept");
    assert_eq!(result.messages[2], m[2]);
    assert_eq!(result.messages.last(), m.last());
    assert!(trace.rounds_dropped.shed() >= 3);
}

#[tokio::test]
async fn without_relevance_the_oldest_rounds_go_first() {
    let rounds: Vec<(String, String)> = (0..8)
        .map(|i| (format!("q{i}"), format!("a{i} {}", "x ".repeat(20))))
        .collect();
    let refs: Vec<(&str, &str)> = rounds
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let m = chat(&refs, "ok?");
    let full = total_of(&m).await;
    // The task forgotten: the first round goes like any other.
    let (result, trace) = trim_task(
        &Thrift::new(),
        &m,
        &[0],
        Budget::tokens(full / 2),
        &CharTokenCounter,
        false,
    )
    .await;
    assert!(result.fits);
    // A suffix of the rounds is kept, whole.
    let kept = (result.messages.len() - 2) / 2;
    assert!(kept >= 2, "{kept}");
    assert_eq!(result.messages[1..], m[m.len() - 1 - 2 * kept..]);
    assert_eq!(trace.rounds_dropped.shed(), 8 - kept);
}

#[tokio::test]
async fn inside_one_long_round_older_steps_are_dropped_whole() {
    let mut m = vec![Message::user("Refactor the lexer.")];
    for s in 0..12 {
        let ids: Vec<ToolCall> = (0..3)
            .map(|k| ToolCall::new(format!("s{s}k{k}"), "grep", "{}"))
            .collect();
        m.push(Message::assistant_with_tools("", ids));
        for k in (0..3).rev() {
            m.push(Message::tool_result(
                format!("s{s}k{k}"),
                format!("hit {s}.{k}"),
            ));
        }
    }
    m.push(Message::assistant("The lexer is refactored."));
    let full = total_of(&m).await;
    let (result, trace) = trim(&Thrift::new(), &m, &[], Budget::tokens(full / 3)).await;
    assert!(result.fits);
    assert!(validate(&result.messages).is_empty());
    assert_eq!(result.messages[0], m[0]);
    assert_eq!(result.messages.last(), m.last());
    assert!(trace.steps_dropped.shed() > 0);
    assert_eq!(trace.rounds_dropped.before.count, 0);
    // Every parallel call that is kept has all three results right after it.
    for (i, x) in result.messages.iter().enumerate() {
        if !x.tool_calls().is_empty() {
            assert!(
                result.messages[i + 1..i + 4]
                    .iter()
                    .all(Message::is_tool_result)
            );
        }
    }
}

#[tokio::test]
async fn a_rounds_limit_keeps_the_most_relevant_rounds() {
    let m = chat(
        &[
            (
                "Tell me about sourdough starters.",
                "Feed the starter daily.",
            ),
            ("Tell me about tides.", "The moon drives them."),
            ("Tell me about compilers.", "They translate programs."),
        ],
        "Back to sourdough: how often should I feed it?",
    );
    let (result, trace) = trim(&Thrift::new(), &m, &[0], Budget::rounds(2)).await;
    assert_eq!(result.messages.iter().filter(|x| x.is_user()).count(), 2);
    assert_eq!(result.messages[1], m[1]);
    assert_eq!(trace.rounds_dropped.shed(), 2);
    assert!(result.fits);
}

// ------------------------------------------------------------ the order

#[tokio::test]
async fn each_stage_starts_only_once_the_earlier_ones_are_spent() {
    let mut m = vec![
        Message::system("Be careful."),
        Message::user_blocks(vec![
            ContentBlock::Text("Here is a screenshot.".into()),
            ContentBlock::Image(ImageContent::new("image/png", vec![1; 64])),
        ]),
        Message::assistant("Seen."),
    ];
    for round in 0..3 {
        m.push(Message::user(format!("Task {round}: check the build.")));
        for s in 0..4 {
            let id = format!("r{round}s{s}");
            m.push(thinking(
                "",
                &"hmm, let me check. ".repeat(8),
                vec![ToolCall::new(&id, "sh", "{}")],
            ));
            m.push(Message::tool_result(
                id,
                output(if s == 0 { 120 } else { 12 }),
            ));
        }
        m.push(Message::assistant(format!("Task {round} done.")));
    }
    let thrift = Thrift::new().with_max_tool_output_tokens(100);
    let counts = count_messages(&PRICED_IMAGES, &m).await.unwrap();
    let full: usize = counts.iter().sum();
    let mut seen_stages = std::collections::BTreeSet::new();
    for budget in (0..=full).rev().step_by(37) {
        // The task holds the only image: forgotten, so that media goes too.
        let (result, trace) = trim_task(
            &thrift,
            &m,
            &[0],
            Budget::tokens(budget),
            &PRICED_IMAGES,
            false,
        )
        .await;
        let stages = trace.stages();
        for (k, (name, shed)) in stages.iter().enumerate() {
            if !shed.changed() {
                continue;
            }
            seen_stages.insert(*name);
            for (earlier, before) in &stages[..k] {
                // Cheap stages before a later one that ran have shed all
                // they could.
                if k <= 4 || *earlier != "rounds_dropped" && *earlier != "steps_dropped" {
                    assert_eq!(
                        before.after.count, 0,
                        "at budget {budget}, {name} ran while {earlier} had {before:?} left"
                    );
                }
            }
        }
        assert!(validate(&result.messages).is_empty());
        assert_eq!(result.fits, result.tokens() <= budget);
    }
    for stage in [
        "reasoning",
        "tool_outputs_cut",
        "tool_results_replaced",
        "media_replaced",
        "rounds_dropped",
        "steps_dropped",
    ] {
        assert!(
            seen_stages.contains(stage),
            "{stage} never ran: {seen_stages:?}"
        );
    }
}

// ------------------------------------------------------------- the floor

#[tokio::test]
async fn the_floor_is_never_shed_and_protected_messages_never_change() {
    let m = vec![
        Message::system("Standing rules."),
        summary::message("Earlier, the user set up the repository."),
        Message::user("Old question."),
        thinking(
            "",
            &"pondering ".repeat(30),
            vec![ToolCall::new("p", "read", "{}")],
        ),
        Message::tool_result("p", output(100)),
        Message::user("Current question?"),
        call("n", "read"),
        Message::tool_result("n", "short answer"),
    ];
    // Message 3 (and so its step) is protected.
    let protected = [0, 3];
    let (result, _) = trim(&Thrift::new(), &m, &protected, Budget::tokens(1)).await;
    assert!(!result.fits);
    for i in [0, 1, 3, 5, 6, 7] {
        assert!(
            result.messages.contains(&m[i]),
            "message {i} was shed or changed"
        );
    }
    assert!(!result.messages.contains(&m[2]));
    // The protected step's result is not protected itself: it may shrink.
    assert!(
        result
            .messages
            .iter()
            .any(|x| x.tool_call_id() == Some("p"))
    );
    assert_eq!(result.protected.len(), 3);
}

#[tokio::test]
async fn when_the_floor_does_not_fit_the_result_says_so_and_is_stable() {
    let m = vec![
        Message::system("Rules. ".repeat(100)),
        Message::user("old"),
        Message::assistant("old answer"),
        Message::user("new"),
        Message::assistant("new answer"),
    ];
    let budget = Budget::tokens(50);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(!result.fits && !trace.fits);
    assert_eq!(
        result.messages,
        vec![m[0].clone(), m[1].clone(), m[3].clone(), m[4].clone()],
        "as small as it gets: the floor (the prompt, the task, the newest round)"
    );
    let second = trims_to_itself(&Thrift::new(), &result, budget, "").await;
    assert!(!second.fits);
}

/// A text-only agent: a protected prompt, the task, then `steps` actions
/// whose observations arrive as user messages (so the newest user message
/// is an observation, not the task).
fn text_only_agent(task: &str, steps: usize) -> Vec<Message> {
    let mut m = vec![
        Message::system("You are a coding agent."),
        Message::user(task),
    ];
    for s in 0..steps {
        m.push(Message::assistant(format!("I will run check {s}.")));
        m.push(Message::user(format!("Observation {s}:\n{}", output(8))));
    }
    m
}

#[tokio::test]
async fn the_task_of_a_text_only_agent_stays_verbatim() {
    let task = format!(
        "Find why the parser rejects empty input. {}",
        "Details of the failing case. ".repeat(20)
    );
    let m = text_only_agent(&task, 30);
    let counted = count_messages(&CharTokenCounter, &m).await.unwrap();
    let budget = Budget::tokens(counted[0] + counted[1] + 600);
    let (result, _) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(result.fits && result.tokens() <= 600 + counted[0] + counted[1]);
    assert_eq!(
        result.messages[..2],
        m[..2],
        "the prompt and the task, verbatim"
    );
    assert_eq!(result.protected[..2], [0, 1]);
    assert_eq!(result.messages.last(), m.last());
    assert!(result.messages.len() < m.len(), "older steps went");
    assert!(validate(&result.messages).is_empty());
    // Stable: trimming it again changes nothing.
    trims_to_itself(&Thrift::new(), &result, budget, "").await;
    // Forgotten, the task goes like the oldest steps.
    let (forgotten, _) =
        trim_task(&Thrift::new(), &m, &[0], budget, &CharTokenCounter, false).await;
    assert!(forgotten.fits);
    assert!(!forgotten.messages.contains(&m[1]));
}

#[tokio::test]
async fn a_task_over_the_budget_is_kept_and_said_not_to_fit() {
    let m = text_only_agent(&"Port the build to the new toolchain. ".repeat(60), 10);
    let budget = Budget::tokens(200);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(!result.fits && !trace.fits);
    assert!(result.messages.contains(&m[1]));
    assert_eq!(result.messages.last(), m.last());
    let second = trims_to_itself(&Thrift::new(), &result, budget, "").await;
    assert!(!second.fits);
}

#[tokio::test]
async fn the_last_resort_cuts_the_newest_output_to_fit() {
    let m = vec![
        Message::system("Be brief."),
        Message::user("Show me the log."),
        call("log", "cat"),
        Message::tool_result("log", output(500)), // ~2500 tokens
    ];
    let budget = Budget::tokens(300);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(result.fits, "{} tokens", result.tokens());
    assert!(result.tokens() <= 300);
    assert!(
        result.tokens() > 250,
        "it keeps as much as fits: {}",
        result.tokens()
    );
    assert_eq!(trace.newest_outputs_cut.shed(), 1);
    let text = result.messages[3].text();
    assert!(cut::is_cut(&text));
    assert!(text.starts_with("output line 0001"));
    assert!(text.ends_with("output line 0500\n"));
    // Its marker names the handle that brings the whole output back.
    let handles = memory_core::recall::Handle::all_in(&text);
    assert_eq!(handles.len(), 1);
    assert_eq!(handles[0].find(&m), Some(3..4));
    assert_eq!(result.messages[3].tool_call_id(), Some("log"));
    trims_to_itself(&Thrift::new(), &result, budget, "").await;

    // When nothing can make it fit, the output is cut to its marker and the
    // result says it does not fit.
    let m = vec![
        Message::system("Rules. ".repeat(200)),
        Message::user("Show me the log."),
        call("log", "cat"),
        Message::tool_result("log", output(500)),
    ];
    let (result, _) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(!result.fits);
    assert_eq!(
        result.messages[3].text(),
        format!(
            "\n{}\n",
            cut::marker_with_handle(
                output(500).len(),
                memory_core::recall::Handle::of(&m[3..4])
                    .covering(0..output(500).len(), output(500).len())
            )
        )
    );
    trims_to_itself(&Thrift::new(), &result, budget, "").await;
}

#[tokio::test]
async fn the_last_resort_cuts_a_protected_steps_output_too() {
    // The call is protected, so its step (and its long output) stays in
    // the floor after the step is no longer the newest; cut to the longest
    // output shown beside the floor, it is the same on every trim.
    let m = vec![
        Message::system("Be brief."),
        Message::user("Show me the log."),
        call("log", "cat"),
        Message::tool_result("log", output(500)), // ~2100 tokens
        Message::assistant("The log ends with line 500."),
    ];
    let thrift = Thrift::new();
    assert!(thrift.max_tool_output_tokens() > 300);
    let budget = Budget::tokens(300);
    let (result, trace) = trim(&thrift, &m, &[0, 2], budget).await;
    assert!(result.fits, "{} tokens", result.tokens());
    assert!(result.tokens() > 250, "{} tokens", result.tokens());
    assert_eq!(trace.newest_outputs_cut.shed(), 1);
    let text = result.messages[3].text();
    assert!(text.starts_with("output line 0001"));
    assert!(text.ends_with("output line 0500\n"));
    assert_eq!(result.messages.last(), m.last());
    trims_to_itself(&thrift, &result, budget, "").await;

    // The same history shown call by call: each trim is stable too.
    for end in 3..=m.len() {
        let (first, _) = trim(&thrift, &m[..end], &[0, 2], budget).await;
        trims_to_itself(&thrift, &first, budget, &format!("{end}")).await;
    }
}

// ------------------------------------------------------------- the trace

#[tokio::test]
async fn the_trace_accounts_for_every_token_and_serializes() {
    let mut m = agent_task(6, 60);
    m.insert(2, thinking("Plan.", &"think ".repeat(40), vec![]));
    let thrift = Thrift::new().with_max_tool_output_tokens(200);
    for budget in [2000, 1200, 600, 200, 50] {
        let (result, trace) = trim(&thrift, &m, &[0], Budget::tokens(budget)).await;
        assert_eq!(trace.tokens_before, total_of(&m).await);
        assert_eq!(trace.tokens_after, result.tokens());
        assert_eq!(trace.messages_after, result.messages.len());
        assert_eq!(trace.fits, result.fits);
        assert_eq!(
            trace.tokens_before - trace.tokens_after,
            trace.saved(),
            "at {budget}: {trace:#?}"
        );
        for (name, shed) in trace.stages() {
            assert!(shed.after.count <= shed.before.count, "{name}");
            assert!(shed.after.tokens <= shed.before.tokens, "{name}");
        }
        let json = serde_json::to_string(&trace).unwrap();
        let back: ThriftTrace = serde_json::from_str(&json).unwrap();
        assert_eq!(back, trace);
    }
    let (_, trace) = trim(&thrift, &m, &[0], Budget::tokens(600)).await;
    assert!(trace.target.is_some_and(|t| t <= 600));
    assert_eq!(trace.reasoning.before.count, 1);
    assert_eq!(trace.reasoning.after.count, 0);
}

// -------------------------------------------- stability and determinism

/// A mixed history: a protected prompt, chat rounds, an image, reasoning,
/// parallel calls, long outputs and a long final round.
fn mixed() -> Vec<Message> {
    let mut m = vec![Message::system("You are a coding agent.")];
    m.push(Message::user_blocks(vec![
        ContentBlock::Text("This screenshot shows the failing test.".into()),
        ContentBlock::Image(ImageContent::new("image/png", vec![0; 32])),
    ]));
    m.push(thinking(
        "I see the failure.",
        "The assertion on line 3.",
        vec![],
    ));
    m.push(Message::user("What do the logs of the parser say?"));
    m.push(Message::assistant_with_tools(
        "",
        vec![
            ToolCall::new("l1", "read", r#"{"path":"parser.log"}"#),
            ToolCall::new("l2", "read", r#"{"path":"lexer.log"}"#),
        ],
    ));
    m.push(Message::tool_result("l2", output(300)));
    m.push(Message::tool_result("l1", output(40)));
    m.push(Message::assistant("The parser log shows an empty token."));
    m.push(Message::user(
        "Fix the parser so that empty input is accepted.",
    ));
    for s in 0..10 {
        let id = format!("f{s}");
        m.push(thinking(
            "",
            &format!("step {s} reasoning "),
            vec![ToolCall::new(&id, "edit", "{}")],
        ));
        m.push(Message::tool_result(id, output(10 + 15 * (s % 4))));
    }
    m
}

#[tokio::test]
async fn trimming_the_result_again_changes_nothing() {
    let m = mixed();
    let full = total_of(&m).await;
    for protected in [vec![], vec![0], vec![0, 4]] {
        for budget in (0..=full + 10).step_by(53) {
            for b in [
                Budget::tokens(budget),
                Budget::both(budget, 2),
                Budget::both(budget, 1),
            ] {
                for thrift in [
                    Thrift::new(),
                    Thrift::new()
                        .with_low_watermark(1.0)
                        .with_keep_recent_results(0),
                ] {
                    let (result, _) = trim(&thrift, &m, &protected, b).await;
                    trims_to_itself(
                        &thrift,
                        &result,
                        b,
                        &format!("unstable at {b:?}, protected {protected:?}"),
                    )
                    .await;
                    assert!(validate(&result.messages).is_empty());
                    let floor = {
                        let counts = count_messages(&CharTokenCounter, &m).await.unwrap();
                        let h = History::new(&m, &counts).unwrap().protect(&protected);
                        structure::floor(&h).tokens
                    };
                    if floor <= budget {
                        assert!(result.fits && result.tokens() <= budget, "{b:?}");
                    }
                    assert_eq!(result.fits, result.tokens() <= budget);
                }
            }
        }
    }
}

#[tokio::test]
async fn the_same_input_gives_the_same_output() {
    let m = mixed();
    let full = total_of(&m).await;
    for budget in (0..full).step_by(97) {
        let (a, ta) = trim(&Thrift::new(), &m, &[0], Budget::tokens(budget)).await;
        let (b, tb) = trim(&Thrift::new(), &m, &[0], Budget::tokens(budget)).await;
        assert_eq!(a, b);
        assert_eq!(ta, tb);
    }
}

#[tokio::test]
async fn changed_messages_are_counted_with_the_counter_given() {
    let m = mixed();
    for budget in [100, 400, 900] {
        let (result, _) = trim_counted(
            &Thrift::new(),
            &m,
            &[0],
            Budget::tokens(budget),
            &PRICED_IMAGES,
        )
        .await;
        let truth = count_messages(&PRICED_IMAGES, &result.messages)
            .await
            .unwrap();
        assert_eq!(result.counts, truth, "at {budget}");
    }
}

// ------------------------------------------------------------ sticky cuts

/// How many times the context is not an extension of the previous one, as
/// a chat grows turn by turn; and the largest context right after a break.
async fn cache_breaks(thrift: &Thrift, budget: usize) -> (usize, Vec<usize>) {
    let mut m = vec![Message::system("You are a helpful assistant.")];
    let mut previous: Option<Vec<Message>> = None;
    let mut breaks = 0;
    let mut after_break = Vec::new();
    for turn in 0..80 {
        m.push(Message::user(format!("q{turn}")));
        let (result, _) = trim(thrift, &m, &[0], Budget::tokens(budget)).await;
        assert!(result.fits);
        if let Some(prev) = &previous
            && !result.messages.starts_with(prev)
        {
            breaks += 1;
            after_break.push(result.tokens());
        }
        previous = Some(result.messages);
        m.push(Message::assistant(format!(
            "a{turn} {}",
            "word ".repeat(6 + turn % 5)
        )));
    }
    (breaks, after_break)
}

#[tokio::test]
async fn the_low_watermark_makes_cuts_sticky() {
    let budget = 400;
    let (sticky, sizes) = cache_breaks(&Thrift::new(), budget).await;
    let (eager, _) = cache_breaks(&Thrift::new().with_low_watermark(1.0), budget).await;
    // Without a margin every turn over the budget moves the cut.
    assert!(eager >= 40, "{eager}");
    assert!(sticky * 3 <= eager, "sticky {sticky}, eager {eager}");
    // Right after a cut the context is down at about the watermark (plus at
    // most one round).
    let round = 20;
    assert!(
        sizes.iter().all(|&s| s <= budget * 8 / 10 + round),
        "{sizes:?}"
    );
}

#[tokio::test]
async fn placeholders_too_are_replaced_in_steps() {
    // An agent adds one ~100-token result per turn.
    let thrift = Thrift::new();
    let eager = Thrift::new().with_low_watermark(1.0);
    let budget = Budget::tokens(2000);
    let mut breaks = [0, 0];
    let mut previous: [Option<Vec<Message>>; 2] = [None, None];
    for steps in 10..40 {
        let m = agent_task(steps, 20);
        for (k, t) in [&thrift, &eager].into_iter().enumerate() {
            let (result, trace) = trim(t, &m, &[0], budget).await;
            assert!(result.fits);
            assert_eq!(trace.steps_dropped.shed(), 0, "placeholders suffice here");
            if let Some(prev) = &previous[k] {
                // Compare all but the newest step, which the next turn follows.
                let stable = prev.len() - 2;
                if result.messages[..stable] != prev[..stable] {
                    breaks[k] += 1;
                }
            }
            previous[k] = Some(result.messages);
        }
    }
    // Batches of results already spare most turns; the watermark still
    // spares more.
    assert!(breaks[0] < breaks[1] && breaks[0] <= 5, "{breaks:?}");
}

#[tokio::test]
async fn an_agent_loop_with_long_outputs_mostly_appends() {
    // Each step's output (~1,400 tokens) is over the 1,024-token cut: the
    // newest is cut as it will stay once it ages, and earlier results are
    // replaced three at a time, so most turns only append. Measured until
    // the placeholders (each ~19 tokens with the recall handle of its
    // original's parts) leave too little room for the kept outputs, from
    // about step 29, when the floor's outputs are cut further (the last
    // resort, tested apart).
    let budget = Budget::tokens(6000);
    let mut previous: Option<Vec<Message>> = None;
    let (mut breaks, mut turns) = (0, 0);
    for steps in 4..29 {
        let m = agent_task(steps, 300);
        let (result, _) = trim(&Thrift::new(), &m, &[0], budget).await;
        assert!(result.fits);
        assert!(validate(&result.messages).is_empty());
        if let Some(prev) = &previous {
            turns += 1;
            if !result.messages.starts_with(prev) {
                breaks += 1;
            }
        }
        previous = Some(result.messages);
    }
    // About one turn in three rewrites the prefix (each time a batch of
    // three results is replaced); shedding each turn's excess one result
    // at a time would rewrite it on almost every turn.
    assert!(breaks * 5 <= turns * 2, "{breaks} breaks in {turns} turns");
}

#[tokio::test]
async fn the_newest_output_is_cut_to_the_length_it_keeps_once_it_ages() {
    let thrift = Thrift::new();
    let budget = Budget::tokens(3000);
    let m = agent_task(3, 300);
    let (now, _) = trim(&thrift, &m, &[0], budget).await;
    let newest = now.messages.last().unwrap();
    assert!(cut::is_cut(&newest.text()), "the newest output is cut");
    let later = agent_task(4, 300);
    let (next, _) = trim(&thrift, &later, &[0], budget).await;
    let aged = next
        .messages
        .iter()
        .find(|x| x.tool_call_id() == newest.tool_call_id())
        .unwrap();
    assert_eq!(aged, newest);
}

/// An agent task whose steps' outputs vary in length (a fixed pattern of
/// 2 to 90 lines).
fn uneven_task(steps: usize) -> Vec<Message> {
    let mut m = vec![
        Message::system("You are a coding agent."),
        Message::user("Make the test suite pass."),
    ];
    for s in 0..steps {
        let id = format!("c{s}");
        m.push(Message::assistant_with_tools(
            format!("Step {s}: looking at the next file."),
            vec![ToolCall::new(
                &id,
                "read_file",
                format!(r#"{{"path":"src/f{s}.rs"}}"#),
            )],
        ));
        m.push(Message::tool_result(id, output(2 + (s * 37) % 89)));
    }
    m
}

#[tokio::test]
async fn inside_a_round_each_call_appends_to_the_last_until_it_no_longer_fits() {
    for budget in [1500, 3000, 6000] {
        let thrift = Thrift::new();
        let mut previous: Option<TrimResult> = None;
        let (mut breaks, mut appends) = (0, 0);
        for steps in 1..60 {
            let m = uneven_task(steps);
            let (result, trace) = trim(&thrift, &m, &[0], Budget::tokens(budget)).await;
            assert!(result.fits && validate(&result.messages).is_empty());
            if let Some(prev) = &previous {
                let step = total_of(&m[m.len() - 2..]).await;
                if result.messages.starts_with(&prev.messages) {
                    appends += 1;
                } else if steps % 32 != 0 {
                    // (Every 32 calls of a round the replay starts afresh.)
                    breaks += 1;
                    // Only when the new step, as it is, no longer fits
                    // after the last call's context.
                    assert!(
                        prev.tokens() + step > budget,
                        "budget {budget}, {steps} steps: {} + {step} fits",
                        prev.tokens()
                    );
                    assert_eq!(trace.appended.count, 0);
                    // Shed afresh down to the watermark.
                    assert_eq!(trace.target, Some(budget * 8 / 10));
                }
            }
            assert_eq!(trace.tokens_before - trace.tokens_after, trace.saved());
            assert_eq!(trace.tokens_after, result.tokens());
            previous = Some(result);
        }
        assert!(
            appends > breaks,
            "budget {budget}: {breaks} breaks, {appends} appends"
        );
    }
}

#[tokio::test]
async fn a_new_step_is_appended_with_its_long_output_cut_when_that_makes_it_fit() {
    let thrift = Thrift::new();
    // Short steps, then one whose output (~1,400 tokens) only fits cut (to
    // about 1,024 tokens).
    let mut m = uneven_task(1);
    m.truncate(2);
    for s in 0..12 {
        let id = format!("s{s}");
        m.push(call(&id, "grep"));
        m.push(Message::tool_result(id, output(40)));
    }
    let shown = total_of(&m).await;
    let budget = Budget::tokens(shown + 1100);
    let (before, _) = trim(&thrift, &m, &[0], budget).await;
    assert!(before.fits);
    m.push(call("big", "cat"));
    m.push(Message::tool_result("big", output(300)));
    let (after, trace) = trim(&thrift, &m, &[0], budget).await;
    assert!(after.fits);
    let step = total_of(&m[m.len() - 2..]).await;
    assert!(
        before.tokens() + step > shown + 1100,
        "the test needs a step that does not fit as it is"
    );
    assert!(
        after.messages.starts_with(&before.messages),
        "the prefix holds"
    );
    assert!(cut::is_cut(&after.messages.last().unwrap().text()));
    assert!(trace.appended.count >= 1);
    assert!(trace.tool_outputs_cut.saved() > 0);
    // Trimming the result again changes nothing, and so does asking again.
    trims_to_itself(&thrift, &after, budget, "").await;
    let (twice, _) = trim(&thrift, &m, &[0], budget).await;
    assert_eq!(bytes(&twice.messages), bytes(&after.messages));
}

#[tokio::test]
async fn a_long_round_replays_in_bounded_spans_and_stays_valid() {
    let thrift = Thrift::new();
    let budget = Budget::tokens(2500);
    let m = uneven_task(150);
    let (result, trace) = trim(&thrift, &m, &[0], budget).await;
    assert!(result.fits && validate(&result.messages).is_empty());
    assert_eq!(result.messages[..2], m[..2]);
    assert_eq!(result.messages.last(), m.last());
    assert_eq!(trace.tokens_after, result.tokens());
}

#[tokio::test]
async fn a_follow_up_keeps_the_earlier_rounds_request_and_newest_steps() {
    // A long agent round, then a short follow-up: the earlier round does
    // not fit whole even with its results replaced by placeholders, so it
    // keeps its request and the newest steps that fit rather than nothing.
    // The follow-up asks nothing new, so it is appended to the context the
    // round ended with (whose cuts dropped the round's older steps).
    let mut m = uneven_task(120);
    m.push(Message::assistant("Done: the suite passes."));
    m.push(Message::user("Please continue."));
    let budget = Budget::tokens(2500);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(result.fits && validate(&result.messages).is_empty());
    assert_eq!(result.messages[..2], m[..2], "system prompt and request");
    assert_eq!(result.messages.last(), m.last());
    let kept_steps = result
        .messages
        .iter()
        .filter(|x| x.is_tool_result())
        .count();
    assert!((2..120).contains(&kept_steps), "{kept_steps} steps kept");
    // The steps kept are the newest ones, ending with the answer.
    assert_eq!(result.messages[result.messages.len() - 2], m[m.len() - 2]);
    let calls: Vec<_> = result
        .messages
        .iter()
        .filter_map(|x| x.tool_calls().first())
        .collect();
    let newest: Vec<_> = m.iter().filter_map(|x| x.tool_calls().first()).collect();
    assert_eq!(calls[..], newest[newest.len() - calls.len()..]);
    assert!(result.tokens() > 2500 / 2, "{} tokens", result.tokens());
    assert_eq!(trace.rounds_dropped.shed(), 0);
    assert!(trace.steps_dropped.saved() > 0);
    assert!(!trace.reached_back);
    // The answer and the follow-up are appended to what the round ended with.
    assert!(trace.appended.count >= 1);
    let (round, _) = trim(&Thrift::new(), &m[..m.len() - 2], &[0], budget).await;
    assert_eq!(result.messages[..round.messages.len()], round.messages[..]);
    assert_eq!(result.messages[round.messages.len()..], m[m.len() - 2..]);
    // Trimming the result again changes nothing.
    trims_to_itself(&Thrift::new(), &result, budget, "").await;
}

#[tokio::test]
async fn a_step_over_the_budget_as_it_is_is_shown_as_the_next_call_replays_it() {
    // The newest step's output (~5,000 tokens) alone is over the budget;
    // cut, it fits after the last call's context, and the next call
    // starts from that same context.
    let thrift = Thrift::new();
    let budget = Budget::tokens(4000);
    let mut m = uneven_task(40);
    assert!(total_of(&m).await > 4000, "a round settled over the budget");
    m.push(call("big", "cat"));
    m.push(Message::tool_result("big", output(1100)));
    assert!(total_of(&m[m.len() - 2..]).await > 4000);
    let (now, _) = trim(&thrift, &m, &[0], budget).await;
    assert!(now.fits);
    assert!(cut::is_cut(&now.messages.last().unwrap().text()));
    m.push(call("next", "grep"));
    m.push(Message::tool_result("next", output(5)));
    let (next, trace) = trim(&thrift, &m, &[0], budget).await;
    assert!(next.fits);
    assert!(next.messages.starts_with(&now.messages), "{trace:?}");
}

#[tokio::test]
async fn a_placeholder_s_words_do_not_make_a_round_relevant() {
    // The older round's result becomes a placeholder ("[earlier tool
    // result omitted: ...]"); the question uses those very words. The two
    // earlier rounds do not both fit whole: the placeholder must not win
    // the older one the place, so the newer round stays whole.
    let m = vec![
        Message::system("agent"),
        Message::user("Look at the server logs."),
        call("c1", "read_logs"),
        Message::tool_result("c1", "zzz ".repeat(400)),
        Message::assistant("Checked them all."),
        Message::user("Plant the seedlings in spring."),
        Message::assistant("Noted: seedlings go in the ground in spring."),
        Message::user("Which characters were omitted from the earlier tool result?"),
    ];
    let thrift = Thrift::new().with_keep_recent_results(0);
    let (result, trace) = trim(&thrift, &m, &[0], Budget::tokens(60)).await;
    assert!(result.fits);
    assert_eq!(trace.tool_results_replaced.shed(), 1);
    assert!(result.messages.contains(&m[5]), "{:?}", result.messages);
    // (Of the older round, its request and last answer may stay.)
    assert!(
        !result
            .messages
            .iter()
            .any(|x| x.tool_call_id() == Some("c1")),
        "{:?}",
        result.messages
    );
}

/// `view` (its system prompt protected), whose summary stands for
/// `covered`, placed before the view's message `at`.
fn with_covered<'a>(
    view: &'a [Message],
    counts: &'a [usize],
    covered: Vec<Message>,
    covered_counts: Vec<usize>,
    at: usize,
) -> History<'a> {
    let set = memory_core::covered::Covered::new(covered, covered_counts)
        .unwrap()
        .before(Some(view[at].clone()));
    History::new(view, counts)
        .unwrap()
        .protect(&[0])
        .with_covered(set)
}

#[tokio::test]
async fn a_question_into_a_summary_s_covered_span_is_answered_from_the_whole_budget() {
    // Forty older rounds, folded into a summary; one of them is about the
    // parser.
    let mut covered = Vec::new();
    for i in 0..40 {
        covered.push(Message::user(format!("round {i}: how is the garden?")));
        covered.push(Message::assistant(format!(
            "The roses in bed {i} are fine."
        )));
    }
    covered[21] = Message::assistant("The parser runs on the staging cluster.");
    let covered_counts = count_messages(&CharTokenCounter, &covered).await.unwrap();
    let view = vec![
        Message::system("You are helpful."),
        summary::message("We talked about the garden beds."),
        Message::user("Anything new?"),
        Message::assistant("Nothing new."),
        Message::user("Where does the parser run?"),
    ];
    let counts = count_messages(&CharTokenCounter, &view).await.unwrap();
    let history = with_covered(&view, &counts, covered.clone(), covered_counts, 2);
    let max = 200;
    let (result, trace) = Thrift::new()
        .trim_traced(&history, &Budget::tokens(max), &CharTokenCounter)
        .await
        .unwrap();
    // Not the sticky level below the budget: the covered turns the
    // question needs compete for every token.
    assert_eq!(trace.target, Some(max));
    assert!(result.fits && result.tokens() <= max);
    assert!(trace.covered_shown > 0);
    assert!(result.messages.contains(&covered[21]));
    assert!(result.messages.contains(&view[1]));
    assert!(validate(&result.messages).is_empty());
}

#[tokio::test]
async fn a_text_only_agent_s_observation_goes_on_from_the_summary() {
    // Older steps folded into a summary; one of them read the parser's
    // deployment.
    let mut covered = Vec::new();
    for i in 0..40 {
        covered.push(Message::assistant(bash_step(i)));
        covered.push(Message::user(format!("OBSERVATION:\nroses in bed {i}")));
    }
    covered[21] = Message::user("OBSERVATION:\nthe parser runs on the staging cluster");
    let covered_counts = count_messages(&CharTokenCounter, &covered).await.unwrap();
    // The output of the command just written, however short, even with a
    // question mark: the summary stands for the older steps, as it does
    // for a tool-calling agent.
    let asked = "Does the parser run on the staging cluster?";
    let after = |step: String, said: &'static str| {
        covered_shown_after(step, said, &covered, &covered_counts)
    };
    assert_eq!(after(bash_step(40), asked).await, 0);
    // The same question after a reply that runs nothing asks about them.
    let reply = || "I read the beds.".to_string();
    assert!(after(reply(), asked).await > 0);
}

/// `n` tool-calling steps, each a `read_file` call and its result about
/// a garden bed.
fn garden_steps(n: usize) -> Vec<Message> {
    (0..n)
        .flat_map(|i| {
            let id = format!("c{i}");
            [
                call(&id, "read_file"),
                Message::tool_result(&id, format!("roses in bed {i}")),
            ]
        })
        .collect()
}

#[tokio::test]
async fn a_tool_calling_round_goes_on_from_its_newest_covered_steps() {
    // Older steps of the round, folded into a summary; the newest of them
    // read the parser's deployment.
    let mut covered = garden_steps(40);
    covered[79] = Message::tool_result("c39", "the parser runs on the staging cluster");
    let covered_counts = count_messages(&CharTokenCounter, &covered).await.unwrap();
    // The task, the summary of the round's older steps, and its newest
    // step, which the covered steps stood before.
    let view = vec![
        Message::system("You are a coding agent."),
        Message::user("Move the parser off the staging cluster."),
        summary::message("The agent read the garden beds."),
        call("c40", "read_file"),
        Message::tool_result("c40", "deploy.yaml: cluster staging"),
    ];
    let counts = count_messages(&CharTokenCounter, &view).await.unwrap();
    let history = with_covered(&view, &counts, covered.clone(), covered_counts, 3);
    let max = 200;
    let (result, trace) = Thrift::new()
        .trim_traced(&history, &Budget::tokens(max), &CharTokenCounter)
        .await
        .unwrap();
    assert!(result.fits && result.tokens() <= max);
    assert!(
        validate(&result.messages).is_empty(),
        "{:?}",
        result.messages
    );
    // The round goes on from its newest covered steps, as it would
    // without the summary (the step that read the parser's cluster, call
    // and result), beside the summary, which is never shed; the oldest
    // steps stay folded.
    assert!(trace.covered_shown >= 2 && trace.covered_shown < covered.len());
    assert!(
        result.messages.contains(&covered[78]) && result.messages.contains(&covered[79]),
        "{trace:?} {:?}",
        result.messages
    );
    assert!(result.messages.contains(&view[2]));

    // Under a rounds limit, which keeps the newest rounds, the steps stay
    // folded.
    let limited = Budget {
        max_tokens: Some(max),
        max_rounds: Some(1),
    };
    let (result, trace) = Thrift::new()
        .trim_traced(&history, &limited, &CharTokenCounter)
        .await
        .unwrap();
    assert_eq!(trace.covered_shown, 0);
    assert!(!result.messages.contains(&covered[79]));
}

#[tokio::test]
async fn a_round_begun_after_a_summary_unfolds_from_its_first_step() {
    // The summary stands for a finished round's steps; a long request
    // (no question) begins a new round after it.
    let covered = garden_steps(40);
    let covered_counts = count_messages(&CharTokenCounter, &covered).await.unwrap();
    let request = format!(
        "Move the parser off the staging cluster. {}",
        "Details. ".repeat(80)
    );
    let view = vec![
        Message::system("You are a coding agent."),
        Message::user("Tend the garden beds."),
        summary::message("The agent read the garden beds."),
        Message::user(request),
        call("c40", "read_file"),
        Message::tool_result("c40", "deploy.yaml: cluster staging"),
    ];
    let counts = count_messages(&CharTokenCounter, &view).await.unwrap();
    let thrift = Thrift::new();
    let budget = Budget::tokens(300);
    let mut shown = Vec::new();
    // The call at the request, then the call at its first step.
    for end in [4, 6] {
        let (view, counts) = (&view[..end], &counts[..end]);
        let history = with_covered(view, counts, covered.clone(), covered_counts.clone(), 3);
        let (result, trace) = thrift
            .trim_traced(&history, &budget, &CharTokenCounter)
            .await
            .unwrap();
        assert!(result.fits && validate(&result.messages).is_empty());
        shown.push(trace.covered_shown);
    }
    // A long request does not ask anew: folded at it. Its steps unfold
    // the covered turns, as any tool-calling agent's steps do (a cache
    // break at the first step, the cost of keeping them within reach).
    assert_eq!(shown[0], 0);
    assert!(shown[1] > 0);
}

/// Covered originals shown when the short user message `said`, about the
/// parser, follows `step`, in a view whose summary stands for `covered`.
async fn covered_shown_after(
    step: String,
    said: &str,
    covered: &[Message],
    covered_counts: &[usize],
) -> usize {
    let view = vec![
        Message::system("You are a coding agent."),
        summary::message("The agent read the garden beds."),
        Message::user("Go on."),
        Message::assistant(step),
        Message::user(said),
    ];
    let counts = count_messages(&CharTokenCounter, &view).await.unwrap();
    let history = with_covered(&view, &counts, covered.to_vec(), covered_counts.to_vec(), 2);
    let (result, trace) = Thrift::new()
        .trim_traced(&history, &Budget::tokens(200), &CharTokenCounter)
        .await
        .unwrap();
    assert!(result.fits && validate(&result.messages).is_empty());
    trace.covered_shown
}

/// A coding agent's system prompt and task, where its sessions start.
fn agent_start() -> Vec<Message> {
    vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the failing tests in the repository."),
    ]
}

/// A text-only agent's step `i`: a function tag that reads a file.
fn bash_step(i: usize) -> String {
    format!("<function=bash>\n<parameter=command>cat notes_{i}.txt</parameter>\n</function>")
}

/// A text-only agent's session: each step writes its command in text
/// (`step` gives the assistant message of step `i`), each observation
/// comes back as a user message; an early observation is about the
/// parser's staging cluster, and the newest, short one mentions it again.
fn text_agent(step: impl Fn(usize) -> String) -> Vec<Message> {
    text_agent_then(step, "OBSERVATION:\nparser staging cluster")
}

/// [`text_agent`] whose newest user message is `said`.
fn text_agent_then(step: impl Fn(usize) -> String, said: &str) -> Vec<Message> {
    let mut m = agent_start();
    for i in 0..30 {
        m.push(Message::assistant(step(i)));
        let observation = if i == 2 {
            "The parser deploys to the staging cluster; its configuration lives in \
             deploy/parser.yaml with replicas, probes, volumes and secrets."
                .to_string()
        } else {
            format!("line {i} of the garden roses inventory\n").repeat(12)
        };
        m.push(Message::user(format!("OBSERVATION:\n{observation}")));
    }
    m.push(Message::assistant(step(30)));
    m.push(Message::user(said));
    m
}

#[tokio::test]
async fn a_text_only_agent_s_observation_is_appended_not_asked_about() {
    let budget = Budget::tokens(1_500);
    let m = text_agent(bash_step);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(result.fits && validate(&result.messages).is_empty());
    assert!(
        !trace.reached_back,
        "the output of the command just written"
    );
    assert_eq!(trace.appended.count, 1);
    // A fenced block that ends the message is a command too.
    let fenced = |i: usize| format!("Listing the notes.\n```\ncat notes_{i}.txt\n```");
    let (_, trace) = trim(&Thrift::new(), &text_agent(fenced), &[0], budget).await;
    assert!(!trace.reached_back);
    let shell = |i: usize| format!("Listing the notes.\n```bash\ncat notes_{i}.txt\n```\n");
    let (_, trace) = trim(&Thrift::new(), &text_agent(shell), &[0], budget).await;
    assert!(!trace.reached_back);
    // Even a question mark in the command's output leaves it an output.
    let marked = text_agent_then(bash_step, "OBSERVATION:\nparser staging cluster?");
    let (_, trace) = trim(&Thrift::new(), &marked, &[0], budget).await;
    assert!(!trace.reached_back);
    // Code in another language ending a reply is an answer, not a command:
    // a question after it asks.
    let asked = "Where does the parser run, on the staging cluster?";
    let code = |i: usize| format!("Here is part {i}:\n```python\nprint({i})\n```");
    let (_, trace) = trim(&Thrift::new(), &text_agent_then(code, asked), &[0], budget).await;
    assert!(trace.reached_back);
    // After a reply that runs nothing, a question about the dropped
    // observation brings it back; the same words said as a remark do not
    // choose afresh.
    let reply = |i: usize| format!("I have read part {i} of the notes.");
    let m = text_agent_then(reply, asked);
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(trace.reached_back);
    assert!(result.messages.contains(&m[7]));
    let remark = "The parser runs on the staging cluster, I see.";
    let (_, trace) = trim(
        &Thrift::new(),
        &text_agent_then(reply, remark),
        &[0],
        budget,
    )
    .await;
    assert!(!trace.reached_back);
}

#[tokio::test]
async fn a_text_only_agent_s_long_observation_is_cut_like_a_tool_output() {
    let mut m = agent_start();
    for i in 0..6 {
        m.push(Message::assistant(bash_step(i)));
        let lines = if i == 1 { 300 } else { 3 };
        let output = format!("line {i} of the test log\n").repeat(lines);
        m.push(Message::user(format!("OBSERVATION:\n{output}")));
    }
    m.push(Message::assistant(bash_step(6)));
    m.push(Message::user("OBSERVATION:\nall tests pass"));
    let long = m[5].clone();
    let budget = Budget::tokens(1_800);
    let thrift = Thrift::new().with_max_tool_output_tokens(256);
    let (result, trace) = trim(&thrift, &m, &[0], budget).await;
    assert!(result.fits && validate(&result.messages).is_empty());
    assert_eq!(trace.tool_outputs_cut.before.count, 1);
    assert_eq!(trace.rounds_dropped.shed(), 0, "nothing else had to go");
    // Shown cut, head and tail, where it stood.
    assert_eq!(result.messages.len(), m.len());
    let shown = &result.messages[5];
    assert!(cut::is_cut(&shown.text()), "{}", shown.text());
    assert!(
        shown
            .text()
            .starts_with("OBSERVATION:\nline 1 of the test log")
    );
    assert!(memory_core::is_shrunk_from(&long, shown));
    // The task, the other observations and the newest one as they were.
    assert_eq!(result.messages[..5], m[..5]);
    assert_eq!(result.messages[6..], m[6..]);
    trims_to_itself(&thrift, &result, budget, "").await;
}

#[tokio::test]
async fn a_text_only_agent_s_newest_long_observation_is_cut_as_it_will_stay() {
    let mut m = agent_start();
    for i in 0..6 {
        m.push(Message::assistant(bash_step(i)));
        let output = format!("line {i} of the test log\n").repeat(3);
        m.push(Message::user(format!("OBSERVATION:\n{output}")));
    }
    m.push(Message::assistant(bash_step(6)));
    let output = "line 6 of the test log\n".repeat(300);
    m.push(Message::user(format!("OBSERVATION:\n{output}")));
    let newest = m.len() - 1;
    let budget = Budget::tokens(1_000);
    let thrift = Thrift::new().with_max_tool_output_tokens(256);
    let (first, trace) = trim(&thrift, &m, &[0], budget).await;
    assert!(first.fits && validate(&first.messages).is_empty());
    // Cut to the length an earlier observation is cut to, and nothing else
    // had to go (shown whole, it would have left room for nothing else).
    assert_eq!(trace.tool_outputs_cut.before.count, 1);
    assert_eq!(trace.rounds_dropped.shed(), 0);
    assert_eq!(first.messages[..newest], m[..newest]);
    let shown = &first.messages[newest];
    assert!(cut::is_cut(&shown.text()), "{}", shown.text());
    assert!(memory_core::is_shrunk_from(&m[newest], shown));
    trims_to_itself(&thrift, &first, budget, "").await;
    // The next step appends to it: the observation, no longer the newest,
    // reads as it did, and the prompt's prefix is kept.
    m.push(Message::assistant(bash_step(7)));
    m.push(Message::user("OBSERVATION:\nall tests pass"));
    let (next, _) = trim(&thrift, &m, &[0], budget).await;
    assert!(next.fits);
    assert_eq!(next.messages[..first.messages.len()], first.messages[..]);
}

#[tokio::test]
async fn in_a_text_only_agent_s_loop_recency_counts_more() {
    // Two earlier observations bear on the newest one: an old one that
    // names all it names, and a recent one that lacks only a word half the
    // other observations hold too.
    let mut m = agent_start();
    let (old, recent) = (2, 24);
    for i in 0..30 {
        m.push(Message::assistant(bash_step(i)));
        let observation = match i {
            _ if i == old => "the parser staging cluster inventory".to_string(),
            _ if i == recent => "the parser staging cluster ledger".to_string(),
            _ if i % 2 == 0 => format!("line {i} of the garden roses inventory"),
            _ => format!("line {i} of the garden tulips ledger"),
        };
        m.push(Message::user(format!("OBSERVATION:\n{observation}")));
    }
    m.push(Message::assistant(bash_step(30)));
    // Everything so far fits; the newest observation, long, leaves room
    // beside it for about one earlier step.
    let before = total_of(&m).await;
    let max = before + 20;
    let round = total_of(&m[4..6]).await;
    let room = max * 4 / 5 - total_of(&m[..2]).await - round * 3 / 2;
    let filler = "qq ".repeat(room * 4 / 3);
    m.push(Message::user(format!(
        "OBSERVATION:\nparser staging cluster inventory\n{filler}"
    )));
    let kept = |result: &TrimResult, i: usize| result.messages.contains(&m[3 + 2 * i]);
    let budget = Budget::tokens(max);
    // By default the newer one stays; weighing recency as in a chat, the
    // better match does.
    let (result, trace) = trim(&Thrift::new(), &m, &[0], budget).await;
    assert!(result.fits && validate(&result.messages).is_empty());
    assert_eq!(trace.rounds_dropped.after.count, 1);
    assert!(kept(&result, recent) && !kept(&result, old));
    let chat_like = Thrift::new().with_loop_recency_weight(Thrift::new().recency_weight());
    let (result, _) = trim(&chat_like, &m, &[0], budget).await;
    assert!(kept(&result, old) && !kept(&result, recent));
}

/// A chat of dated sessions: each starts with a time marker (a short
/// system message naming its date); the second January one holds a turn
/// about a screenplay, the others only the garden (the first user message,
/// the task, stays whatever happens); `question` comes last.
fn dated_chat(question: &str) -> Vec<Message> {
    let mut m = vec![Message::system("You are a friend.")];
    let sessions = [
        ("2 January, 2022", "Happy new year! The garden is frozen."),
        (
            "9 January, 2022",
            "I finally finished my screenplay and printed it!",
        ),
        ("2 March, 2022", "The tulips in the garden came up early."),
        ("20 March, 2022", "The roses need pruning before the frost."),
        ("29 March, 2022", "The hedges grew over the fence again."),
    ];
    for (n, (date, news)) in sessions.iter().enumerate() {
        m.push(Message::system(format!(
            "Session {}: 4:04 pm on {date}",
            n + 1
        )));
        m.push(Message::user(*news));
        m.push(Message::assistant(format!(
            "Wonderful, tell me more ({n})!"
        )));
        for i in 0..2 {
            m.push(Message::user(format!(
                "The garden needs watering, day {i} of week {n}."
            )));
            m.push(Message::assistant(format!(
                "Water it in the evening, day {i} of week {n}."
            )));
        }
    }
    m.push(Message::user(question));
    m
}

#[tokio::test]
async fn a_question_naming_a_month_finds_the_turns_said_in_it() {
    let screenplay = Message::user("I finally finished my screenplay and printed it!");
    let budget = Budget::tokens(200);
    // Its words match nothing that was said: only the date finds the turn,
    // dropped from the context before the question, so the question
    // reaches back for it.
    let asked = dated_chat("What did Joanna accomplish in January 2022?");
    for b in [200, 300] {
        let (result, trace) = trim(&Thrift::new(), &asked, &[0], Budget::tokens(b)).await;
        assert!(result.fits && validate(&result.messages).is_empty());
        assert!(result.messages.contains(&screenplay), "budget {b}");
        assert!(trace.reached_back, "budget {b}");
    }
    // Asked without the month, recency decides and the turn stays out.
    let tulips = Message::user("The tulips in the garden came up early.");
    let undated = dated_chat("What did Joanna accomplish?");
    let (result, _) = trim(&Thrift::new(), &undated, &[0], budget).await;
    assert!(!result.messages.contains(&screenplay) && !result.messages.contains(&tulips));
    // Another month of the same year finds its own turns.
    let march = dated_chat("What did Joanna do in early March 2022?");
    let (result, _) = trim(&Thrift::new(), &march, &[0], budget).await;
    assert!(result.messages.contains(&tulips) && !result.messages.contains(&screenplay));
}

#[tokio::test]
async fn only_a_question_reaches_back() {
    let screenplay = Message::user("I finally finished my screenplay and printed it!");
    let budget = Budget::tokens(200);
    // The same words about the dropped turn: asked, they choose afresh and
    // bring it back.
    let asked = dated_chat("Tell me about the screenplay you printed?");
    let (result, trace) = trim(&Thrift::new(), &asked, &[0], budget).await;
    assert!(trace.reached_back);
    assert!(result.messages.contains(&screenplay));
    // Said as a remark, they go on from the context the call before
    // showed (shed at the watermark when they do not fit beside it).
    let remark = dated_chat("Tell me about the screenplay you printed.");
    let (result, trace) = trim(&Thrift::new(), &remark, &[0], budget).await;
    assert!(result.fits && validate(&result.messages).is_empty());
    assert!(!trace.reached_back);
    // (Here they do not fit: down to the watermark, 0.8 of the budget,
    // choosing by relevance to them.)
    assert_eq!(trace.target, Some(160));
    assert!(result.messages.contains(&screenplay));
}

/// A chat of a greeting (the task), a round about the Postgres pool, then
/// `n` rounds of long chatter, then a question about the pool.
fn pool_then_chatter(n: usize) -> Vec<Message> {
    let mut rounds = vec![(
        "Hello, I have a few questions today.".to_string(),
        "Hello! Ask away.".to_string(),
    )];
    rounds.push((
        "How should we size the Postgres connection pool?".to_string(),
        "Run pgbouncer in front of Postgres with a pool of 20 connections.".to_string(),
    ));
    rounds.extend((0..n).map(|i| {
        (
            format!("What did you do on day {i}?"),
            format!(
                "I walked and read on day {i}. {}",
                "Nothing else. ".repeat(280)
            ),
        )
    }));
    let rounds: Vec<(&str, &str)> = rounds
        .iter()
        .map(|(q, a)| (q.as_str(), a.as_str()))
        .collect();
    chat(&rounds, "How big was the postgres pool again?")
}

#[tokio::test]
async fn a_round_past_the_horizon_is_no_longer_weighed() {
    let budget = Budget::tokens(2_000);
    // The covered turns' horizon, but at least the one without a limit.
    let horizon =
        memory_core::covered::horizon(&budget).max(memory_core::covered::UNLIMITED_HORIZON);
    // The pool's round ends at message 5: within reach while the messages
    // from its answer on (4..question) hold at most the horizon's tokens.
    // The most chatter rounds that leave it there, found by halving.
    let reach = |n: usize| async move {
        let m = pool_then_chatter(n);
        total_of(&m[4..m.len() - 1]).await
    };
    let (mut within, mut past) = (1, 1_000);
    assert!(reach(past).await > horizon);
    while past - within > 1 {
        let mid = (within + past) / 2;
        if reach(mid).await <= horizon {
            within = mid;
        } else {
            past = mid;
        }
    }
    let n = within;
    let (within, past) = (pool_then_chatter(n), pool_then_chatter(n + 1));

    let pool = &within[4];
    let (result, trace) = trim(&Thrift::new(), &within, &[0], budget).await;
    assert!(trace.reached_back, "the question reaches back to the pool");
    assert!(result.messages.contains(pool));

    // One round more, and the pool's round is past reach: the question
    // goes on from the context before, as any message does.
    let (result, trace) = trim(&Thrift::new(), &past, &[0], budget).await;
    assert!(result.fits && validate(&result.messages).is_empty());
    assert!(!trace.reached_back);
    assert!(!result.messages.contains(pool));
    // A fresh choice counts the rounds past reach among the rounds it
    // dropped: every earlier round (the greeting, the pool's, the chatter
    // and the question about the pool) was a candidate or past reach.
    let mut answered = past.clone();
    answered.push(Message::assistant("About that pool."));
    answered.push(Message::user("Thanks, and what did I do on day 3?"));
    let (result, trace) = trim(&Thrift::new(), &answered, &[0], budget).await;
    assert!(result.fits);
    assert!(!result.messages.contains(pool));
    assert!(trace.reached_back, "day 3 is within reach");
    assert_eq!(trace.rounds_dropped.before.count, n + 4);
}

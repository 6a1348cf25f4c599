//! WindowMemory and WindowDrop behaviour, case by case.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory_core::{
    Budget, History, InMemoryStore, Memory, MemoryError, Message, Pipeline, Selection, Store,
    TokenCounter, ToolCall, TrimResult, TrimStrategy, summary,
};
use memory_session::WindowMemory;
use memory_window::WindowDrop;

async fn rounds(memory: &mut WindowMemory, range: std::ops::RangeInclusive<usize>) {
    for i in range {
        memory.record(Message::user(format!("u{i}"))).await.unwrap();
        memory
            .record(Message::assistant(format!("a{i}")))
            .await
            .unwrap();
    }
}

/// The request "fix it" (2 tokens) and ten tool steps of 4 tokens (run 1,
/// {} 1, output 2), `c0` to `c9`.
async fn long_round(memory: &mut WindowMemory) {
    memory.record(Message::user("fix it")).await.unwrap();
    for i in 0..10 {
        let id = format!("c{i}");
        memory
            .record(Message::assistant_with_tools(
                "",
                vec![ToolCall::new(id.clone(), "run", "{}")],
            ))
            .await
            .unwrap();
        memory
            .record(Message::tool_result(id, "output"))
            .await
            .unwrap();
    }
}

fn calls(ids: &[&str]) -> Message {
    Message::assistant_with_tools(
        "",
        ids.iter()
            .map(|id| ToolCall::new(*id, "calc", "1+1"))
            .collect(),
    )
}

#[tokio::test]
async fn a_history_within_budget_is_returned_whole() {
    let mut memory = WindowMemory::new(1000);
    memory.record(Message::user("hello")).await.unwrap();
    memory.record(Message::assistant("hello!")).await.unwrap();
    assert_eq!(
        memory.context().await.unwrap(),
        vec![Message::user("hello"), Message::assistant("hello!")]
    );
}

// Tests about which history goes first turn the task off (`with_task(false)`)
// so that the first round may go like any other; the task's own tests follow
// `the_task_stays_while_older_rounds_go`.

#[tokio::test]
async fn the_oldest_rounds_go_first() {
    // Every "uN"/"aN" is one token: a round is 2, and 3 holds only one.
    let mut memory = WindowMemory::new(3).with_task(false);
    rounds(&mut memory, 1..=3).await;
    assert_eq!(
        memory.context().await.unwrap(),
        vec![Message::user("u3"), Message::assistant("a3")]
    );
    // Two rounds fit in 4.
    memory.set_max_tokens(4);
    assert_eq!(memory.context().await.unwrap().len(), 4);
}

#[tokio::test]
async fn the_task_stays_while_older_rounds_go() {
    // By default the first user message is the task: it stays, verbatim and
    // in place, while the rounds after it go oldest first.
    let mut memory = WindowMemory::new(3);
    rounds(&mut memory, 1..=3).await;
    let context = memory.fitted().await.unwrap();
    assert_eq!(
        context.messages,
        vec![
            Message::user("u1"),
            Message::user("u3"),
            Message::assistant("a3")
        ]
    );
    assert_eq!((context.tokens, context.fits), (3, true));
    // Under the floor (task 1 + newest round 2): kept, and said not to fit.
    memory.set_max_tokens(2);
    let context = memory.fitted().await.unwrap();
    assert_eq!(context.messages[0], Message::user("u1"));
    assert_eq!((context.tokens, context.fits), (3, false));
    // Turned off, the first round goes like any other.
    let mut memory = WindowMemory::new(3).with_task(false);
    rounds(&mut memory, 1..=3).await;
    assert_eq!(
        memory.context().await.unwrap(),
        vec![Message::user("u3"), Message::assistant("a3")]
    );
}

#[tokio::test]
async fn a_text_only_agent_keeps_its_task_among_observations() {
    // A text-only agent loop: each observation arrives as a user message,
    // so every step starts a new round and the newest user message is an
    // observation, not the task.
    let task = "Fix the failing test in parser.rs: the tokenizer drops a trailing comma.";
    let record = async |memory: &mut WindowMemory| {
        memory
            .record_protected(Message::system("You are a coding agent."))
            .await
            .unwrap();
        memory.record(Message::user(task)).await.unwrap();
        for i in 0..20 {
            memory
                .record(Message::assistant(format!("run step {i}")))
                .await
                .unwrap();
            memory
                .record(Message::user(format!("observation {i}: ok")))
                .await
                .unwrap();
        }
    };
    let mut memory = WindowMemory::new(60);
    record(&mut memory).await;
    let context = memory.fitted().await.unwrap();
    assert!(context.fits && context.tokens <= 60);
    assert_eq!(
        context.messages[0],
        Message::system("You are a coding agent.")
    );
    assert_eq!(context.messages[1], Message::user(task));
    assert_eq!(
        context.messages.last(),
        Some(&Message::user("observation 19: ok"))
    );
    // Older steps went: the newest ones fill what the task leaves.
    assert!(!context.messages.contains(&Message::assistant("run step 0")));
    assert!(
        context
            .messages
            .contains(&Message::assistant("run step 19"))
    );
    // Without the task in the floor it goes with the oldest steps.
    let mut memory = WindowMemory::new(60).with_task(false);
    record(&mut memory).await;
    let context = memory.context().await.unwrap();
    assert!(!context.contains(&Message::user(task)));
}

#[tokio::test]
async fn after_a_follow_up_the_long_round_before_it_keeps_its_task_and_newest_steps() {
    // The task, ten tool steps of 4 tokens, then a follow-up request that
    // starts a new round: the older round does not fit whole, so it keeps
    // its request (the task) and as many of its newest steps as fit.
    let mut memory = WindowMemory::new(20).with_index(None);
    long_round(&mut memory).await;
    memory
        .record(Message::user("Please continue working on the task"))
        .await
        .unwrap();
    memory.record(Message::assistant("ok")).await.unwrap();
    // "fix it" 2 + the follow-up 9 + "ok" 1 = 12; two steps (8) fill 20.
    let context = memory.fitted().await.unwrap();
    assert_eq!((context.tokens, context.fits), (20, true));
    assert_eq!(context.messages[0], Message::user("fix it"));
    assert_eq!(context.messages[1].tool_calls()[0].id, "c8");
    assert_eq!(context.messages[3].tool_calls()[0].id, "c9");
    assert_eq!(
        context.messages[5],
        Message::user("Please continue working on the task")
    );
    assert!(memory_core::validate(&context.messages).is_empty());
}

#[tokio::test]
async fn parallel_tool_calls_leave_with_their_results() {
    // Round 1: "calculate" 3 + two calls (name 1 + args 1 each) + results 1 + 1 = 9.
    // Round 2: "continue" 2 + "okay" 1 = 3. Budget 8 keeps round 2 only.
    let mut memory = WindowMemory::new(8).with_task(false);
    memory.record(Message::user("calculate")).await.unwrap();
    memory.record(calls(&["t1", "t2"])).await.unwrap();
    memory
        .record(Message::tool_result("t2", "4"))
        .await
        .unwrap();
    memory
        .record(Message::tool_result("t1", "2"))
        .await
        .unwrap();
    memory.record(Message::user("continue")).await.unwrap();
    memory.record(Message::assistant("okay")).await.unwrap();
    let context = memory.context().await.unwrap();
    assert_eq!(
        context,
        vec![Message::user("continue"), Message::assistant("okay")]
    );
    assert!(memory_core::validate(&context).is_empty());
}

#[tokio::test]
async fn an_unprotected_system_message_can_be_dropped() {
    let mut memory = WindowMemory::new(3).with_task(false);
    memory.record(Message::system("setup")).await.unwrap();
    rounds(&mut memory, 1..=2).await;
    assert_eq!(
        memory.context().await.unwrap(),
        vec![Message::user("u2"), Message::assistant("a2")]
    );
}

#[tokio::test]
async fn protected_messages_survive_in_place() {
    let mut memory = WindowMemory::new(5).with_task(false);
    memory
        .record_protected(Message::system("setup"))
        .await
        .unwrap();
    rounds(&mut memory, 1..=1).await;
    memory
        .record_protected(Message::user("always answer in French"))
        .await
        .unwrap();
    memory.record(Message::assistant("d'accord")).await.unwrap();
    rounds(&mut memory, 2..=4).await;
    // Floor: setup 2 + protected round's user message 6; that alone is over 5.
    let result = memory.trimmed().await.unwrap();
    assert!(!result.fits);
    memory.set_max_tokens(13);
    let context = memory.context().await.unwrap();
    assert_eq!(
        context,
        vec![
            Message::system("setup"),
            Message::user("always answer in French"),
            Message::user("u3"),
            Message::assistant("a3"),
            Message::user("u4"),
            Message::assistant("a4"),
        ]
    );
}

#[tokio::test]
async fn a_long_agent_round_keeps_its_question_and_newest_steps() {
    let mut memory = WindowMemory::new(16);
    memory
        .record_protected(Message::system("agent"))
        .await
        .unwrap();
    long_round(&mut memory).await;
    memory.record(Message::assistant("done")).await.unwrap();
    // agent 2 + "fix it" 2 + "done" 1 = 5 fixed; each step is run 1 + {} 1
    // + output 2 = 4, so two of the ten steps fit in the 11 left.
    let context = memory.context().await.unwrap();
    assert_eq!(context.len(), 2 + 2 * 2 + 1);
    assert_eq!(context[0], Message::system("agent"));
    assert_eq!(context[1], Message::user("fix it"));
    assert_eq!(context[2].tool_calls()[0].id, "c8");
    assert_eq!(context[4].tool_calls()[0].id, "c9");
    assert_eq!(context[6], Message::assistant("done"));
    assert!(memory_core::validate(&context).is_empty());
}

#[tokio::test]
async fn the_floor_is_kept_and_reported_when_it_does_not_fit() {
    let mut memory = WindowMemory::new(3);
    memory
        .record(Message::user(
            "An extremely long user message, over budget in a single round",
        ))
        .await
        .unwrap();
    memory.record(Message::assistant("Reply")).await.unwrap();
    let result = memory.trimmed().await.unwrap();
    assert_eq!(result.messages.len(), 2);
    assert!(!result.fits);
}

#[tokio::test]
async fn the_rounds_limit_keeps_the_newest_rounds() {
    let mut memory = WindowMemory::new(1000)
        .with_max_rounds(2)
        .with_task(false)
        .with_index(None);
    rounds(&mut memory, 1..=4).await;
    assert_eq!(
        memory.context().await.unwrap(),
        vec![
            Message::user("u3"),
            Message::assistant("a3"),
            Message::user("u4"),
            Message::assistant("a4"),
        ]
    );
}

#[tokio::test]
async fn the_smaller_of_tokens_and_rounds_wins() {
    let mut memory = WindowMemory::new(3).with_max_rounds(3).with_task(false);
    rounds(&mut memory, 1..=4).await;
    assert_eq!(memory.context().await.unwrap().len(), 2);
}

#[tokio::test]
async fn raising_the_budget_brings_history_back() {
    let mut memory = WindowMemory::new(3).with_task(false);
    rounds(&mut memory, 1..=2).await;
    assert_eq!(memory.context().await.unwrap().len(), 2);
    memory.set_max_tokens(1000);
    assert_eq!(memory.context().await.unwrap().len(), 4);
}

#[tokio::test]
async fn reasoning_counts_against_the_budget() {
    let mut memory = WindowMemory::new(11).with_task(false);
    memory.record(Message::user("u1")).await.unwrap();
    memory
        .record(Message::Assistant {
            content: "hi".into(),
            reasoning: Some("a".repeat(40)),
            tool_calls: Vec::new(),
        })
        .await
        .unwrap();
    rounds(&mut memory, 2..=2).await;
    // Round 1 is 1 + 1 + 10 = 12 tokens: over 11 only because of reasoning.
    assert_eq!(memory.context().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_history_without_user_messages_is_cut_by_steps() {
    let mut memory = WindowMemory::new(1);
    memory
        .record(Message::assistant("assistant-only message"))
        .await
        .unwrap();
    assert_eq!(memory.context().await.unwrap().len(), 1);
    memory.record(Message::assistant("a")).await.unwrap();
    assert_eq!(
        memory.context().await.unwrap(),
        vec![Message::assistant("a")]
    );
}

/// Counts one token per message and how often it was asked.
#[derive(Default)]
struct OnePerMessage(AtomicUsize);

#[async_trait::async_trait]
impl TokenCounter for OnePerMessage {
    async fn count(&self, _text: &str) -> Result<usize, MemoryError> {
        Ok(1)
    }
    async fn count_message(&self, _message: &Message) -> Result<usize, MemoryError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(1)
    }
}

#[tokio::test]
async fn each_message_is_counted_once_by_the_injected_counter() {
    let counter = Arc::new(OnePerMessage::default());
    let mut memory = WindowMemory::new(2)
        .with_token_counter(counter.clone())
        .with_task(false)
        .with_index(None);
    rounds(&mut memory, 1..=3).await;
    for _ in 0..5 {
        assert_eq!(memory.context().await.unwrap().len(), 2);
    }
    assert_eq!(counter.0.load(Ordering::SeqCst), 6);
}

/// Replaces everything before the newest round by a summary (materializes).
struct Fold;

#[async_trait::async_trait]
impl TrimStrategy for Fold {
    fn name(&self) -> &str {
        "fold"
    }
    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        _counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let messages = history.messages();
        let cut = memory_core::structure::current_question(messages).unwrap_or(0);
        if cut == 0 || budget.admits_tokens(history.total()) {
            return Ok(TrimResult::unchanged(history, budget));
        }
        let mut selection = Selection::new(history);
        selection.push(summary::message(format!("{cut} messages")), 3, true);
        selection.keep(cut..messages.len());
        Ok(selection.finish(true, true))
    }
}

#[tokio::test]
async fn a_materializing_strategy_writes_back_and_keeps_the_original_readable() {
    let store = Arc::new(InMemoryStore::new());
    let mut memory = WindowMemory::new(5)
        .with_strategy(Fold)
        .with_store(store.clone(), "s");
    rounds(&mut memory, 1..=3).await;
    let context = memory.context().await.unwrap();
    assert_eq!(context[0], summary::message("4 messages"));
    assert_eq!(memory.len(), 3);
    let view = store.load("s").await.unwrap();
    assert_eq!(view.messages.len(), 3);
    assert!(view.messages[0].protected);
    assert_eq!(memory.history().await.unwrap().len(), 6);
    assert_eq!(store.replaced("s").await.unwrap()[0].len(), 6);
    // Nothing to do on the next call: the view now fits.
    assert_eq!(memory.context().await.unwrap(), context);
}

#[tokio::test]
async fn fitted_says_how_big_the_context_is_and_whether_it_fits() {
    let mut memory = WindowMemory::new(3).with_task(false);
    rounds(&mut memory, 1..=3).await;
    let context = memory.fitted().await.unwrap();
    assert_eq!(context.messages, memory.context().await.unwrap());
    assert_eq!((context.tokens, context.fits), (2, true));
    // A floor over the budget: the newest round alone is 2 tokens.
    memory.set_max_tokens(1);
    let context = memory.fitted().await.unwrap();
    assert_eq!((context.tokens, context.fits), (2, false));
}

#[tokio::test]
async fn the_view_and_the_history_are_open_to_inspection() {
    // The view holds each message with its count and protection.
    let mut memory = WindowMemory::new(100);
    memory
        .record_protected(Message::system("rules"))
        .await
        .unwrap();
    memory.record(Message::user("u1")).await.unwrap();
    let view = memory.view().await.unwrap();
    assert_eq!(view.len(), 2);
    assert!(view[0].protected && !view[1].protected);
    assert_eq!((view[0].tokens, view[1].tokens), (2, 1));

    // After a materializing trim the view is what was stored; the history
    // still holds everything recorded.
    let mut memory = WindowMemory::new(5).with_strategy(Fold);
    rounds(&mut memory, 1..=3).await;
    assert_eq!(memory.view().await.unwrap().len(), 6);
    let context = memory.fitted().await.unwrap();
    let view: Vec<Message> = memory
        .view()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.message)
        .collect();
    assert_eq!(view, context.messages);
    assert_eq!(view[0], summary::message("4 messages"));
    assert_eq!(memory.history().await.unwrap().len(), 6);
}

#[tokio::test]
async fn a_projection_leaves_the_store_alone() {
    let store = Arc::new(InMemoryStore::new());
    let mut memory = WindowMemory::new(3)
        .with_store(store.clone(), "s")
        .with_task(false);
    rounds(&mut memory, 1..=3).await;
    assert_eq!(memory.context().await.unwrap().len(), 2);
    assert_eq!(store.load("s").await.unwrap().messages.len(), 6);
    assert!(store.replaced("s").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_pipeline_stores_what_materialized_and_shows_what_was_projected() {
    let store = Arc::new(InMemoryStore::new());
    let mut memory = WindowMemory::new(4)
        .with_strategy(Pipeline::new().then(Fold).then(WindowDrop::new()))
        .with_store(store.clone(), "s");
    rounds(&mut memory, 1..=3).await;
    memory.record(Message::assistant("more")).await.unwrap();
    // Fold: [summary 3, u3, a3, more] = 6 > 4, so WindowDrop projects down
    // to the floor. The stored view is over the budget still, so the fit
    // of it folds once more (this Fold does not merge summaries): what
    // that second compaction lands is shown, and stored.
    let shown = memory.context().await.unwrap();
    assert_eq!(
        shown,
        vec![
            summary::message("1 messages"),
            Message::user("u3"),
            Message::assistant("more")
        ]
    );
    let stored: Vec<Message> = store
        .load("s")
        .await
        .unwrap()
        .messages
        .into_iter()
        .map(|s| s.message)
        .collect();
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[0], summary::message("1 messages"));
    assert_eq!(store.replaced("s").await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_reopened_session_has_the_same_context_without_recounting() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut memory = WindowMemory::new(3)
        .with_store(store.clone(), "s")
        .with_index(None);
    memory
        .record_protected(Message::system("sys"))
        .await
        .unwrap();
    rounds(&mut memory, 1..=3).await;
    let before = memory.context().await.unwrap();
    drop(memory);
    let counter = Arc::new(OnePerMessage::default());
    let mut reopened = WindowMemory::new(3)
        .with_store(store, "s")
        .with_index(None)
        .with_token_counter(counter.clone());
    assert_eq!(reopened.context().await.unwrap(), before);
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn two_memories_on_one_session_see_each_others_appends() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut a = WindowMemory::new(100).with_store(store.clone(), "shared");
    let mut b = WindowMemory::new(100).with_store(store.clone(), "shared");
    a.record(Message::user("from a")).await.unwrap();
    b.record(Message::user("from b")).await.unwrap();
    a.record(Message::assistant("a again")).await.unwrap();
    assert_eq!(
        a.context().await.unwrap(),
        vec![
            Message::user("from a"),
            Message::user("from b"),
            Message::assistant("a again")
        ]
    );
}

#[tokio::test]
async fn trimming_a_fitting_window_again_changes_nothing() {
    let mut memory = WindowMemory::new(5);
    rounds(&mut memory, 1..=5).await;
    let first = memory.trimmed().await.unwrap();
    let again = WindowDrop::new()
        .trim_with_counts(
            &first.as_history().unwrap(),
            &Budget::tokens(5),
            &memory_core::CharTokenCounter,
        )
        .await
        .unwrap();
    assert_eq!(again.messages, first.messages);
}

#[tokio::test]
async fn a_memory_keeping_its_session_in_itself_matches_one_over_a_store() {
    let store = Arc::new(InMemoryStore::new());
    let mut own = WindowMemory::new(5).with_strategy(Fold);
    let mut stored = WindowMemory::new(5)
        .with_strategy(Fold)
        .with_store(store.clone(), "s");
    for range in [1..=3, 4..=5, 6..=6, 7..=9] {
        for memory in [&mut own, &mut stored] {
            rounds(memory, range.clone()).await;
        }
        assert_eq!(own.fitted().await.unwrap(), stored.fitted().await.unwrap());
        assert_eq!(own.view().await.unwrap(), stored.view().await.unwrap());
        assert_eq!(
            own.history().await.unwrap(),
            stored.history().await.unwrap()
        );
    }
    assert_eq!(own.history().await.unwrap().len(), 18);
    assert!(store.replaced("s").await.unwrap().len() >= 2);
}

#[tokio::test]
async fn a_summary_s_covered_turns_stand_before_the_oldest_turn_kept() {
    use memory_core::covered::{Covered, Expanded};
    // A summary, the turns after it, and the turns it stands for, which
    // stood right before "u1".
    let m = vec![
        summary::message("so far"),
        Message::user("u1"),
        Message::assistant("a1"),
        Message::user("u2"),
        Message::assistant("a2"),
        Message::user("u3"),
    ];
    let counts = [5, 4, 4, 4, 4, 4];
    let covered = Covered::new(
        vec![Message::user("u0"), Message::assistant("a0")],
        vec![4, 4],
    )
    .unwrap()
    .before(Some(Message::user("u1")));
    let history = History::new(&m, &counts).unwrap().with_covered(covered);
    // The oldest round after the summary goes: the set now stands before
    // the oldest round kept, and a stage after this one can place it.
    let result = WindowDrop::new().window(&history, &Budget::tokens(21));
    assert_eq!(result.messages[1], Message::user("u2"));
    assert_eq!(result.covered.next(), Some(&Message::user("u2")));
    let view = result.as_history().unwrap();
    let expanded = Expanded::of(&view).unwrap();
    assert_eq!(expanded.covered_range(), 1..3);
    assert_eq!(expanded.history().messages()[1], Message::user("u0"));
    // Kept whole, the set stays where it was.
    let whole = WindowDrop::new().window(&history, &Budget::tokens(100));
    assert_eq!(whole.covered.next(), Some(&Message::user("u1")));
    // A protected note kept among the rounds dropped is newer than the
    // set: the set stands before it.
    let covered = history.covered().clone();
    let mut noted = m.clone();
    noted.insert(3, Message::system("note"));
    let counts = [5, 4, 4, 2, 4, 4, 4];
    let history = History::new(&noted, &counts)
        .unwrap()
        .protect(&[3])
        .with_covered(covered);
    let result = WindowDrop::new().window(&history, &Budget::tokens(21));
    assert_eq!(result.messages[1], Message::system("note"));
    assert_eq!(result.messages[2], Message::user("u2"));
    assert_eq!(result.covered.next(), Some(&Message::system("note")));
    let view = result.as_history().unwrap();
    let expanded = Expanded::of(&view).unwrap();
    assert_eq!(expanded.covered_range(), 1..3);
}

#[tokio::test]
async fn the_index_lists_what_is_left_out_and_each_line_recalls_it_whole() {
    use memory_core::recall::{Handle, RecallRequest, max_reachable_tokens};
    use memory_session::left_out;
    let budget = 600;
    let mut memory = WindowMemory::new(budget);
    memory
        .record(Message::user("Plan the garden by the shed."))
        .await
        .unwrap();
    for turn in 0..12 {
        let note = format!("Bed {turn}: tomatoes, basil and marigolds. ").repeat(6);
        memory.record(Message::assistant(note)).await.unwrap();
        let question = Message::user(format!("And bed {}?", turn + 1));
        memory.record(question).await.unwrap();
    }
    let result = memory.trimmed().await.unwrap();
    assert!(result.fits);
    let at = result
        .messages
        .iter()
        .position(left_out::is_index)
        .expect("rounds were left out, so the context indexes them");
    assert!(result.counts[at] * 10 <= budget, "{}", result.counts[at]);
    let handles = Handle::all_in(&result.messages[at].text());
    assert!(!handles.is_empty());
    let mut listed = Vec::new();
    for handle in &handles {
        let back = memory
            .recall(&RecallRequest::new(handle.to_string()))
            .await
            .unwrap();
        assert!(back.whole, "{handle} is within one recall's reach");
        assert!(back.tokens <= max_reachable_tokens(&Budget::tokens(budget)));
        assert_eq!(Handle::of(&back.messages), *handle);
        for message in &back.messages {
            assert!(!result.messages.contains(message), "{message:?} is shown");
        }
        listed.extend(back.messages);
    }
    // The lines name left-out history, each piece once.
    let mut unique = listed.clone();
    unique.dedup();
    assert_eq!(unique.len(), listed.len());
    // Turned off, the same session has no index.
    let mut plain = WindowMemory::new(budget).with_index(None);
    for message in memory.history().await.unwrap() {
        plain.record(message).await.unwrap();
    }
    let context = plain.context().await.unwrap();
    assert!(!context.iter().any(left_out::is_index));
    // (At a question, a second index stands right before it.)
    let mut without = result.messages.clone();
    without.retain(|m| !left_out::is_index(m));
    assert_eq!(
        context, without,
        "the index takes only room the strategy left"
    );
}

/// `memory`'s context within `budget`, and where its index stands (the
/// room kept for it, after a floor cut).
async fn trimmed_with_index(memory: &mut WindowMemory, budget: usize) -> (TrimResult, usize) {
    let result = memory.trimmed().await.unwrap();
    assert!(result.fits && result.tokens() <= budget);
    let at = result
        .messages
        .iter()
        .position(memory_session::left_out::is_index);
    (result, at.expect("an index in the room kept for it"))
}

#[tokio::test]
async fn a_floor_cut_to_fit_leaves_the_index_its_room() {
    use memory_core::recall::{RecallRequest, max_reachable_tokens};
    // A text-only agent: each observation comes back as a user message,
    // the newest far over the budget.
    let budget = 2_000;
    let mut memory = WindowMemory::new(budget);
    memory
        .record_protected(Message::system("You are a coding agent."))
        .await
        .unwrap();
    memory
        .record(Message::user("Fix the parser."))
        .await
        .unwrap();
    for step in 0..8 {
        memory
            .record(Message::assistant(format!("Step {step}: run the tests.")))
            .await
            .unwrap();
        let lines = if step == 7 { 2_000 } else { 60 };
        let observation = (0..lines)
            .map(|i| format!("step {step} line {i}: test_parse_{i} ok\n"))
            .collect::<String>();
        memory.record(Message::user(observation)).await.unwrap();
    }
    let (result, at) = trimmed_with_index(&mut memory, budget).await;
    // The index's handles and the cut's parts each come back whole, in reach.
    let max = max_reachable_tokens(&Budget::tokens(budget));
    let newest = result.messages.last().unwrap().text();
    let handles = memory_core::recall::handles_in(&result.messages);
    assert!(handles.len() > 1, "{handles:?}");
    assert!(!memory_core::recall::Handle::all_in(&newest).is_empty());
    for handle in handles.iter().flat_map(|h| h.each_part()) {
        let back = memory
            .recall(&RecallRequest::new(handle.to_string()))
            .await
            .unwrap();
        assert!(
            back.whole && back.tokens <= max,
            "{handle}: {}",
            back.tokens
        );
    }
    assert!(result.counts[at] > 0);
}

#[tokio::test]
async fn a_floor_within_the_budget_but_over_the_strategy_room_is_cut_for_the_index() {
    // A long system prompt, then a text-only agent's steps; the newest
    // step's observation brings the floor to 1,975 tokens: within the
    // budget of 2,000 (the 25 left too few for an index of the older
    // steps), over the 1,900 the strategy has beside the index.
    let budget = 2_000;
    let counter = memory_core::CharTokenCounter;
    let observation = |step: usize| {
        (0..60)
            .map(|i| format!("step {step} line {i}: test_parse_{i} ok\n"))
            .collect::<String>()
    };
    let newest = [
        Message::user("Fix the parser."),
        Message::assistant("Step 7: run the tests."),
        Message::user(observation(7)),
    ];
    let mut floor = 0;
    for m in &newest {
        floor += counter.count_message(m).await.unwrap();
    }
    let prompt = Message::system("r".repeat(4 * (1_975 - floor)));
    floor += counter.count_message(&prompt).await.unwrap();
    assert!((1_970..=1_980).contains(&floor), "{floor}");
    let mut memory = WindowMemory::new(budget);
    memory.record_protected(prompt).await.unwrap();
    memory.record(newest[0].clone()).await.unwrap();
    for step in 0..7 {
        let command = format!("Step {step}: run the tests.");
        memory.record(Message::assistant(command)).await.unwrap();
        memory
            .record(Message::user(observation(step)))
            .await
            .unwrap();
    }
    memory.record(newest[1].clone()).await.unwrap();
    memory.record(newest[2].clone()).await.unwrap();
    let (result, at) = trimmed_with_index(&mut memory, budget).await;
    // The index had room to name every older step.
    let mut named = Vec::new();
    for handle in memory_core::recall::Handle::all_in(&result.messages[at].text()) {
        let request = memory_core::recall::RecallRequest::new(handle.to_string());
        named.extend(memory.recall(&request).await.unwrap().messages);
    }
    for step in 0..7 {
        let seen = Message::user(observation(step));
        assert!(
            named.contains(&seen),
            "step {step}: {}",
            result.messages[at].text()
        );
    }
    // The newest observation was cut, and names what it left out.
    let shown = result.messages.last().unwrap().text();
    assert!(shown.len() < newest[2].text().len());
    assert!(!memory_core::recall::Handle::all_in(&shown).is_empty());
}

#[tokio::test]
async fn the_index_names_the_turns_compactions_folded_away() {
    let budget = 1_000;
    let mut memory = WindowMemory::new(budget).with_strategy(memory_core::test_util::FoldOld);
    let said = plan_beds(&mut memory, 30, |turn| {
        format!("Bed {turn}: tomatoes and basil. ").repeat(8)
    })
    .await;
    let view = memory.view().await.unwrap();
    assert!(view.len() + 20 < said.len(), "compactions folded the turns");
    folded_turns_are_indexed(&mut memory, &said, budget).await;
}

/// A session longer than the covered set's horizon, opened again from its
/// store: the turns folded beyond the horizon are indexed again, as they
/// were before it was closed, so a question about one finds its handle.
#[tokio::test]
async fn a_session_opened_again_indexes_the_turns_folded_beyond_the_horizon() {
    let budget = 1_000;
    let store = Arc::new(InMemoryStore::new());
    let open = || {
        WindowMemory::new(budget)
            .with_strategy(memory_core::test_util::FoldOld)
            .with_store(store.clone(), "s")
    };
    let mut memory = open();
    // About 50 tokens a turn: 800 turns hold more than the horizon (32
    // budgets, 32,000 tokens) by over a hundred turns.
    let mut said = plan_beds(&mut memory, 800, |turn| {
        format!(
            "Bed {turn}: {}, code w{turn:04}q.",
            "tomatoes and basil, ".repeat(7)
        )
    })
    .await;
    // A question about turn 3, folded long ago.
    let asked = Message::user("Which bed had the code w0003q?");
    memory.record(asked.clone()).await.unwrap();
    said.push(asked);
    let before = folded_turns_are_indexed(&mut memory, &said, budget).await;
    assert!(before.contains(&said[7]), "turn 3 is indexed");
    let mut reopened = open();
    let after = folded_turns_are_indexed(&mut reopened, &said, budget).await;
    // The covered set is back, and holds the newest turns only.
    let covered = reopened.covered();
    assert!(
        !covered.is_empty() && covered.len() + 200 < said.len(),
        "{} covered",
        covered.len()
    );
    assert!(!covered.messages().contains(&said[7]));
    assert!(
        after.contains(&said[7]),
        "turn 3 is indexed again once opened"
    );
}

/// Records the system prompt of a garden planner and `turns` turns (a
/// question about a bed and `answer` of its number) into `memory`, its
/// context within the budget after each; returns the turns.
async fn plan_beds(
    memory: &mut WindowMemory,
    turns: usize,
    answer: impl Fn(usize) -> String,
) -> Vec<Message> {
    memory
        .record_protected(Message::system("You plan gardens."))
        .await
        .unwrap();
    let mut said = Vec::new();
    for turn in 0..turns {
        let question = Message::user(format!("What goes in bed {turn}?"));
        let answer = Message::assistant(answer(turn));
        memory.record(question.clone()).await.unwrap();
        memory.record(answer.clone()).await.unwrap();
        said.push(question);
        said.push(answer);
        let result = memory.trimmed().await.unwrap();
        assert!(
            result.fits && memory.budget().admits_tokens(result.tokens()),
            "turn {turn}: {} tokens",
            result.tokens()
        );
    }
    said
}

/// Asserts that `memory`'s context has an index right after its summary
/// naming at least three pieces, each within one recall under `budget`
/// and made of turns `said` and no longer shown; returns the messages
/// they name.
async fn folded_turns_are_indexed(
    memory: &mut WindowMemory,
    said: &[Message],
    budget: usize,
) -> Vec<Message> {
    use memory_core::recall::{Handle, RecallRequest, max_reachable_tokens};
    use memory_session::left_out;
    let result = memory.trimmed().await.unwrap();
    let at = result
        .messages
        .iter()
        .position(left_out::is_index)
        .expect("the folded turns are indexed");
    assert!(memory_core::summary::is_summary(&result.messages[at - 1]));
    let handles = Handle::all_in(&result.messages[at].text());
    assert!(handles.len() >= 3, "{}", result.messages[at].text());
    let max = max_reachable_tokens(&Budget::tokens(budget));
    let mut named = Vec::new();
    for handle in handles {
        let back = memory
            .recall(&RecallRequest::new(handle.to_string()))
            .await
            .unwrap();
        assert!(back.whole);
        let counts = memory_core::count_messages(&memory_core::CharTokenCounter, &back.messages)
            .await
            .unwrap();
        assert!(counts.iter().sum::<usize>() <= max, "{handle}: {counts:?}");
        // Each names turns said and no longer in the view.
        for m in &back.messages {
            assert!(said.contains(m) && !result.messages.contains(m), "{m:?}");
        }
        named.extend(back.messages);
    }
    named
}

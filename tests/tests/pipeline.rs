//! `Pipeline`'s storage rule: what is stored is the output of the longest
//! leading run of stages that materialized or changed nothing; what is shown
//! is the last output; a projection never reaches storage.

use memory_core::{
    Budget, CharTokenCounter, History, MemoryError, Message, Pipeline, Selection, TokenCounter,
    TrimResult, TrimStrategy, summary,
};

/// Materializes: replaces the oldest half of the history with a summary.
struct SummarizeOldestHalf;

#[async_trait::async_trait]
impl TrimStrategy for SummarizeOldestHalf {
    fn name(&self) -> &str {
        "materialize"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let half = history.len() / 2;
        let summary = summary::message(format!("{half} earlier messages"));
        let tokens = counter.count_message(&summary).await?;
        let mut selection = Selection::new(history);
        selection.push(summary, tokens, true);
        selection.keep(half..history.len());
        let fits = budget.admits_tokens(tokens + history.tokens(half..history.len()));
        Ok(selection.finish(true, fits))
    }
}

/// Projects: drops the first message from view.
struct DropFirst;

#[async_trait::async_trait]
impl TrimStrategy for DropFirst {
    fn name(&self) -> &str {
        "project"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        _counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let mut selection = Selection::new(history);
        selection.keep(1.min(history.len())..history.len());
        let fits = budget.admits_tokens(history.tokens(1.min(history.len())..history.len()));
        Ok(selection.finish(false, fits))
    }
}

/// Changes nothing.
struct Noop;

#[async_trait::async_trait]
impl TrimStrategy for Noop {
    fn name(&self) -> &str {
        "noop"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        _counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        Ok(TrimResult::unchanged(history, budget))
    }
}

fn conversation() -> Vec<Message> {
    (1..=4)
        .flat_map(|i| {
            [
                Message::user(format!("question {i}")),
                Message::assistant(format!("answer {i}")),
            ]
        })
        .collect()
}

fn budget() -> Budget {
    Budget::tokens(1_000)
}

async fn run(strategy: &dyn TrimStrategy, messages: &[Message]) -> TrimResult {
    strategy
        .trim(messages, &budget(), &CharTokenCounter)
        .await
        .unwrap()
}

/// The summary the materializing stage makes of `n` messages, then the rest.
fn summarized(messages: &[Message]) -> Vec<Message> {
    let half = messages.len() / 2;
    let mut out = vec![summary::message(format!("{half} earlier messages"))];
    out.extend_from_slice(&messages[half..]);
    out
}

#[tokio::test]
async fn the_hand_written_stages_do_what_they_say() {
    let input = conversation();
    let m = run(&SummarizeOldestHalf, &input).await;
    assert_eq!(m.messages, summarized(&input));
    assert!(m.replace);
    assert_eq!(m.protected, vec![0]);
    let p = run(&DropFirst, &input).await;
    assert_eq!(p.messages, input[1..].to_vec());
    assert!(!p.replace);
    let n = run(&Noop, &input).await;
    assert_eq!(n.messages, input);
    assert!(!n.replace);
}

#[tokio::test]
async fn materialize_then_project_stores_the_first_and_shows_the_second() {
    let input = conversation();
    let pipeline = Pipeline::new().then(SummarizeOldestHalf).then(DropFirst);
    let result = run(&pipeline, &input).await;
    let stored = summarized(&input);
    assert_eq!(result.messages, stored[1..].to_vec());
    assert!(!result.replace);
    let write_back = result
        .write_back
        .as_deref()
        .expect("the materialized output");
    assert_eq!(write_back.messages, stored);
    assert_eq!(write_back.protected, vec![0]);
    assert_eq!(write_back.counts.len(), stored.len());
    assert!(write_back.write_back.is_none());
    assert_eq!(result.to_store().map(|r| &r.messages), Some(&stored));
}

#[tokio::test]
async fn project_then_materialize_stores_nothing() {
    let input = conversation();
    let pipeline = Pipeline::new().then(DropFirst).then(SummarizeOldestHalf);
    let result = run(&pipeline, &input).await;
    assert_eq!(result.messages, summarized(&input[1..]));
    assert!(!result.replace);
    assert!(result.write_back.is_none());
    assert!(result.to_store().is_none());
}

#[tokio::test]
async fn noop_then_materialize_replaces() {
    let input = conversation();
    let pipeline = Pipeline::new().then(Noop).then(SummarizeOldestHalf);
    let result = run(&pipeline, &input).await;
    assert_eq!(result.messages, summarized(&input));
    assert!(result.replace);
    assert!(result.write_back.is_none());
    assert_eq!(result.to_store(), Some(&result));
}

#[tokio::test]
async fn materialize_then_noop_replaces() {
    let input = conversation();
    let pipeline = Pipeline::new().then(SummarizeOldestHalf).then(Noop);
    let result = run(&pipeline, &input).await;
    assert_eq!(result.messages, summarized(&input));
    assert!(result.replace);
    assert!(result.write_back.is_none());
    assert_eq!(result.to_store(), Some(&result));
    assert_eq!(result.protected, vec![0]);
}

#[tokio::test]
async fn project_only_stores_nothing() {
    let input = conversation();
    let pipeline = Pipeline::new().then(DropFirst);
    let result = run(&pipeline, &input).await;
    assert_eq!(result.messages, input[1..].to_vec());
    assert!(!result.replace);
    assert!(result.write_back.is_none());
    assert!(result.to_store().is_none());
}

#[tokio::test]
async fn an_empty_pipeline_shows_the_input_and_stores_nothing() {
    let input = conversation();
    let result = run(&Pipeline::new(), &input).await;
    assert_eq!(result.messages, input);
    assert!(!result.replace);
    assert!(result.fits);
    assert!(result.to_store().is_none());
    let empty = run(&Pipeline::new(), &[]).await;
    assert!(empty.messages.is_empty() && empty.to_store().is_none());
}

#[tokio::test]
async fn a_pipeline_that_changes_nothing_stores_nothing() {
    let input = conversation();
    let result = run(&Pipeline::new().then(Noop).then(Noop), &input).await;
    assert_eq!(result.messages, input);
    assert!(result.to_store().is_none());
}

#[tokio::test]
async fn the_last_of_consecutive_materializations_is_stored() {
    let input = conversation();
    let pipeline = Pipeline::new()
        .then(SummarizeOldestHalf)
        .then(Noop)
        .then(SummarizeOldestHalf);
    let result = run(&pipeline, &input).await;
    assert_eq!(result.messages, summarized(&summarized(&input)));
    assert!(result.replace);
    assert_eq!(result.to_store(), Some(&result));
    assert_eq!(result.protected, vec![0]);
}

#[tokio::test]
async fn nothing_computed_from_a_projection_is_stored() {
    let input = conversation();
    let pipeline = Pipeline::new()
        .then(SummarizeOldestHalf)
        .then(DropFirst)
        .then(SummarizeOldestHalf);
    let result = run(&pipeline, &input).await;
    assert_eq!(result.messages, summarized(&summarized(&input)[1..]));
    assert!(!result.replace);
    assert_eq!(
        result.to_store().map(|r| r.messages.clone()),
        Some(summarized(&input))
    );
}

#[tokio::test]
async fn a_noop_after_a_materialization_keeps_the_run_open() {
    let input = conversation();
    let pipeline = Pipeline::new()
        .then(SummarizeOldestHalf)
        .then(Noop)
        .then(DropFirst);
    let result = run(&pipeline, &input).await;
    assert_eq!(result.messages, summarized(&input)[1..].to_vec());
    assert!(!result.replace);
    assert_eq!(
        result.to_store().map(|r| r.messages.clone()),
        Some(summarized(&input))
    );
}

#[tokio::test]
async fn a_nested_pipeline_hands_its_stored_output_up() {
    let input = conversation();
    let inner = Pipeline::new().then(SummarizeOldestHalf).then(DropFirst);
    let outer = Pipeline::new().then(inner).then(Noop);
    assert_eq!(outer.name(), "materialize,project,noop");
    let result = run(&outer, &input).await;
    assert_eq!(result.messages, summarized(&input)[1..].to_vec());
    assert!(!result.replace);
    assert_eq!(
        result.to_store().map(|r| r.messages.clone()),
        Some(summarized(&input))
    );
}

//! Thrift's relevance: the scorer is pluggable, neighbours of a strongly
//! relevant turn come with it, and a failing scorer never fails a turn.

use memory_core::test_util::FakeEmbedder;
use memory_core::{
    Budget, CharTokenCounter, History, MemoryError, Message, ProviderError, TrimResult,
    count_messages, structure, validate,
};
use memory_thrift::{Lexical, Relevance, Semantic, Thrift};

/// A chat: `rounds` of (request, reply), then `question`.
fn chat(rounds: &[(String, String)], question: &str) -> Vec<Message> {
    let mut m = vec![Message::system("You are a helpful assistant.")];
    for (q, a) in rounds {
        m.push(Message::user(q.as_str()));
        m.push(Message::assistant(a.as_str()));
    }
    m.push(Message::user(question));
    m
}

/// Twelve rounds of chatter with the garden story in rounds 5 and 6: round
/// 5 names the roses, round 6 only follows on from it.
fn story() -> Vec<(String, String)> {
    let mut rounds: Vec<(String, String)> = (0..12)
        .map(|i| {
            (
                format!("Round {i}: what a day it has been, honestly."),
                format!("Round {i}: sounds like quite a day for you."),
            )
        })
        .collect();
    rounds[5] = (
        "I planted climbing roses along the south fence of the allotment.".into(),
        "Climbing roses on a south fence will flower beautifully by June.".into(),
    );
    rounds[6] = (
        "They cost me forty euros at the market stall near the station.".into(),
        "Forty euros at a market stall is a bargain for those.".into(),
    );
    rounds
}

/// Trims `m` at the tokens of its floor plus `extra`.
async fn trim_with(thrift: &Thrift, m: &[Message], extra: usize) -> TrimResult {
    let counts = count_messages(&CharTokenCounter, m).await.unwrap();
    let history = History::new(m, &counts).unwrap();
    let floor = structure::floor(&history).tokens;
    let budget = Budget::tokens(floor + extra);
    let (result, _) = thrift
        .trim_traced(&history, &budget, &CharTokenCounter)
        .await
        .unwrap();
    assert!(validate(&result.messages).is_empty());
    assert!(result.fits);
    result
}

fn holds(result: &TrimResult, text: &str) -> bool {
    result.messages.iter().any(|m| m.text() == text)
}

/// Tokens of the two story rounds and a little more.
async fn two_rounds(rounds: &[(String, String)]) -> usize {
    let m: Vec<Message> = rounds[5..7]
        .iter()
        .flat_map(|(q, a)| [Message::user(q.as_str()), Message::assistant(a.as_str())])
        .collect();
    count_messages(&CharTokenCounter, &m)
        .await
        .unwrap()
        .iter()
        .sum::<usize>()
        + 4
}

#[tokio::test]
async fn the_turn_after_a_strongly_relevant_one_comes_with_it() {
    let rounds = story();
    let m = chat(&rounds, "Where did I plant the climbing roses?");
    let result = trim_with(&Thrift::new(), &m, two_rounds(&rounds).await * 3 / 2).await;
    // Round 5 matches the question; round 6 shares no word with it, yet it
    // is what says what the roses cost: it comes before newer rounds that
    // match nothing either.
    assert!(holds(&result, &rounds[5].0), "{:?}", result.messages);
    assert!(holds(&result, &rounds[6].0), "{:?}", result.messages);
    assert!(!holds(&result, &rounds[11].0), "{:?}", result.messages);
}

/// Prefers the rounds that mention a market.
#[derive(Debug)]
struct Markets;

#[async_trait::async_trait]
impl Relevance for Markets {
    fn name(&self) -> &str {
        "markets"
    }
    async fn score(&self, _question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
        Ok(units
            .iter()
            .map(|texts| f64::from(u8::from(texts.iter().any(|t| t.contains("market")))))
            .collect())
    }
}

#[tokio::test]
async fn a_scorer_of_ones_own_decides_what_is_kept() {
    // A question that reaches back to the roses: the context is chosen
    // afresh, by whichever scorer Thrift has, with room for about one round.
    let rounds = story();
    let m = chat(&rounds, "Where did I plant the climbing roses?");
    let room = two_rounds(&rounds).await / 2 + 8;
    let lexical = trim_with(&Thrift::new(), &m, room).await;
    assert!(holds(&lexical, &rounds[5].0), "{:?}", lexical.messages);
    assert!(!holds(&lexical, &rounds[6].0), "{:?}", lexical.messages);
    let own = trim_with(&Thrift::new().with_relevance(Markets), &m, room).await;
    assert!(holds(&own, &rounds[6].0), "{:?}", own.messages);
    assert!(!holds(&own, &rounds[5].0), "{:?}", own.messages);
}

/// Always fails.
#[derive(Debug)]
struct Broken;

#[async_trait::async_trait]
impl Relevance for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    async fn score(&self, _question: &str, _units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
        Err(MemoryError::InvalidTranscript("scorer down".into()))
    }
}

/// Returns one score too few.
#[derive(Debug)]
struct Short;

#[async_trait::async_trait]
impl Relevance for Short {
    fn name(&self) -> &str {
        "short"
    }
    async fn score(&self, _question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
        Ok(vec![1.0; units.len().saturating_sub(1)])
    }
}

#[tokio::test]
async fn a_failing_scorer_leaves_recency_to_decide() {
    let rounds = story();
    let m = chat(&rounds, "Where did I plant the climbing roses?");
    let extra = two_rounds(&rounds).await;
    let lexical = trim_with(&Thrift::new(), &m, extra).await;
    assert!(holds(&lexical, &rounds[5].0));
    for thrift in [
        Thrift::new().with_relevance(Broken),
        Thrift::new().with_relevance(Short),
    ] {
        let result = trim_with(&thrift, &m, extra).await;
        assert!(
            !holds(&result, &rounds[5].0),
            "{}",
            thrift.relevance().name()
        );
        assert!(holds(&result, &rounds[11].0), "the newest round stays");
    }
}

#[tokio::test]
async fn semantic_relevance_falls_back_to_lexical_when_embedding_fails() {
    let rounds = story();
    let m = chat(&rounds, "Where did I plant the climbing roses?");
    let extra = two_rounds(&rounds).await;
    let lexical = trim_with(&Thrift::new().with_relevance(Lexical), &m, extra).await;
    let embedder = std::sync::Arc::new(FakeEmbedder::new(16));
    embedder.fail_after(0, ProviderError::Network("connection refused".into()));
    let semantic = Thrift::new().with_relevance(Semantic::new(embedder.clone()));
    let result = trim_with(&semantic, &m, extra).await;
    assert_eq!(result.messages, lexical.messages);
    assert!(!embedder.requests().is_empty(), "the embedder was asked");
}

#[tokio::test]
async fn semantic_relevance_asks_for_the_question_and_every_candidate() {
    let rounds = story();
    let question = "Where did I plant the climbing roses?";
    let m = chat(&rounds, question);
    let embedder = std::sync::Arc::new(FakeEmbedder::new(64));
    let thrift = Thrift::new().with_relevance(Semantic::new(embedder.clone()).with_weight(1.0));
    let result = trim_with(&thrift, &m, two_rounds(&rounds).await).await;
    let asked: Vec<String> = embedder.requests().concat();
    assert!(asked.iter().any(|t| t == question));
    assert!(
        asked
            .iter()
            .any(|t| t.contains("climbing roses on a south fence")
                || t.contains("Climbing roses on a south fence"))
    );
    // With the whole lift added, the roses round is still brought back.
    assert!(holds(&result, &rounds[5].0), "{:?}", result.messages);
}

#[tokio::test]
async fn a_thrift_that_resumes_its_replay_gives_what_a_fresh_one_gives() {
    // One instance trims each turn of a growing chat (and, between turns,
    // other questions of the same conversation); a fresh instance per trim
    // replays from scratch. The contexts are the same.
    let rounds: Vec<(String, String)> = (0..60)
        .map(|i| {
            (
                format!(
                    "Turn {i}: the garden had {} roses and a {i} metre fence.",
                    i * 3
                ),
                format!("Turn {i}: noted, {} roses along the fence.", i * 3),
            )
        })
        .collect();
    let resuming = Thrift::new();
    for turn in 1..rounds.len() {
        for question in [
            format!("How many roses were there at turn {}?", turn / 2),
            "Anything else?".to_string(),
        ] {
            let m = chat(&rounds[..turn], &question);
            let counts = count_messages(&CharTokenCounter, &m).await.unwrap();
            let history = History::new(&m, &counts).unwrap();
            let budget = Budget::tokens(400);
            let (again, _) = resuming
                .trim_traced(&history, &budget, &CharTokenCounter)
                .await
                .unwrap();
            let (fresh, _) = Thrift::new()
                .trim_traced(&history, &budget, &CharTokenCounter)
                .await
                .unwrap();
            assert_eq!(again.messages, fresh.messages, "turn {turn}: {question}");
        }
    }
}

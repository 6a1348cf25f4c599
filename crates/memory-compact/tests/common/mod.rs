//! Conversations of known sizes and providers that misbehave on purpose.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use memory_core::{
    ChatRequest, ChatResponse, FakeProvider, FakeReply, History, Message, Provider, ProviderError,
    StopReason, ToolCall, Usage,
};

/// What every text of these conversations is about, after its tag.
pub const TOPIC: &str = "lexer parser tokens grammar syntax ";

/// What a summarizer that read any of these conversations writes: the
/// topic's words, which every text begins with.
pub const GIST: &str = "lexer, parser, tokens, grammar and syntax";

/// `text` as a summarizer that read these conversations writes it: with
/// the [`GIST`] as its last line.
pub fn said(text: &str) -> String {
    format!("{text}\n{GIST}")
}

/// A text of exactly `chars` ASCII characters, starting with `tag` and
/// [`TOPIC`]: under `CharTokenCounter` it counts `ceil(chars / 4)` tokens.
pub fn text(tag: &str, chars: usize) -> String {
    let mut t = format!("{tag} {TOPIC}");
    while t.len() < chars {
        t.push('x');
    }
    t.truncate(chars);
    t
}

/// User message `u{i}` of 40 characters: 10 tokens.
pub fn user(i: usize) -> Message {
    Message::user(text(&format!("u{i}"), 40))
}

/// Assistant reply `a{i}` of 160 characters: 40 tokens.
pub fn reply(i: usize) -> Message {
    Message::assistant(text(&format!("a{i}"), 160))
}

/// A tool step: a call of `tool` with `arguments`, and its result of 40
/// characters (10 tokens). The step counts the tool name, the arguments
/// and the result.
pub fn tool_step(id: &str, tool: &str, arguments: &str) -> [Message; 2] {
    [
        Message::assistant_with_tools("", vec![ToolCall::new(id, tool, arguments)]),
        Message::tool_result(id, text(&format!("result {id}"), 40)),
    ]
}

/// A history's messages and counts, counted with `CharTokenCounter`.
pub async fn counted(messages: &[Message]) -> Vec<usize> {
    memory_core::count_messages(&memory_core::CharTokenCounter, messages)
        .await
        .unwrap()
}

/// A history over `messages` with `counts`, protecting `protected`.
pub fn history<'a>(
    messages: &'a [Message],
    counts: &'a [usize],
    protected: &[usize],
) -> History<'a> {
    History::new(messages, counts).unwrap().protect(protected)
}

/// `compact`'s trim of `messages`, counted with `CharTokenCounter`, with
/// `protected` protected (and the task, as by default), at `budget` tokens.
pub async fn trim_protected(
    compact: &memory_compact::Compact,
    messages: &[Message],
    protected: &[usize],
    budget: usize,
) -> memory_core::TrimResult {
    use memory_core::TrimStrategy;
    let counts = counted(messages).await;
    let history = history(messages, &counts, protected);
    compact
        .trim_with_counts(
            &history,
            &memory_core::Budget::tokens(budget),
            &memory_core::CharTokenCounter,
        )
        .await
        .unwrap()
}

/// The user text of request `k` (the transcript and instructions).
pub fn sent(fake: &FakeProvider, k: usize) -> String {
    fake.requests()[k].messages[1].text()
}

/// A provider that answers every call with `text`, up to `n` calls.
pub fn answering(text: &str, n: usize) -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new(std::iter::repeat_n(
        FakeReply::Text(said(text)),
        n,
    )))
}

/// A complete reply with this text and usage.
pub fn reply_with_usage(text: &str, input: u64, output: u64) -> FakeReply {
    FakeReply::Response(ChatResponse {
        message: Message::assistant(said(text)),
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
        },
        stop_reason: StopReason::Stop,
    })
}

/// Sets a flag when dropped: tells whether a future was dropped.
pub struct DropFlag(pub Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// How a [`Scripted`] provider behaves on one call.
#[derive(Debug, Clone)]
pub enum Act {
    /// Waits, then answers with this text.
    Answer(Duration, String),
    /// Never answers.
    Hang,
    /// Panics.
    Panic,
    /// Fails with this error.
    Fail(ProviderError),
}

/// A provider whose calls wait on tokio's clock, hang or panic, by script;
/// it counts calls, keeps requests, and notes when a call's future is
/// dropped before it finished.
pub struct Scripted {
    script: std::sync::Mutex<Vec<Act>>,
    pub calls: AtomicUsize,
    pub requests: std::sync::Mutex<Vec<ChatRequest>>,
    pub dropped: Arc<AtomicBool>,
    pub finished: AtomicUsize,
}

impl Scripted {
    /// Plays `acts` in order; the last one repeats.
    pub fn new(acts: Vec<Act>) -> Arc<Self> {
        Arc::new(Self {
            script: std::sync::Mutex::new(acts),
            calls: AtomicUsize::new(0),
            requests: std::sync::Mutex::new(Vec::new()),
            dropped: Arc::new(AtomicBool::new(false)),
            finished: AtomicUsize::new(0),
        })
    }

    /// Calls started so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Whether a call's future was dropped before it finished.
    pub fn was_dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Provider for Scripted {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let k = self.calls.fetch_add(1, Ordering::SeqCst);
        self.requests.lock().unwrap().push(request);
        let act = {
            let script = self.script.lock().unwrap();
            script
                .get(k)
                .or(script.last())
                .cloned()
                .unwrap_or(Act::Hang)
        };
        let flag = DropFlag(self.dropped.clone());
        let result = match act {
            Act::Answer(delay, text) => {
                tokio::time::sleep(delay).await;
                Ok(ChatResponse {
                    message: Message::assistant(text),
                    usage: Usage {
                        input_tokens: 100,
                        output_tokens: 10,
                    },
                    stop_reason: StopReason::Stop,
                })
            }
            Act::Hang => std::future::pending().await,
            Act::Panic => panic!("the provider panicked, as scripted"),
            Act::Fail(error) => Err(error),
        };
        std::mem::forget(flag);
        self.finished.fetch_add(1, Ordering::SeqCst);
        result
    }
}

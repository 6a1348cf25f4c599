//! A load benchmark of `memory serve`: many agent loops at once, through
//! the server, against a scripted upstream, all on loopback in this one
//! process.
//!
//! ```sh
//! cargo run --release -p memory-serve --features test-util --example load -- \
//!     --pipeline window --store sqlite --sessions 64 --principals 8 --turns 50 --delay-ms 50
//! ```
//!
//! It starts the scripted upstream (`test_util::ScriptedUpstream`, each
//! answer after `--delay-ms`), then the server on `127.0.0.1:0` with the
//! chosen pipeline (`window`, or `compact,thrift` with the extractive
//! summarizer), store (`memory`; `sqlite` for a temporary file or
//! `sqlite:PATH`; `postgres` for `$MEMORY_POSTGRES_URL` or a
//! `postgres://...` string) and a budget of `--budget` tokens counted with
//! `CharTokenCounter` (the cl100k counter lives in another crate).
//!
//! Then `--sessions` agent loops run at once, `--turns` requests each at
//! most, spread over `--principals` clients (each its own credential,
//! `sk-load-P`, so its own principal on the server). Each loop sends its whole history every call, as the OpenAI
//! protocol is normally used: a system prompt and the task ("Work through
//! the task in T steps."), then each reply and, for each tool call, a
//! tool result "step K of N: " with about `--filler` characters of text
//! after it. Each session's prompt names the run and the session, as two
//! real tasks differ; `--same-task` gives every session the same prompt
//! (then histories are equal up to the first tool result, and the server
//! cannot tell the sessions apart until they differ).
//!
//! Per request it measures the server's own time (the response header
//! `x-memory-overhead-us`), the total latency and the status; a request is
//! lost or invalid when it fails, is not a 200, has no `x-memory-session`,
//! names another session than the loop's earlier requests, or says
//! `x-memory-fits: false`; a loop goes on after an invalid answer and
//! stops at a failed one. At the end every session's history in the store
//! (the session the loop's last answer named) must be exactly what its
//! loop sent plus the last reply. The store's calls are timed by method and
//! by kind of session (the server's prefix index and heads, or the
//! conversation). The run stops at `--deadline-s` whatever happens.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memory_core::{
    CharTokenCounter, InMemoryStore, Message, Snapshot, Store, StoreError, StoreWrite,
    StoredMessage, TrimStrategy, Version,
};
use memory_openai::wire;
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, PipelineFactory, ServeConfig};
use serde_json::{Value, json};

const USAGE: &str = "\
usage: load [--pipeline window|compact,thrift] [--store memory|sqlite|sqlite:PATH|postgres|postgres://...]
            [--sessions S] [--principals P] [--turns T] [--delay-ms D] [--budget TOKENS] [--filler CHARS]
            [--deadline-s SECONDS] [--same-task] [--front chat|messages|responses]
            [--upstream-api chat|messages|responses]";

#[derive(Debug, Clone)]
struct Options {
    pipeline: String,
    store: String,
    sessions: usize,
    principals: usize,
    turns: usize,
    delay: Duration,
    budget: usize,
    filler: usize,
    deadline: Duration,
    same_task: bool,
    /// The protocol the agents speak: `chat` or `messages`.
    front: String,
    /// The protocol the scripted upstream is spoken to in.
    upstream_api: memory_serve::Protocol,
}

impl Options {
    fn parse() -> Result<Self, String> {
        let mut o = Options {
            pipeline: "window".into(),
            store: "memory".into(),
            sessions: 64,
            principals: 8,
            turns: 50,
            delay: Duration::from_millis(50),
            budget: 4_000,
            filler: 1_500,
            deadline: Duration::from_secs(600),
            same_task: false,
            front: "chat".into(),
            upstream_api: memory_serve::Protocol::Chat,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--same-task" {
                o.same_task = true;
                continue;
            }
            if flag == "-h" || flag == "--help" {
                return Err(String::new());
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("{flag}: `{value}` is not a whole number"))
            };
            match flag.as_str() {
                "--pipeline" => o.pipeline = value.clone(),
                "--front" if ["chat", "messages", "responses"].contains(&value.as_str()) => {
                    o.front = value.clone()
                }
                "--upstream-api" => o.upstream_api = value.parse()?,
                "--store" => o.store = value.clone(),
                "--sessions" => o.sessions = number()?.max(1) as usize,
                "--principals" => o.principals = number()?.max(1) as usize,
                "--turns" => o.turns = number()?.max(1) as usize,
                "--delay-ms" => o.delay = Duration::from_millis(number()?),
                "--budget" => o.budget = number()? as usize,
                "--filler" => o.filler = number()? as usize,
                "--deadline-s" => o.deadline = Duration::from_secs(number()?.max(1)),
                other => return Err(format!("unknown option {other}")),
            }
        }
        Ok(o)
    }
}

fn pipeline(name: &str) -> Result<PipelineFactory, String> {
    match name {
        "window" => Ok(Arc::new(|| {
            Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>
        })),
        "compact,thrift" => Ok(Arc::new(|| {
            Arc::new(
                memory_core::Pipeline::new()
                    .then(memory_compact::Compact::new(
                        memory_summarize::ExtractiveSummarizer::new(),
                    ))
                    .then(memory_thrift::Thrift::new()),
            ) as Arc<dyn TrimStrategy>
        })),
        other => Err(format!("unknown pipeline {other} (window, compact,thrift)")),
    }
}

/// The store, and what keeps it alive (a temporary directory).
async fn store(spec: &str) -> Result<(Arc<dyn Store>, Option<tempfile::TempDir>, String), String> {
    if spec == "memory" {
        return Ok((Arc::new(InMemoryStore::new()), None, "in-memory".into()));
    }
    if spec == "sqlite" {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("load.db");
        let store = memory_sqlite::SqliteStore::open(&path).map_err(|e| e.to_string())?;
        return Ok((
            Arc::new(store),
            Some(dir),
            "SQLite, a temporary file".into(),
        ));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = memory_sqlite::SqliteStore::open(path).map_err(|e| e.to_string())?;
        return Ok((Arc::new(store), None, format!("SQLite, {path}")));
    }
    let url = if spec == "postgres" {
        std::env::var("MEMORY_POSTGRES_URL")
            .map_err(|_| "--store postgres needs MEMORY_POSTGRES_URL".to_string())?
    } else if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        spec.to_string()
    } else {
        return Err(format!("unknown store {spec}"));
    };
    let store = memory_postgres::PostgresStore::connect(&url)
        .await
        .map_err(|e| e.to_string())?;
    // As `memory serve` opens it: every pooled connection open at start.
    store.warm().await.map_err(|e| e.to_string())?;
    Ok((Arc::new(store), None, "PostgreSQL".into()))
}

/// Calls and time spent, by method and by kind of session.
type Spent = BTreeMap<(&'static str, &'static str), (u64, Duration)>;

/// The store, with the time each call to it took, by method and by kind of
/// session (the server's prefix index and heads, or a conversation).
struct Timed {
    inner: Arc<dyn Store>,
    spent: Arc<Mutex<Spent>>,
}

impl Timed {
    fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            spent: Arc::new(Mutex::new(BTreeMap::new())),
        }
    }

    fn note(&self, method: &'static str, session: &str, took: Duration) {
        let kind = if session.starts_with("memory-serve/prefix/") {
            "prefix index"
        } else if session.starts_with("memory-serve/head/") {
            "session head"
        } else {
            "conversation"
        };
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        let entry = spent.entry((method, kind)).or_default();
        entry.0 += 1;
        entry.1 += took;
    }

    fn spent(&self) -> Spent {
        self.spent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait::async_trait]
impl Store for Timed {
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        let started = Instant::now();
        let r = self.inner.load(session).await;
        self.note("load", session, started.elapsed());
        r
    }

    async fn append(
        &self,
        session: &str,
        messages: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        let started = Instant::now();
        let r = self.inner.append(session, messages).await;
        self.note("append", session, started.elapsed());
        r
    }

    async fn replace_view(
        &self,
        session: &str,
        expected: Version,
        view: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        let started = Instant::now();
        let r = self.inner.replace_view(session, expected, view).await;
        self.note("replace_view", session, started.elapsed());
        r
    }

    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        let started = Instant::now();
        let r = self.inner.history(session).await;
        self.note("history", session, started.elapsed());
        r
    }

    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
        let started = Instant::now();
        let r = self.inner.replaced(session).await;
        self.note("replaced", session, started.elapsed());
        r
    }

    async fn write_all(&self, writes: Vec<StoreWrite>) -> Vec<Result<Version, StoreError>> {
        let started = Instant::now();
        let first = writes
            .first()
            .map(|w| w.session().to_string())
            .unwrap_or_default();
        let r = self.inner.write_all(writes).await;
        // Counted by the kind of its first write (a reply's, with the
        // prefix-index entry and the state riding along).
        self.note("write_all", &first, started.elapsed());
        r
    }

    async fn delete(&self, session: &str) -> Result<(), StoreError> {
        self.inner.delete(session).await
    }

    fn for_tenant(&self, tenant: &str) -> Arc<dyn Store> {
        Arc::new(Timed {
            inner: self.inner.for_tenant(tenant),
            spent: Arc::clone(&self.spent),
        })
    }
}

/// A small deterministic generator, so that every tool result differs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const WORDS: &[&str] = &[
    "the", "file", "returned", "line", "error", "function", "module", "test", "passed", "failed",
    "build", "cache", "value", "index", "parser", "token", "request", "header", "session",
    "stored", "window", "budget", "trace", "warning", "config", "path", "result", "output",
    "input", "commit", "branch", "patch", "diff", "check", "done", "retry", "timeout", "queue",
];

/// About `chars` characters of text, different for every seed.
fn filler(rng: &mut Rng, chars: usize) -> String {
    let mut text = String::with_capacity(chars + 16);
    while text.len() < chars {
        let r = rng.next();
        let word = WORDS[(r % WORDS.len() as u64) as usize];
        text.push_str(word);
        match (r >> 8) % 11 {
            0 => text.push_str(&format!(" {} ", (r >> 16) % 10_000)),
            1 => text.push_str(".\n"),
            2 => text.push_str(", "),
            _ => text.push(' '),
        }
    }
    text
}

/// What one request did.
struct Sample {
    own_us: Option<u64>,
    total_us: u64,
    ok: bool,
}

/// What one agent loop did.
struct LoopResult {
    /// The loop's index.
    index: usize,
    samples: Vec<Sample>,
    invalid: Vec<String>,
    session: Option<String>,
    history: Vec<Message>,
    id_changes: usize,
}

/// The credential loop `index` sends: one of `--principals`.
fn credential(options: &Options, index: usize) -> String {
    format!("sk-load-{}", index % options.principals)
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// One agent loop: the whole history each call, until the task is done or
/// `turns` requests were sent.
async fn agent(
    client: reqwest::Client,
    server: String,
    options: Arc<Options>,
    run: u64,
    index: usize,
) -> LoopResult {
    let steps = options.turns;
    let mut history = if options.same_task {
        vec![
            Message::system("You are a careful coding agent. Use the `step` tool."),
            Message::user(format!("Work through the task in {steps} steps.")),
        ]
    } else {
        vec![
            Message::system(format!(
                "You are a careful coding agent (run {run:x}, session {index}). Use the `step` tool."
            )),
            Message::user(format!("Work through the task in {steps} steps.")),
        ]
    };
    let mut rng = Rng(run ^ ((index as u64 + 1) * 0x9E37_79B9_7F4A_7C15) | 1);
    let mut out = LoopResult {
        index,
        samples: Vec::with_capacity(options.turns),
        invalid: Vec::new(),
        session: None,
        history: Vec::new(),
        id_changes: 0,
    };
    for turn in 0..options.turns {
        let (path, body) = match options.front.as_str() {
            "messages" => ("messages", anthropic::request(&history)),
            "responses" => ("responses", responses::request(&history)),
            _ => (
                "chat/completions",
                json!({"model": "scripted", "messages": wire::to_value(&history)}),
            ),
        };
        let started = Instant::now();
        let response = client
            .post(format!("{server}/v1/{path}"))
            .bearer_auth(credential(&options, index))
            .json(&body)
            .send()
            .await;
        let mut invalid = |why: String| {
            out.invalid
                .push(format!("session {index} turn {turn}: {why}"))
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                invalid(format!("request failed: {e}"));
                out.samples.push(Sample {
                    own_us: None,
                    total_us: started.elapsed().as_micros() as u64,
                    ok: false,
                });
                break;
            }
        };
        let status = response.status();
        let own_us = header(&response, "x-memory-overhead-us").and_then(|v| v.parse().ok());
        let session = header(&response, "x-memory-session");
        let fits = header(&response, "x-memory-fits");
        let bytes = response.bytes().await;
        let total_us = started.elapsed().as_micros() as u64;
        let mut ok = true;
        if status != 200 {
            ok = false;
            invalid(format!(
                "status {status}: {}",
                bytes
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b)
                        .chars()
                        .take(200)
                        .collect::<String>())
                    .unwrap_or_default()
            ));
        }
        match (&session, &out.session) {
            (None, _) => {
                ok = false;
                invalid("no x-memory-session".into());
            }
            (Some(s), Some(before)) if s != before => {
                ok = false;
                out.id_changes += 1;
                invalid(format!("the session changed from {before} to {s}"));
            }
            _ => {}
        }
        if fits.as_deref() != Some("true") {
            ok = false;
            invalid(format!("x-memory-fits is {fits:?}"));
        }
        if own_us.is_none() {
            ok = false;
            invalid("no x-memory-overhead-us".into());
        }
        if session.is_some() {
            out.session = session;
        }
        let answer = bytes
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        let reply = answer.and_then(|v| match options.front.as_str() {
            "messages" => anthropic::reply(&v),
            "responses" => responses::reply(&v),
            _ => wire::message_from_value(&v["choices"][0]["message"], 0).ok(),
        });
        let Some(reply) = reply else {
            if ok {
                invalid("the answer has no message".into());
            }
            out.samples.push(Sample {
                own_us,
                total_us,
                ok: false,
            });
            break;
        };
        out.samples.push(Sample {
            own_us,
            total_us,
            ok,
        });
        if status != 200 {
            break;
        }
        let calls = reply.tool_calls().to_vec();
        history.push(reply);
        if calls.is_empty() {
            break;
        }
        for call in &calls {
            let step = serde_json::from_str::<Value>(&call.arguments)
                .ok()
                .and_then(|v| v["step"].as_u64())
                .unwrap_or(0);
            let text = format!(
                "step {step} of {steps}: {}",
                filler(&mut rng, options.filler)
            );
            history.push(Message::tool_result(call.id.clone(), text));
        }
    }
    // The history the store must hold: what was sent, and the last reply
    // (tool results after it were never sent).
    while history.last().is_some_and(Message::is_tool_result) {
        history.pop();
    }
    out.history = history;
    out
}

/// The agents' side of Anthropic's Messages protocol (`--front messages`).
mod anthropic {
    use memory_core::{Message, ToolCall};
    use serde_json::{Value, json};

    /// A request holding `history`: its system message as `system`, tool
    /// results in user turns.
    pub(super) fn request(history: &[Message]) -> Value {
        let mut turns: Vec<Value> = Vec::new();
        for m in &history[1..] {
            let (role, block) = match m {
                Message::Assistant { .. } => ("assistant", None),
                Message::ToolResult {
                    tool_call_id,
                    content,
                    ..
                } => (
                    "user",
                    Some(
                        json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content}),
                    ),
                ),
                other => ("user", Some(json!({"type": "text", "text": other.text()}))),
            };
            let blocks = match block {
                Some(b) => vec![b],
                None => assistant_blocks(m),
            };
            match turns.last_mut() {
                Some(t) if t["role"] == role && role == "user" => {
                    t["content"].as_array_mut().expect("blocks").extend(blocks);
                }
                _ => turns.push(json!({"role": role, "content": blocks})),
            }
        }
        json!({"model": "scripted", "max_tokens": 1024, "system": history[0].text(), "messages": turns})
    }

    fn assistant_blocks(m: &Message) -> Vec<Value> {
        let mut blocks = Vec::new();
        if !m.text().is_empty() {
            blocks.push(json!({"type": "text", "text": m.text()}));
        }
        for c in m.tool_calls() {
            let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
            blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
        }
        blocks
    }

    /// The assistant message of a Messages answer.
    pub(super) fn reply(answer: &Value) -> Option<Message> {
        let (mut text, mut calls) = (String::new(), Vec::new());
        for b in answer["content"].as_array()? {
            match b["type"].as_str()? {
                "text" => text.push_str(b["text"].as_str()?),
                "tool_use" => calls.push(ToolCall::new(
                    b["id"].as_str()?,
                    b["name"].as_str()?,
                    b["input"].to_string(),
                )),
                _ => {}
            }
        }
        Some(Message::assistant_with_tools(text, calls))
    }
}

/// The agents' side of OpenAI's Responses protocol (`--front responses`),
/// as Codex sends it: the whole history as items each time.
mod responses {
    use memory_core::{Message, ToolCall};
    use serde_json::{Value, json};

    /// A request holding `history`: its system message as `instructions`.
    pub(super) fn request(history: &[Message]) -> Value {
        let mut input: Vec<Value> = Vec::new();
        for m in &history[1..] {
            match m {
                Message::Assistant { tool_calls, .. } => {
                    if !m.text().is_empty() {
                        input.push(json!({"type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": m.text()}]}));
                    }
                    for c in tool_calls {
                        input.push(json!({"type": "function_call", "call_id": c.id,
                            "name": c.name, "arguments": c.arguments}));
                    }
                }
                Message::ToolResult {
                    tool_call_id,
                    content,
                    ..
                } => input.push(
                    json!({"type": "function_call_output", "call_id": tool_call_id, "output": content}),
                ),
                other => input.push(json!({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": other.text()}]})),
            }
        }
        json!({"model": "scripted", "instructions": history[0].text(), "input": input, "store": false})
    }

    /// The assistant message of a Responses answer.
    pub(super) fn reply(answer: &Value) -> Option<Message> {
        let (mut text, mut calls) = (String::new(), Vec::new());
        for item in answer["output"].as_array()? {
            match item["type"].as_str()? {
                "message" => text.push_str(item["content"][0]["text"].as_str()?),
                "function_call" => calls.push(ToolCall::new(
                    item["call_id"].as_str()?,
                    item["name"].as_str()?,
                    item["arguments"].as_str()?,
                )),
                _ => {}
            }
        }
        Some(Message::assistant_with_tools(text, calls))
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1000.0)
}

#[tokio::main]
async fn main() {
    let options = match Options::parse() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("load: {e}");
            }
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    let factory = match pipeline(&options.pipeline) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("load: {e}");
            std::process::exit(2);
        }
    };
    let (store, _dir, store_name) = match store(&options.store).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("load: {e}");
            std::process::exit(2);
        }
    };
    let timed = Arc::new(Timed::new(store.clone()));
    let upstream = ScriptedUpstream::start(options.delay)
        .await
        .expect("a loopback port for the upstream");
    let mut config = ServeConfig::new(upstream.url(), factory, timed.clone())
        .with_budget(BudgetMode::Tokens(options.budget))
        .with_counter(Arc::new(CharTokenCounter));
    config.upstream_api = options.upstream_api;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port for the server");
    let server = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(memory_serve::serve(
        listener,
        config,
        std::future::pending(),
    ));

    println!(
        "load: {} sessions over {} principals x {} turns, pipeline {}, store {store_name}, budget {} tokens \
         (CharTokenCounter), upstream delay {} ms, filler {} chars, {} worker threads",
        options.sessions,
        options.principals,
        options.turns,
        options.pipeline,
        options.budget,
        options.delay.as_millis(),
        options.filler,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("an HTTP client");
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let options = Arc::new(options);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..options.sessions {
        tasks.spawn(agent(
            client.clone(),
            server.clone(),
            options.clone(),
            run,
            index,
        ));
    }
    let deadline = tokio::time::sleep(options.deadline);
    tokio::pin!(deadline);
    let mut results = Vec::new();
    let mut timed_out = false;
    loop {
        tokio::select! {
            next = tasks.join_next() => match next {
                Some(Ok(r)) => results.push(r),
                Some(Err(e)) => eprintln!("load: an agent loop panicked: {e}"),
                None => break,
            },
            () = &mut deadline => {
                timed_out = true;
                tasks.abort_all();
                break;
            }
        }
    }
    let elapsed = started.elapsed();

    let mut own: Vec<u64> = Vec::new();
    let mut total: Vec<u64> = Vec::new();
    let mut requests = 0usize;
    let mut bad = 0usize;
    let mut id_changes = 0usize;
    let mut invalid: Vec<String> = Vec::new();
    for r in &results {
        for s in &r.samples {
            requests += 1;
            if let Some(o) = s.own_us {
                own.push(o);
            }
            total.push(s.total_us);
            if !s.ok {
                bad += 1;
            }
        }
        id_changes += r.id_changes;
        invalid.extend(r.invalid.iter().cloned());
    }
    let unfinished = options.sessions - results.len();
    own.sort_unstable();
    total.sort_unstable();

    let spent = timed.spent();
    // Every session's history, as the store has it, against the loop's own.
    let mut checked = 0;
    let mut mismatched = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let Some(session) = &r.session else {
            mismatched.push(format!("loop {i}: no session"));
            continue;
        };
        let of = format!("Bearer {}", credential(&options, r.index));
        let principal = memory_serve::test_util::principal_store(&store, Some(&of)).await;
        match principal.history(session).await {
            Ok(stored) if stored == r.history => checked += 1,
            Ok(stored) => {
                let first = stored
                    .iter()
                    .zip(&r.history)
                    .position(|(a, b)| a != b)
                    .unwrap_or(stored.len().min(r.history.len()));
                mismatched.push(format!(
                    "loop {i}: {session} holds {} messages, the client sent {} (first difference at {first})",
                    stored.len(),
                    r.history.len()
                ));
            }
            Err(e) => mismatched.push(format!("loop {i}: {session}: {e}")),
        }
    }

    let rps = requests as f64 / elapsed.as_secs_f64();
    println!(
        "requests:              {requests} in {:.2} s",
        elapsed.as_secs_f64()
    );
    println!("requests per second:   {rps:.0}");
    println!("server own time p50:   {}", ms(percentile(&own, 50.0)));
    println!("server own time p99:   {}", ms(percentile(&own, 99.0)));
    println!(
        "server own time max:   {}",
        ms(own.last().copied().unwrap_or(0))
    );
    println!("total latency p50:     {}", ms(percentile(&total, 50.0)));
    println!("total latency p99:     {}", ms(percentile(&total, 99.0)));
    println!(
        "lost or invalid:       {bad} (session id changes {id_changes}, loops unfinished {unfinished}{})",
        if timed_out { ", deadline reached" } else { "" }
    );
    println!(
        "history check:         {} ({checked} of {} sessions hold exactly what the client sent plus every reply)",
        if mismatched.is_empty() && unfinished == 0 {
            "ok"
        } else {
            "FAILED"
        },
        options.sessions
    );
    let store_total: Duration = spent.values().map(|(_, d)| *d).sum();
    println!(
        "store time per request: {} (wall time inside the store's calls, waits for its lock or pool included)",
        ms(store_total.as_micros() as u64 / requests.max(1) as u64)
    );
    for ((method, kind), (calls, took)) in &spent {
        println!(
            "  {method:<13} {kind:<13} {:>5.2} calls/request, {:>8.3} ms/call",
            *calls as f64 / requests.max(1) as f64,
            took.as_secs_f64() * 1000.0 / (*calls).max(1) as f64
        );
    }
    for line in invalid.iter().take(10) {
        println!("  invalid: {line}");
    }
    for line in mismatched.iter().take(10) {
        println!("  history: {line}");
    }
    let failed = bad > 0 || !mismatched.is_empty() || unfinished > 0;
    std::process::exit(i32::from(failed));
}

//! A Rig agent with a tool whose conversation memory is `compact,thrift`
//! over SQLite: it runs a few turns, "restarts" (drops the agent, the
//! memory and the store, and opens the file again), and goes on with the
//! same conversation from what the file holds.
//!
//! The model is any OpenAI-compatible Chat Completions endpoint served
//! over plain HTTP (a local llama.cpp server, say); Compact asks the same
//! endpoint for its summaries. Rig's client is built here without TLS: an
//! HTTPS endpoint needs rig-core's `rustls` feature in `Cargo.toml`.
//!
//! ```sh
//! cargo run -p memory-examples --example rig_agent -- \
//!     --base-url http://127.0.0.1:8080/v1 --model qwen3-8b --db /tmp/agent.db
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Parser;
use memory_compact::Compact;
use memory_core::Pipeline;
use memory_openai::OpenAiProvider;
use memory_rig::RigMemory;
use memory_sqlite::SqliteStore;
use memory_thrift::Thrift;
use memory_tokenizers::Cl100k;
use rig_agent::prelude::*;
use rig_core::providers::openai::OpenAIConfig;
use rig_core::tool::PortableTool;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8080/v1.
    #[arg(long)]
    base_url: String,
    /// Model name to ask for.
    #[arg(long, default_value = "default")]
    model: String,
    /// API key, if the endpoint wants one.
    #[arg(long, default_value = "none")]
    api_key: String,
    /// The SQLite file that keeps the conversation.
    #[arg(long, default_value = "rig-agent-memory.db")]
    db: PathBuf,
    /// Token budget of the loaded history (cl100k).
    #[arg(long, default_value_t = 4_000)]
    budget: usize,
}

/// The agent's tool: the number of words in a text.
struct WordCount;

#[derive(serde::Deserialize)]
struct WordCountArgs {
    text: String,
}

impl PortableTool for WordCount {
    const NAME: &'static str = "word_count";
    type Args = WordCountArgs;
    type Output = usize;
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "Counts the words in a text.".into()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] })
    }

    async fn call(&self, args: WordCountArgs) -> Result<usize, Self::Error> {
        Ok(args.text.split_whitespace().count())
    }
}

/// The memory: compact upstream (summaries from the same endpoint), thrift
/// downstream, counted with cl100k, kept in the SQLite file.
fn memory(args: &Args, db: &Path) -> Result<RigMemory, Box<dyn std::error::Error>> {
    let summarizer = OpenAiProvider::new(&args.base_url, &args.model).with_api_key(&args.api_key);
    let pipeline = Pipeline::new()
        .then(Compact::new(summarizer).with_summarize_at_tokens(args.budget / 2))
        .then(Thrift::new());
    Ok(RigMemory::new(args.budget)
        .with_strategy(pipeline)
        .with_token_counter(Cl100k)
        .with_store(Arc::new(SqliteStore::open(db)?)))
}

fn agent(args: &Args, memory: RigMemory) -> Agent {
    let model = OpenAIConfig::new(args.api_key.clone())
        .with_base_url(&args.base_url)
        .client()
        .chat(&args.model);
    AgentBuilder::new(model)
        .preamble("You are a concise assistant. Use word_count to count words.")
        .tool(WordCount)
        .memory(memory)
        .default_max_turns(4)
        .build()
}

async fn turns(agent: &Agent, prompts: &[&str]) -> Result<(), Box<dyn std::error::Error>> {
    for prompt in prompts {
        let answer = agent.prompt(*prompt).conversation("demo").await?.output();
        println!("> {prompt}\n{answer}\n");
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    {
        let agent = agent(&args, memory(&args, &args.db)?);
        turns(
            &agent,
            &[
                "My name is Ada and I am writing a talk about compilers.",
                "How many words are in 'the quick brown fox jumps over the lazy dog'?",
                "Suggest a title for my talk.",
            ],
        )
        .await?;
    }
    println!(
        "-- restart: a new agent and memory over {} --\n",
        args.db.display()
    );
    let memory = memory(&args, &args.db)?;
    let history = memory.history("demo").await?;
    println!(
        "the file holds {} messages of this conversation\n",
        history.len()
    );
    let agent = agent(&args, memory);
    turns(&agent, &["What is my name, and what is my talk about?"]).await?;
    Ok(())
}

//! `--recall`: the `recall` tool offered to the model, and answered by the
//! server itself (`server`) or passed to the client like any tool
//! (`client`).

use crate::Metrics;
use crate::protocol::options::ToolSpec;
use memory_core::recall::{self, RECALL_TOOL, RecallRequest};
use memory_core::{Message, TokenCounter};

/// Whether the model is offered the `recall` tool, and who answers it.
///
/// ```
/// use memory_serve::RecallMode;
/// assert_eq!("server".parse::<RecallMode>().unwrap(), RecallMode::Server);
/// assert_eq!(RecallMode::default(), RecallMode::Off);
/// assert!("both".parse::<RecallMode>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecallMode {
    /// Not offered.
    #[default]
    Off,
    /// Offered; its calls reach the client like any other tool call (the
    /// client answers them, e.g. from `POST /v1/memory/sessions/{id}/recall`).
    Client,
    /// Offered; the server answers its calls from the session's history
    /// and asks the model again, so the client never sees them.
    Server,
}

impl std::str::FromStr for RecallMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "off" => Ok(RecallMode::Off),
            "client" => Ok(RecallMode::Client),
            "server" => Ok(RecallMode::Server),
            other => Err(format!("`{other}`: expected off, client or server")),
        }
    }
}

/// The most rounds of recalls the server answers for one call before it
/// passes the model's answer on as it is: a model that asks again after
/// four answers is looping, and each round is a whole model call.
pub const MAX_RECALL_ROUNDS: usize = 4;

/// The tools the server offers besides the client's: `recall`, unless
/// `mode` is off.
pub(crate) fn offered(mode: RecallMode) -> Vec<ToolSpec> {
    if mode == RecallMode::Off {
        return Vec::new();
    }
    let definition = recall::tool_definition();
    let function = &definition["function"];
    vec![ToolSpec {
        name: RECALL_TOOL.to_string(),
        description: function["description"].as_str().map(str::to_string),
        schema: function["parameters"].clone(),
    }]
}

/// Whether the model's reply calls `recall`.
pub(crate) fn wants_recall(reply: &Message) -> bool {
    reply.tool_calls().iter().any(|c| c.name == RECALL_TOOL)
}

/// The results of the reply's calls: each recall answered from `history`
/// (or with why it could not be), any other call not run; each recall
/// counted in `metrics`.
pub(crate) async fn answers(
    history: &[Message],
    reply: &Message,
    counter: &dyn TokenCounter,
    metrics: &Metrics,
) -> Vec<Message> {
    let mut results = Vec::with_capacity(reply.tool_calls().len());
    for call in reply.tool_calls() {
        let text = if call.name == RECALL_TOOL {
            let answered = match RecallRequest::from_arguments(&call.arguments) {
                Ok(request) => recall::resolve(history, &request, counter).await,
                Err(e) => Err(e),
            };
            metrics.count_recall(answered.is_ok());
            match answered {
                Ok(recalled) => recalled.text,
                Err(e) => e.to_string(),
            }
        } else {
            "[not run: this step's recall calls were answered first; call it again if it is still needed]".to_string()
        };
        results.push(Message::tool_result(call.id.clone(), text));
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::recall::Handle;
    use memory_core::{CharTokenCounter, ToolCall};

    #[tokio::test]
    async fn recall_calls_are_answered_and_others_are_not_run() {
        let history = vec![
            Message::user("go"),
            Message::tool_result("c0", "the old output"),
        ];
        let handle = Handle::of(&history[1..]).to_string();
        let reply = Message::assistant_with_tools(
            "",
            vec![
                ToolCall::new("r1", RECALL_TOOL, format!(r#"{{"handle":"{handle}"}}"#)),
                ToolCall::new("s1", "shell", "{}"),
                ToolCall::new("r2", RECALL_TOOL, r#"{"handle":"r:vvvvvvvvvv"}"#),
            ],
        );
        assert!(wants_recall(&reply));
        let metrics = Metrics::new(None);
        let results = answers(&history, &reply, &CharTokenCounter, &metrics).await;
        assert!(results[0].text().contains("the old output"));
        assert!(results[1].text().starts_with("[not run"));
        assert!(
            results[2].text().contains("r:vvvvvvvvvv"),
            "{}",
            results[2].text()
        );
        let text = metrics.render();
        assert!(text.contains(r#"memory_serve_recalls_total{outcome="returned"} 1"#));
        assert!(text.contains(r#"memory_serve_recalls_total{outcome="refused"} 1"#));
    }

    #[test]
    fn the_tool_is_offered_unless_off() {
        assert!(offered(RecallMode::Off).is_empty());
        let tools = offered(RecallMode::Server);
        assert_eq!(tools[0].name, RECALL_TOOL);
        assert_eq!(tools[0].schema["type"], "object");
    }
}

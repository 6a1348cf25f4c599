//! `--recall`: the `recall` tool offered to the model, and answered by the
//! server itself (`server`) or passed to the client like any tool
//! (`client`).

use memory_core::recall::{self, RECALL_TOOL, RecallRequest};
use memory_core::{Message, TokenCounter};
use serde_json::Value;

use crate::{ChatCall, Metrics};

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

/// The body to send upstream: the client's fields, the context, then the
/// exchange the client does not see; the tool offered unless `mode` is
/// off.
pub(crate) fn upstream_body(
    call: &ChatCall,
    context: &[Message],
    hidden: &[Message],
    mode: RecallMode,
) -> Value {
    let mut body = if hidden.is_empty() {
        call.upstream_body(context)
    } else {
        let mut all = context.to_vec();
        all.extend_from_slice(hidden);
        call.upstream_body(&all)
    };
    if mode != RecallMode::Off {
        offer(&mut body);
    }
    body
}

/// Adds the tool to the body's `tools`, unless one of that name is there.
fn offer(body: &mut Value) {
    let Some(object) = body.as_object_mut() else {
        return;
    };
    let tools = object
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(tools) = tools.as_array_mut() else {
        return;
    };
    let named = |t: &Value| t["function"]["name"] == RECALL_TOOL;
    if !tools.iter().any(named) {
        tools.push(recall::tool_definition());
    }
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
    fn the_tool_is_offered_once() {
        let call = ChatCall::decode(
            br#"{"messages": [], "tools": [{"type": "function", "function": {"name": "shell"}}]}"#,
        )
        .unwrap();
        let body = upstream_body(&call, &[], &[], RecallMode::Server);
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
        let mut again = body.clone();
        offer(&mut again);
        assert_eq!(again, body);
        assert!(
            upstream_body(&call, &[], &[], RecallMode::Off)["tools"]
                .as_array()
                .unwrap()
                .len()
                == 1
        );
    }
}

//! HTTP failures classified into [`ProviderError`]s that say what to do.

use std::time::Duration;

use memory_core::ProviderError;
use serde_json::Value;

/// Longest part of a server's body quoted in an error.
const QUOTE_CHARS: usize = 300;

/// The [`ProviderError`] for an HTTP error response of `status` with `body`;
/// `retry_after` is what its `Retry-After` header asked for.
///
/// - 401 and 403: [`ProviderError::Authentication`];
/// - 429: [`ProviderError::RateLimited`], unless the account's quota is
///   spent (`insufficient_quota`), which waiting does not fix; a 503 that
///   says when to come back (`Retry-After`) too, naming its status;
/// - 400, 413 and 422 whose error code is `context_length_exceeded` (or
///   llama.cpp's `exceed_context_size_error`) or whose message speaks of the
///   context length or window: [`ProviderError::ContextOverflow`];
/// - 5xx and 408: [`ProviderError::Server`];
/// - anything else: [`ProviderError::Other`], naming the status.
///
/// ```
/// use memory_core::ProviderError;
/// use memory_openai::classify_status;
///
/// let body = r#"{"error": {"message": "This model's maximum context length is 8192 tokens.", "code": "context_length_exceeded"}}"#;
/// assert!(matches!(classify_status(400, None, body), ProviderError::ContextOverflow(_)));
/// assert!(matches!(classify_status(401, None, "{}"), ProviderError::Authentication(_)));
/// ```
pub fn classify_status(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let detail = ErrorBody::parse(body);
    let message = detail.describe(status);
    match status {
        401 | 403 => ProviderError::Authentication(format!(
            "HTTP {status}: {message}; name the key's variable with with_api_key_env or give it \
             with with_api_key ($OPENAI_API_KEY alone goes only to https://api.openai.com)"
        )),
        429 if detail.code.as_deref() == Some("insufficient_quota") => {
            ProviderError::Other(format!(
                "HTTP 429: {message}; the account's quota is spent, add credit or use another key"
            ))
        }
        429 => ProviderError::RateLimited {
            retry_after_ms: retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            message,
        },
        503 if retry_after.is_some() => ProviderError::RateLimited {
            retry_after_ms: retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            message: format!("HTTP 503: {message}"),
        },
        400 | 413 | 422 if detail.is_context_overflow() => {
            ProviderError::ContextOverflow(format!("HTTP {status}: {message}"))
        }
        408 | 500..=599 => ProviderError::Server { status, message },
        404 => ProviderError::Other(format!(
            "HTTP 404: {message}; check the base URL (it usually ends in /v1) and the model name"
        )),
        _ => ProviderError::Other(format!(
            "HTTP {status}: {message}; check the model name and the request options"
        )),
    }
}

/// What an error body says, in the shapes servers use: OpenAI's
/// `{"error": {"message", "type", "code"}}`, `{"error": "..."}`,
/// `{"message": ...}`, `{"detail": ...}`, or plain text.
#[derive(Debug, Default)]
struct ErrorBody {
    message: Option<String>,
    kind: Option<String>,
    code: Option<String>,
    raw: String,
}

impl ErrorBody {
    fn parse(body: &str) -> Self {
        let raw = quote(body.trim());
        let Ok(value) = serde_json::from_str::<Value>(body) else {
            return Self {
                raw,
                ..Self::default()
            };
        };
        let error = value.get("error").unwrap_or(&value);
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let message = match error {
            Value::String(s) => Some(s.clone()),
            _ => text(error.get("message")).or_else(|| text(value.get("detail"))),
        };
        Self {
            message,
            kind: text(error.get("type")),
            code: text(error.get("code")),
            raw,
        }
    }

    fn describe(&self, status: u16) -> String {
        match (&self.message, &self.code) {
            (Some(m), Some(c)) if !c.chars().all(|ch| ch.is_ascii_digit()) => {
                format!("{} ({c})", quote(m))
            }
            (Some(m), _) => quote(m),
            (None, _) if !self.raw.is_empty() => self.raw.clone(),
            (None, _) => format!("the server gave no details for status {status}"),
        }
    }

    fn is_context_overflow(&self) -> bool {
        let coded = [self.code.as_deref(), self.kind.as_deref()]
            .into_iter()
            .flatten()
            .any(|c| c == "context_length_exceeded" || c == "exceed_context_size_error");
        let text = self.message.as_deref().unwrap_or(&self.raw).to_lowercase();
        coded
            || text.contains("context length")
            || text.contains("maximum context")
            || text.contains("context window")
            || text.contains("context size")
    }
}

/// `text` cut to [`QUOTE_CHARS`] characters.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The [`ProviderError`] for a failure to get any response.
pub(crate) fn classify_transport(error: &reqwest::Error) -> ProviderError {
    if error.is_builder() {
        ProviderError::Other(format!(
            "the request could not be built: {error}; check the base URL and the headers"
        ))
    } else {
        // Walk to the root cause: "connection refused" is more useful than
        // "error sending request".
        let mut cause: &dyn std::error::Error = error;
        while let Some(next) = cause.source() {
            cause = next;
        }
        ProviderError::Network(format!("{error} ({cause})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_their_kinds() {
        assert!(matches!(
            classify_status(403, None, ""),
            ProviderError::Authentication(_)
        ));
        assert_eq!(
            classify_status(
                429,
                Some(Duration::from_secs(3)),
                r#"{"error":{"message":"slow down"}}"#
            ),
            ProviderError::RateLimited {
                retry_after_ms: Some(3_000),
                message: "slow down".into()
            }
        );
        assert!(matches!(
            classify_status(
                429,
                None,
                r#"{"error":{"message":"quota","code":"insufficient_quota"}}"#
            ),
            ProviderError::Other(m) if m.contains("add credit")
        ));
        assert_eq!(
            classify_status(503, Some(Duration::from_secs(2)), "loading model"),
            ProviderError::RateLimited {
                retry_after_ms: Some(2_000),
                message: "HTTP 503: loading model".into()
            }
        );
        assert_eq!(
            classify_status(503, None, "upstream down"),
            ProviderError::Server {
                status: 503,
                message: "upstream down".into()
            }
        );
        assert!(matches!(
            classify_status(404, None, r#"{"error":"model not found"}"#),
            ProviderError::Other(m) if m.contains("model not found") && m.contains("base URL")
        ));
        assert!(matches!(
            classify_status(400, None, r#"{"error":{"message":"bad temperature"}}"#),
            ProviderError::Other(m) if m.contains("bad temperature")
        ));
    }

    #[test]
    fn context_overflow_is_recognized_in_the_shapes_servers_use() {
        for body in [
            r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error"}}"#,
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","code":400}"#,
            "prompt is longer than the model's context window",
        ] {
            assert!(
                matches!(
                    classify_status(400, None, body),
                    ProviderError::ContextOverflow(_)
                ),
                "{body}"
            );
        }
    }

    #[test]
    fn long_bodies_are_quoted_short() {
        let body = "x".repeat(5_000);
        let ProviderError::Server { message, .. } = classify_status(500, None, &body) else {
            panic!("expected a server error");
        };
        assert!(message.chars().count() <= QUOTE_CHARS + 1);
    }
}

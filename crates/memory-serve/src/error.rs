//! [`ApiError`]: a failed request, answered in OpenAI's error shape.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A request the server refuses or cannot complete, with the status an
/// OpenAI client expects and a body naming the problem:
/// `{"error": {"message", "type", "param", "code"}}`.
///
/// ```
/// use memory_serve::ApiError;
/// let e = ApiError::bad_request("message 2: field `role`: is missing", Some("messages[2].role"));
/// assert_eq!(e.status().as_u16(), 400);
/// assert_eq!(e.body()["error"]["param"], "messages[2].role");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    code: &'static str,
    message: String,
    param: Option<String>,
    /// Seconds a client waits before it tries again (`Retry-After`).
    retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, code: &'static str, message: String) -> Self {
        Self {
            status,
            kind,
            code,
            message,
            param: None,
            retry_after: None,
        }
    }

    /// 429: over a limit of the principal's; `retry_after` seconds, when
    /// waiting helps, go in `Retry-After`.
    ///
    /// ```
    /// let e = memory_serve::ApiError::limited("over 60 requests a minute", Some(2));
    /// assert_eq!(e.status(), 429);
    /// assert_eq!(e.retry_after(), Some(2));
    /// ```
    pub fn limited(message: impl Into<String>, retry_after: Option<u64>) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "rate_limit_exceeded",
            message.into(),
        );
        e.retry_after = retry_after;
        e
    }

    /// The seconds a client should wait before it tries again, if any.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::unauthorized().retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// 400: the request is malformed (bad JSON, a field of the wrong
    /// shape, an invalid transcript); `param` names the field at fault.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::bad_request("no messages", None).status(), 400);
    /// ```
    pub fn bad_request(message: impl Into<String>, param: Option<&str>) -> Self {
        let mut e = Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_request",
            message.into(),
        );
        e.param = param.map(str::to_string);
        e
    }

    /// 413: the body is over the server's size limit.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::too_large(1024).status(), 413);
    /// ```
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "request_too_large",
            format!(
                "the request body is over the server's limit of {limit} bytes (--max-body-bytes)"
            ),
        )
    }

    /// 413: a request over one of the server's size limits, named.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::too_large_by("too many messages").status(), 413);
    /// ```
    pub fn too_large_by(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "request_too_large",
            message.into(),
        )
    }

    /// 401: a token is required and the request has none, or a wrong one.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::unauthorized().status(), 401);
    /// ```
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_token",
            "this server requires a key: send `Authorization: Bearer <KEY>` or `X-Memory-Token: <KEY>` (a key of --keys, or MEMORY_SERVE_TOKEN)".into(),
        )
    }

    /// 403: a request from a page of another site (its `Origin`), or
    /// addressed to a host the server is not (its `Host`).
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::forbidden("Origin `https://x.test` is not allowed").status(), 403);
    /// ```
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            "forbidden",
            message.into(),
        )
    }

    /// 409: what is asked for waits on something running.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::conflict("a call is running").status(), 409);
    /// ```
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            "conflict",
            message.into(),
        )
    }

    /// 415: a body that is not JSON.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::not_json(Some("text/plain")).status(), 415);
    /// ```
    pub fn not_json(content_type: Option<&str>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "unsupported_media_type",
            format!(
                "the body must be JSON, sent with `Content-Type: application/json` (it came with {})",
                content_type.map_or("no Content-Type".to_string(), |t| format!("`{t}`"))
            ),
        )
    }

    /// 404: no such session.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::no_session("s1").status(), 404);
    /// ```
    pub fn no_session(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "session_not_found",
            format!("no session `{id}` is stored"),
        )
    }

    /// 404: no response of this id is kept.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::no_response("resp_1").status(), 404);
    /// ```
    pub fn no_response(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "response_not_found",
            format!("no response `{id}` is kept"),
        )
    }

    /// 502: the upstream could not be reached or broke off.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::upstream("connection refused").status(), 502);
    /// ```
    pub fn upstream(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            "upstream_unreachable",
            message.into(),
        )
    }

    /// 500: the server failed (its store, its counter, a strategy).
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::internal("store backend failed").status(), 500);
    /// ```
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "memory_error",
            message.into(),
        )
    }

    /// The HTTP status.
    ///
    /// ```
    /// assert_eq!(memory_serve::ApiError::too_large(1).status().as_u16(), 413);
    /// ```
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// What is wrong, in words.
    ///
    /// ```
    /// assert!(memory_serve::ApiError::no_session("s").message().contains("`s`"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON body.
    ///
    /// ```
    /// let body = memory_serve::ApiError::upstream("down").body();
    /// assert_eq!(body["error"]["type"], "upstream_error");
    /// ```
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

impl ApiError {
    /// The JSON body in Anthropic's error shape, for the Messages front:
    /// `{"type": "error", "error": {"type", "message"}}`, the type named
    /// as Anthropic names its statuses.
    ///
    /// ```
    /// let body = memory_serve::ApiError::bad_request("no messages", Some("messages")).anthropic_body();
    /// assert_eq!(body["type"], "error");
    /// assert_eq!(body["error"]["type"], "invalid_request_error");
    /// ```
    pub fn anthropic_body(&self) -> serde_json::Value {
        let kind = match self.status.as_u16() {
            400 | 409 | 415 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            _ => "api_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": self.message}})
    }

    /// The upstream's own error status, with the message its body gives
    /// (in either protocol's error shape, or its text), for a client of
    /// another protocol.
    pub(crate) fn relayed(status: u16, body: &[u8]) -> Self {
        let value: Option<serde_json::Value> = serde_json::from_slice(body).ok();
        let message = value
            .as_ref()
            .and_then(|v| v["error"]["message"].as_str().or(v["message"].as_str()))
            .map(str::to_string)
            .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(2_000).collect());
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        let kind = if status.is_client_error() {
            "invalid_request_error"
        } else {
            "upstream_error"
        };
        let mut e = Self::new(
            status,
            kind,
            "upstream_error",
            format!("the upstream answered {}: {message}", status.as_u16()),
        );
        if status == StatusCode::TOO_MANY_REQUESTS {
            e.kind = "rate_limit_error";
        }
        e
    }

    /// The response, its body in `front`'s error shape.
    pub(crate) fn respond(self, front: crate::Protocol) -> Response {
        if front == crate::Protocol::Chat {
            return self.into_response();
        }
        let body = front.error_body(&self);
        let mut response = self.into_response();
        *response.body_mut() = axum::body::Body::from(body.to_string());
        response
            .headers_mut()
            .remove(axum::http::header::CONTENT_LENGTH);
        response
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<memory_core::MemoryError> for ApiError {
    fn from(e: memory_core::MemoryError) -> Self {
        Self::internal(e.to_string())
    }
}

impl From<memory_core::StoreError> for ApiError {
    fn from(e: memory_core::StoreError) -> Self {
        Self::internal(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.body()).unwrap_or_default();
        let mut response = (
            self.status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(seconds),
            );
        }
        response
    }
}

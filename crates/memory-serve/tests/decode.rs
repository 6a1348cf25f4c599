//! The request decoder never panics: `ChatCall::decode` on any bytes
//! returns a call or a 400, and a call gives an upstream body with every
//! other field untouched, which decodes again to as many messages.

use memory_serve::ChatCall;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Decodes `bytes`; what decodes must make an upstream body that keeps its
/// fields and decodes again.
fn check(bytes: &[u8]) {
    match ChatCall::decode(bytes) {
        Ok(call) => {
            let body = call.upstream_body(&call.messages);
            let Value::Object(fields) = &body else {
                panic!("the upstream body is not an object: {body}");
            };
            for (name, value) in &call.rest {
                assert_eq!(fields.get(name), Some(value), "field {name} changed");
            }
            let messages = fields["messages"].as_array().expect("messages");
            assert_eq!(messages.len(), call.messages.len());
            let again = ChatCall::decode(&serde_json::to_vec(&body).expect("it serializes"))
                .unwrap_or_else(|e| panic!("{body} does not decode again: {}", e.message()));
            assert_eq!(again.messages.len(), call.messages.len());
            assert_eq!(
                (again.stream, again.max_tokens),
                (call.stream, call.max_tokens)
            );
        }
        Err(e) => {
            assert_eq!(e.status().as_u16(), 400, "{}", e.message());
            assert!(!e.message().is_empty());
        }
    }
}

/// Any JSON value, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((field_name(), inner), 0..4)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A field name a message or a body may have, or any other.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "role",
            "content",
            "tool_calls",
            "tool_call_id",
            "name",
            "id",
            "type",
            "function",
            "arguments",
            "text",
            "image_url",
            "url",
            "reasoning_content",
            "refusal",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,8}",
    ]
}

/// A message: the usual shapes, with any field's value at times replaced
/// by any JSON.
fn message() -> impl Strategy<Value = Value> {
    let role = prop::sample::select(vec![
        "system",
        "user",
        "assistant",
        "tool",
        "developer",
        "x",
    ]);
    let text = ".{0,20}".prop_map(Value::String);
    let content = prop_oneof![
        text.clone(),
        Just(Value::Null),
        prop::collection::vec(
            (
                prop::sample::select(vec!["text", "image_url", "input_audio"]),
                ".{0,10}"
            )
                .prop_map(|(kind, t)| match kind {
                    "text" => json!({"type": "text", "text": t}),
                    "image_url" => json!({"type": "image_url", "image_url": {"url": t}}),
                    _ => json!({"type": kind, "data": t}),
                }),
            0..3
        )
        .prop_map(Value::Array),
        any_json(),
    ];
    let call = (".{0,6}", ".{0,6}", ".{0,12}").prop_map(|(id, name, arguments)| {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
    });
    let calls = prop_oneof![
        prop::collection::vec(call, 0..3).prop_map(Value::Array),
        any_json(),
    ];
    (
        role,
        content,
        prop::option::of(calls),
        prop::option::of(".{0,6}"),
        prop::collection::vec((field_name(), any_json()), 0..2),
    )
        .prop_map(|(role, content, calls, call_id, extra)| {
            let mut m = Map::new();
            for (k, v) in extra {
                m.insert(k, v);
            }
            m.insert("role".into(), json!(role));
            m.insert("content".into(), content);
            if let Some(c) = calls {
                m.insert("tool_calls".into(), c);
            }
            if let Some(id) = call_id {
                m.insert("tool_call_id".into(), json!(id));
            }
            Value::Object(m)
        })
}

/// A request body: messages, the fields the decoder reads (of any type at
/// times), and others.
fn body() -> impl Strategy<Value = Value> {
    let limit = prop_oneof![
        any::<u32>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        any_json(),
    ];
    (
        prop_oneof![
            4 => prop::collection::vec(message(), 0..6).prop_map(Value::Array),
            1 => any_json(),
        ],
        prop::option::of(prop_oneof![any::<bool>().prop_map(Value::Bool), any_json()]),
        prop::option::of(limit.clone()),
        prop::option::of(limit),
        prop::collection::vec((field_name(), any_json()), 0..3),
    )
        .prop_map(|(messages, stream, max_tokens, max_completion, extra)| {
            let mut b = Map::new();
            for (k, v) in extra {
                b.insert(k, v);
            }
            b.insert("model".into(), json!("m"));
            b.insert("messages".into(), messages);
            if let Some(s) = stream {
                b.insert("stream".into(), s);
            }
            if let Some(n) = max_tokens {
                b.insert("max_tokens".into(), n);
            }
            if let Some(n) = max_completion {
                b.insert("max_completion_tokens".into(), n);
            }
            Value::Object(b)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_bytes_decode_or_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes);
    }

    #[test]
    fn json_ish_text_decodes_or_is_refused(text in r#"[\[\]{}":,0-9a-z \\.eE+-]{0,200}"#) {
        check(text.as_bytes());
        check(format!(r#"{{"messages": [{text}]}}"#).as_bytes());
    }

    #[test]
    fn request_shaped_bodies_decode_or_are_refused(body in body()) {
        let bytes = serde_json::to_vec(&body).unwrap();
        check(&bytes);
        // Cut short, it is refused, never a panic.
        check(&bytes[..bytes.len() / 2]);
    }
}

#[test]
fn a_valid_body_decodes_and_keeps_its_fields() {
    let body = json!({
        "model": "m", "temperature": 0.5, "stream": false, "max_tokens": 9,
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "u"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "r"}
        ]
    });
    let call = ChatCall::decode(&serde_json::to_vec(&body).unwrap()).unwrap();
    assert_eq!(call.messages.len(), 4);
    check(&serde_json::to_vec(&body).unwrap());
}

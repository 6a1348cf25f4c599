//! The conversion is lossless: Rig's messages, recorded and restored (also
//! through the carries' JSON, as a store keeps them), come back equal; and
//! messages of ours that Rig can hold come back equal from Rig's types.

use memory_core::{ContentBlock, ImageContent, Message, ToolCall};
use memory_rig::{Carry, Recorded, to_ours, to_rig};
use proptest::prelude::*;
use rig_core::completion::Message as RigMessage;
use rig_core::message::{
    AssistantContent, AssistantMessage, Audio, AudioMediaType, CallId, Document, DocumentMediaType,
    DocumentSourceKind, Fingerprint, Image, ImageDetail, ImageMediaType, Native, Opaque, Origin,
    Reasoning, StopReason, Text, ToolFunction, ToolName, ToolResult, ToolResultContent,
    UserContent,
};
use serde_json::{Value, json};

fn words() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,16}",
        "[a-zA-Z0-9 .,\n]{0,40}",
        Just("数据 ✓ naïve".to_owned())
    ]
}

fn native() -> impl Strategy<Value = Option<Native>> {
    proptest::option::of("[a-z0-9]{1,8}".prop_map(|id| {
        let item = json!({ "type": "item", "id": id });
        Native {
            fingerprint: Fingerprint::of(&item),
            item,
        }
    }))
}

fn text() -> impl Strategy<Value = Text> {
    (words(), native()).prop_map(|(words, native)| {
        let mut text = Text::new(words);
        text.native = native;
        text
    })
}

fn image() -> impl Strategy<Value = Image> {
    (
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..12)
                .prop_map(|b| DocumentSourceKind::Base64(base64_of(&b))),
            "[a-z]{1,8}"
                .prop_map(|p| DocumentSourceKind::Url(format!("https://x.invalid/{p}.png"))),
            Just(DocumentSourceKind::Base64("not base64!".into())),
        ],
        proptest::option::of(prop_oneof![
            Just(ImageMediaType::PNG),
            Just(ImageMediaType::JPEG)
        ]),
        proptest::option::of(prop_oneof![
            Just(ImageDetail::Low),
            Just(ImageDetail::High),
            Just(ImageDetail::Auto)
        ]),
    )
        .prop_map(|(data, media_type, detail)| Image {
            data,
            media_type,
            detail,
            ..Image::default()
        })
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn call_id() -> impl Strategy<Value = String> {
    "c[0-9]{1,3}"
}

fn tool_name() -> impl Strategy<Value = ToolName> {
    prop_oneof![Just("read"), Just("shell"), Just("search")].prop_map(|n| ToolName::new(n).unwrap())
}

fn tool_result() -> impl Strategy<Value = ToolResult> {
    (
        call_id(),
        tool_name(),
        proptest::collection::vec(
            prop_oneof![
                words().prop_map(|t| ToolResultContent::Text(Text::new(t))),
                any::<i32>().prop_map(|n| ToolResultContent::Json {
                    value: json!({ "n": n })
                }),
                image().prop_map(ToolResultContent::Image),
            ],
            0..3,
        ),
        any::<bool>(),
    )
        .prop_map(|(id, name, content, is_error)| ToolResult {
            call: CallId::from_wire(id),
            name,
            content,
            is_error,
        })
}

fn user_content() -> impl Strategy<Value = UserContent> {
    prop_oneof![
        3 => text().prop_map(UserContent::Text),
        2 => tool_result().prop_map(UserContent::ToolResult),
        1 => image().prop_map(UserContent::Image),
        1 => words().prop_map(|w| UserContent::Document(Document {
            data: DocumentSourceKind::String(w),
            media_type: Some(DocumentMediaType::TXT),
            additional_params: None,
        })),
        1 => Just(UserContent::Audio(Audio {
            data: DocumentSourceKind::Base64("UklGRg==".into()),
            media_type: Some(AudioMediaType::WAV),
        })),
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,6}".prop_map(|p| format!(r#"{{"path":"src/{p}.rs"}}"#)),
        Just("{}".to_owned()),
        Just(r#"{"cmd": "ls",  "all":true}"#.to_owned()),
        Just(r#"{"cut": "of"#.to_owned()),
        Just("[1,2]".to_owned()),
    ]
}

fn assistant_content() -> impl Strategy<Value = AssistantContent> {
    prop_oneof![
        3 => text().prop_map(AssistantContent::Text),
        2 => (words(), any::<bool>(), native()).prop_map(|(t, redacted, native)| {
            let mut r = Reasoning::new(t);
            r.redacted = redacted;
            r.native = native;
            AssistantContent::Reasoning(r)
        }),
        3 => (call_id(), tool_name(), arguments(), native()).prop_map(|(id, name, args, native)| {
            let mut call = rig_core::message::ToolCall::new(
                CallId::from_wire(id),
                ToolFunction::parse(name, &args),
            );
            call.native = native;
            AssistantContent::ToolCall(call)
        }),
        1 => image().prop_map(AssistantContent::Image),
        1 => ("[a-z]{1,8}", any::<bool>()).prop_map(|(kind, replay)| {
            AssistantContent::Opaque(Opaque { item: json!({ "type": kind }), replay })
        }),
    ]
}

fn rig_message() -> impl Strategy<Value = RigMessage> {
    prop_oneof![
        1 => words().prop_map(|content| RigMessage::System { content }),
        3 => proptest::collection::vec(user_content(), 0..4)
            .prop_map(|content| RigMessage::User { content }),
        3 => (
            proptest::collection::vec(assistant_content(), 0..4),
            proptest::option::of(("[a-z]{1,6}", "[a-z0-9-]{1,8}").prop_map(|(p, m)| Origin::new("chat", p, m))),
            proptest::option::of(prop_oneof![
                Just(StopReason::Stop),
                Just(StopReason::ToolUse),
                Just(StopReason::Length),
                words().prop_map(StopReason::Error),
            ]),
        )
            .prop_map(|(content, origin, stop)| {
                RigMessage::Assistant(AssistantMessage::new(content).with_origin(origin).with_stop(stop))
            }),
    ]
}

fn record_all(rig: &[RigMessage]) -> (Recorded, Vec<Message>, Vec<Carry>) {
    let mut recorded = Recorded::new();
    let (ours, carries) = rig.iter().flat_map(|m| recorded.record(m)).unzip();
    (recorded, ours, carries)
}

/// Messages of ours Rig can hold: named results, known image types, wire
/// blocks of any JSON, non-empty call ids and names, arguments as compact
/// JSON objects.
fn our_message() -> impl Strategy<Value = Message> {
    let block = prop_oneof![
        words().prop_map(ContentBlock::Text),
        (
            prop_oneof![Just("image/png"), Just("image/jpeg"), Just("image/x-raw")],
            proptest::collection::vec(any::<u8>(), 0..8),
            proptest::option::of(prop_oneof![Just("low"), Just("auto"), Just("ultra")]),
        )
            .prop_map(|(mime, data, detail)| {
                let image = ImageContent::new(mime, data);
                ContentBlock::Image(match detail {
                    Some(detail) => image.with_detail(detail),
                    None => image,
                })
            }),
        "[a-z]{1,6}".prop_map(|t| ContentBlock::Wire(json!({ "type": "input_audio", "id": t }))),
    ];
    prop_oneof![
        words().prop_map(Message::System),
        proptest::collection::vec(block, 0..3).prop_map(Message::User),
        (
            words(),
            proptest::option::of(words()),
            proptest::collection::vec(
                (call_id(), "[a-z]{1,6}", "[a-z]{0,6}").prop_map(|(id, name, v)| {
                    ToolCall::new(id, name, serde_json::to_string(&json!({ "v": v })).unwrap())
                }),
                0..3
            )
        )
            .prop_map(|(content, reasoning, tool_calls)| Message::Assistant {
                content,
                reasoning,
                tool_calls
            }),
        (call_id(), words(), "[a-z]{1,6}").prop_map(|(id, content, name)| Message::ToolResult {
            tool_call_id: id,
            content,
            name: Some(name)
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Rig -> ours -> Rig gives Rig's messages back, equal.
    #[test]
    fn rig_messages_come_back_equal(rig in proptest::collection::vec(rig_message(), 0..8)) {
        let (recorded, ours, _) = record_all(&rig);
        prop_assert_eq!(recorded.restore(&ours).unwrap(), rig);
    }

    /// The same after the carries went through JSON, as a store keeps them.
    #[test]
    fn rig_messages_come_back_equal_from_a_store(rig in proptest::collection::vec(rig_message(), 0..8)) {
        let (_, ours, carries) = record_all(&rig);
        let stored: Vec<Carry> = carries
            .iter()
            .map(|c| serde_json::from_str(&serde_json::to_string(c).unwrap()).unwrap())
            .collect();
        let reopened = Recorded::from_parts(ours.clone(), stored).unwrap();
        prop_assert_eq!(reopened.originals(), rig.as_slice());
        prop_assert_eq!(reopened.restore(&ours).unwrap(), rig);
    }

    /// Ours -> Rig -> ours gives ours back, equal.
    #[test]
    fn our_messages_come_back_equal(ours in proptest::collection::vec(our_message(), 0..8)) {
        let rig = to_rig(&ours).unwrap();
        let back: Vec<Message> = rig.iter().flat_map(to_ours).collect();
        prop_assert_eq!(back, ours);
    }

    /// What is not Rig-shaped in ours is carried in Rig's types, not dropped.
    #[test]
    fn rig_content_ours_cannot_type_is_carried(rig in rig_message()) {
        let ours = to_ours(&rig);
        let carried: usize = ours
            .iter()
            .map(|m| match m {
                Message::User(blocks) => blocks.iter().filter(|b| matches!(b, ContentBlock::Wire(Value::Object(_)))).count(),
                _ => 0,
            })
            .sum();
        let media = match &rig {
            RigMessage::User { content } => content
                .iter()
                .filter(|c| matches!(c, UserContent::Audio(_) | UserContent::Document(_)))
                .count(),
            _ => 0,
        };
        prop_assert!(carried >= media, "{media} media items, {carried} carried: {ours:?}");
    }
}

#[test]
fn a_shrunk_tool_result_keeps_its_error_flag_and_a_shrunk_turn_its_origin() {
    let call = rig_core::message::ToolCall::new(
        CallId::from_wire("c1"),
        ToolFunction::parse(ToolName::new("shell").unwrap(), r#"{"cmd":"make"}"#),
    );
    let origin = Origin::new("chat", "openai", "gpt-test");
    let rig = vec![
        RigMessage::user("build it"),
        RigMessage::Assistant(
            AssistantMessage::new(vec![
                AssistantContent::Reasoning(Reasoning::new("think")),
                AssistantContent::ToolCall(call.clone()),
            ])
            .with_origin(origin.clone())
            .with_stop(StopReason::ToolUse),
        ),
        RigMessage::User {
            content: vec![UserContent::ToolResult(call.error_result(vec![
                ToolResultContent::Text(Text::new("error: long log")),
            ]))],
        },
    ];
    let (recorded, ours, _) = record_all(&rig);
    // A strategy shed the reasoning and truncated the output.
    let shrunk = vec![
        ours[0].clone(),
        Message::assistant_with_tools("", ours[1].tool_calls().to_vec()),
        Message::tool_result("c1", "error: [...]"),
    ];
    let back = recorded.restore(&shrunk).unwrap();
    assert_eq!(back[0], rig[0]);
    let RigMessage::Assistant(turn) = &back[1] else {
        panic!("an assistant turn: {back:?}")
    };
    assert_eq!(turn.origin.as_ref(), Some(&origin));
    assert_eq!(turn.tool_calls().next(), Some(&call));
    let RigMessage::User { content } = &back[2] else {
        panic!("a user message: {back:?}")
    };
    let UserContent::ToolResult(result) = &content[0] else {
        panic!("a tool result: {content:?}")
    };
    assert!(result.is_error);
    assert_eq!(result.name.as_str(), "shell");
    assert!(rig_core::transcript::validate_canonical(&back).is_ok());
}

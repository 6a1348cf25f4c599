//! What each fuzz target checks, one function per target, so that the
//! fuzz targets (under `fuzz/`, nightly) and the replay of their committed
//! regressions (`tests/fuzz_regressions.rs`, stable) run the same code.
//!
//! | function | target | what must hold for any bytes |
//! |---|---|---|
//! | [`input()`] | `input_chat`, `input_locomo`, `input_traj` | the `memory` command's readers return a transcript or an error, never panic; a repaired transcript validates |
//! | [`repair_trim`] | `repair_trim` | [`repair`] makes a valid transcript; every stage of the command trims it into a result that validates and passes the [`audit`](memory_core::audit) |
//! | [`wire()`] | `wire` | the OpenAI wire decoding returns messages or an error; what it decodes encodes and decodes to itself |
//! | [`serve_request`] | `serve_request` | `memory serve`'s request decoder returns a call or a 400; a call's upstream body keeps every other field and decodes again |
//!
//! Each function panics when its property fails: that is what the fuzzer
//! reports, and what fails the regression test.
//!
//! ```
//! memory_tests::fuzz::input(br#"[{"role": "tool", "tool_call_id": "x", "content": "?"}]"#);
//! memory_tests::fuzz::repair_trim(b"\x10\x00\x03\x05hello\x04\x01");
//! memory_tests::fuzz::wire(br#"{"choices": [{"message": {"role": "assistant", "content": "hi"}}]}"#);
//! memory_tests::fuzz::serve_request(br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#);
//! ```

use std::sync::Arc;

use memory_cli::input::{self, Verdict};
use memory_cli::registry::{self, StageConfig};
use memory_core::audit::Audit;
use memory_core::{Budget, CharTokenCounter, History, Message, ToolCall, repair};
use memory_core::{count_messages, summary, validate};
use memory_openai::wire;

use crate::block_on;

/// A fuzz target: its name under `fuzz/fuzz_targets/` and what it checks.
pub type Target = (&'static str, fn(&[u8]));

/// Every fuzz target, with the function it runs.
///
/// ```
/// assert!(memory_tests::fuzz::TARGETS.iter().any(|(name, _)| *name == "wire"));
/// ```
pub const TARGETS: [Target; 8] = [
    ("input_chat", input),
    ("input_locomo", input),
    ("input_traj", input),
    ("repair_trim", repair_trim),
    ("wire", wire),
    ("serve_request", serve_request),
    ("serve_messages", serve_messages),
    ("serve_responses", serve_responses),
];

/// The pipelines [`repair_trim`] runs every transcript through: each stage
/// of the command alone, and a pipeline of two. Summarizing stages use the
/// command's default, the offline extractive summarizer.
pub const PIPELINES: [&str; 5] = ["window", "thrift", "summarize", "compact", "compact,thrift"];

/// The readers of the `memory` command: [`input::parse`] (format detected
/// from the content: OpenAI chat JSON and JSONL, LoCoMo, SWE-agent `.traj`)
/// and [`input::parse_locomo`]. Each trajectory read is checked as loaded
/// and with `--repair`; a repaired one must validate.
///
/// # Panics
///
/// When a reader or the check panics, or a repaired trajectory is invalid.
///
/// ```
/// memory_tests::fuzz::input(b"{\"history\": [{\"role\": \"user\", \"content\": \"a\"}]}");
/// ```
pub fn input(bytes: &[u8]) {
    match input::parse(bytes) {
        Ok(mut parsed) => {
            let _ = parsed.format.to_string();
            for trajectory in &mut parsed.trajectories {
                let _ = (trajectory.name(), trajectory.position(0));
                if let Err(e) = input::check(&mut trajectory.clone(), false) {
                    let _ = e.in_file("input").to_string();
                }
                match input::check(trajectory, true) {
                    Ok(Verdict::Repaired(_)) => assert!(
                        validate(&trajectory.messages).is_empty(),
                        "a repaired trajectory is invalid: {:?}",
                        validate(&trajectory.messages)
                    ),
                    Ok(Verdict::Valid) => {}
                    Err(e) => panic!("--repair failed: {e:?}"),
                }
            }
        }
        Err(e) => {
            let _ = e.in_file("input").to_string();
        }
    }
    if let Err(e) = input::parse_locomo(bytes) {
        let _ = e.in_file("input").to_string();
    }
}

/// Repairs the transcript in `bytes` and trims it with every pipeline of
/// [`PIPELINES`] at a small budget taken from the first two bytes.
///
/// The rest of `bytes` is read as a transcript of the command when it is
/// one ([`input::parse`], every trajectory in turn), and otherwise decoded
/// as a sequence of messages ([`messages`]), which reaches orphan, early,
/// duplicate and missing tool results far more often than JSON does. The
/// leading system messages are protected, as the command protects them.
///
/// # Panics
///
/// When the repaired transcript is invalid, a trim fails or panics, or a
/// result is invalid or breaks an invariant of the audit.
///
/// ```
/// // 40 tokens; a user message, an orphan tool result, a call without one.
/// memory_tests::fuzz::repair_trim(b"\x28\x00\x01\x05hello\x04\x01\x03\x02");
/// ```
pub fn repair_trim(bytes: &[u8]) {
    let [low, high, rest @ ..] = bytes else {
        return;
    };
    let budget = Budget::tokens(1 + usize::from(u16::from_le_bytes([*low, *high]) % 600));
    match input::parse(rest) {
        Ok(parsed) if parsed.message_count() > 0 => {
            for trajectory in parsed.trajectories {
                trim_everywhere(&trajectory.messages, budget);
            }
        }
        _ => trim_everywhere(&messages(rest), budget),
    }
}

/// Repairs `transcript` and trims it with every pipeline of [`PIPELINES`].
fn trim_everywhere(transcript: &[Message], budget: Budget) {
    let repaired = repair(transcript).messages;
    let violations = validate(&repaired);
    assert!(violations.is_empty(), "repair left {violations:?}");
    let counter = Arc::new(CharTokenCounter);
    let counts = block_on(count_messages(counter.as_ref(), &repaired)).expect("char counts");
    let protected: Vec<usize> =
        (0..repaired.iter().take_while(|m| m.is_system()).count()).collect();
    let history = History::new(&repaired, &counts)
        .expect("one count per message")
        .protect(&protected);
    let config = StageConfig::new(budget, counter.clone());
    for spec in PIPELINES {
        let pipeline = registry::pipeline(spec, &config).expect("a known pipeline");
        let result = block_on(memory_core::TrimStrategy::trim_with_counts(
            &pipeline,
            &history,
            &budget,
            counter.as_ref(),
        ))
        .unwrap_or_else(|e| panic!("{spec} at {budget:?} failed: {e}"));
        let invalid = validate(&result.messages);
        assert!(invalid.is_empty(), "{spec} at {budget:?}: {invalid:?}");
        let report =
            block_on(Audit::new(&history, budget).count_and_check(&result, counter.as_ref()))
                .unwrap_or_else(|e| panic!("{spec} at {budget:?}: the audit failed: {e}"));
        assert!(
            report.is_clean(),
            "{spec} at {budget:?}: {:?}\ninput: {repaired:?}\nresult: {:?}",
            report.breaches,
            result.messages
        );
    }
}

/// Decodes `bytes` as messages, three fields each: an opcode, whose
/// `op % 7` picks a system message, a user message, a reply, a reply with
/// one to three tool calls, a tool result, a reply with reasoning or a
/// summary; an argument, which picks the number of calls and a call id out
/// of four (so ids repeat, and results go astray); and a text length (`% 48`),
/// followed by that many bytes of text.
///
/// ```
/// let m = memory_tests::fuzz::messages(b"\x01\x00\x02hi\x03\x01");
/// assert_eq!(m.len(), 2);
/// assert!(m[0].is_user() && !m[1].tool_calls().is_empty());
/// ```
pub fn messages(bytes: &[u8]) -> Vec<Message> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut next = || {
        let b = bytes.get(at).copied();
        at += 1;
        b
    };
    while let Some(op) = next() {
        let arg = next().unwrap_or(0);
        let mut text = || {
            let len = usize::from(next().unwrap_or(0) % 48);
            let taken: Vec<u8> = (0..len).map_while(|_| next()).collect();
            String::from_utf8_lossy(&taken).into_owned()
        };
        let id = |n: u8| format!("c{}", n % 4);
        out.push(match op % 7 {
            0 => Message::system(text()),
            1 => Message::user(text()),
            2 => Message::assistant(text()),
            3 => {
                let calls = (0..=arg % 3)
                    .map(|k| ToolCall::new(id(arg.wrapping_add(k)), "tool", "{}"))
                    .collect();
                Message::assistant_with_tools(text(), calls)
            }
            4 => Message::tool_result(id(arg), text()),
            5 => Message::Assistant {
                content: text(),
                reasoning: Some(text()),
                tool_calls: Vec::new(),
            },
            _ => summary::message(text()),
        });
    }
    out
}

/// The OpenAI wire decoding: [`memory_openai::parse_reply`] on a reply
/// body and [`wire::from_json_str`] on a message array. Whatever
/// decodes must encode ([`wire::to_value`]) and decode again to the
/// same messages.
///
/// # Panics
///
/// When a decoder panics or a decoded message does not survive the round
/// trip.
///
/// ```
/// memory_tests::fuzz::wire(br#"[{"role": "user", "content": [{"type": "text", "text": "a"}]}]"#);
/// ```
pub fn wire(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match memory_openai::parse_reply(text) {
        Ok(reply) => round_trip(std::slice::from_ref(&reply.message)),
        Err(e) => {
            let _ = e.to_string();
        }
    }
    match wire::from_json_str(text) {
        Ok(messages) => round_trip(&messages),
        Err(e) => {
            let _ = e.shifted("request, ").to_string();
        }
    }
}

/// Encodes `messages` and decodes them again: the same messages.
fn round_trip(messages: &[Message]) {
    let encoded = wire::to_value(messages);
    let decoded =
        wire::from_value(&encoded).unwrap_or_else(|e| panic!("{encoded} does not decode: {e}"));
    assert_eq!(decoded, messages, "changed on the wire: {encoded}");
}

/// `memory serve`'s request decoder: [`memory_serve::ChatCall::decode`] on
/// a request body. A body it refuses gets a 400 with a message; a call it
/// decodes gives an upstream body ([`ChatCall::upstream_body`]) with every
/// other field as sent, which decodes again to as many messages, with the
/// same `stream` and reply limit.
///
/// [`ChatCall::upstream_body`]: memory_serve::ChatCall::upstream_body
///
/// # Panics
///
/// When the decoder panics, refuses with another status than 400, or a
/// decoded call's upstream body changes a field or does not decode again.
///
/// ```
/// memory_tests::fuzz::serve_request(br#"{"messages": [{"role": "tool", "content": 1}]}"#);
/// ```
pub fn serve_request(bytes: &[u8]) {
    use memory_serve::ChatCall;
    let call = match ChatCall::decode(bytes) {
        Ok(call) => call,
        Err(e) => {
            assert_eq!(e.status().as_u16(), 400, "refused with {}", e.message());
            assert!(!e.message().is_empty(), "refused without a message");
            return;
        }
    };
    let body = call.upstream_body(&call.messages);
    let fields = body.as_object().expect("the upstream body is an object");
    for (name, value) in &call.rest {
        assert_eq!(fields.get(name), Some(value), "field {name} changed");
    }
    let encoded = serde_json::to_vec(&body).expect("the upstream body serializes");
    let again = ChatCall::decode(&encoded)
        .unwrap_or_else(|e| panic!("{body} does not decode again: {}", e.message()));
    assert_eq!(again.messages.len(), call.messages.len(), "{body}");
    assert_eq!(
        (again.stream, again.max_tokens),
        (call.stream, call.max_tokens),
        "{body}"
    );
}

/// The top-level fields the Messages decoder reads, one of which a refusal that is
/// not about the whole body names (`messages[3].content[0].type`, say).
const MESSAGES_FIELDS: [&str; 4] = ["messages", "system", "stream", "max_tokens"];

/// `memory serve`'s Messages front (`POST /v1/messages`): its request
/// decoder never panics; a refusal names the field at fault or says the
/// body is not JSON (or not an object); a decoded body keeps every turn.
///
/// # Panics
///
/// When one of those does not hold.
///
/// ```
/// memory_tests::fuzz::serve_messages(br#"{"messages": [{"role": "user", "content": "hi"}]}"#);
/// ```
pub fn serve_messages(bytes: &[u8]) {
    let decoded = memory_serve::test_util::decode_messages_request(bytes);
    check_decoded(bytes, decoded, message_bounds, &MESSAGES_FIELDS);
}

/// What a front's request decoder gave for `bytes`: a count of messages
/// within the `bounds` the body allows, or a refusal that names one of
/// `fields` or says the body is not JSON (or not an object).
fn check_decoded(
    bytes: &[u8],
    decoded: Result<usize, String>,
    bounds: fn(&[u8]) -> (usize, usize),
    fields: &[&str],
) {
    match decoded {
        Ok(decoded) => {
            let (fewest, most) = bounds(bytes);
            assert!(
                (fewest..=most).contains(&decoded),
                "{decoded} messages from a body that holds {fewest} to {most}"
            );
        }
        Err(message) => {
            let whole_body = message.starts_with("the body is not valid JSON")
                || message.starts_with("the body must be a JSON object");
            let named = message
                .split('`')
                .nth(1)
                .and_then(|field| field.split(['[', '.']).next());
            assert!(
                whole_body || named.is_some_and(|f| fields.contains(&f)),
                "a refusal that names no field: {message}"
            );
        }
    }
}

/// The fewest and the most messages a body that decodes may give: one
/// for `system`, one for each assistant or system turn and each user turn
/// sent as a string, and for a user turn of blocks at most one a block
/// (each tool result its own, each run of other blocks one).
fn message_bounds(bytes: &[u8]) -> (usize, usize) {
    let body: serde_json::Value = serde_json::from_slice(bytes).expect("a decoded body is JSON");
    let system = usize::from(!body["system"].is_null());
    let turns = body["messages"]
        .as_array()
        .expect("a decoded body has turns");
    let blocks: usize = turns
        .iter()
        .filter(|t| t["role"] == "user")
        .filter_map(|t| t["content"].as_array())
        .map(Vec::len)
        .sum();
    let whole = turns
        .iter()
        .filter(|t| t["role"] != "user" || t["content"].is_string())
        .count();
    (system + whole, system + whole + blocks)
}

/// The fields a Responses request decoder may name in a refusal.
const RESPONSES_FIELDS: [&str; 5] = [
    "input",
    "instructions",
    "stream",
    "max_output_tokens",
    "previous_response_id",
];

/// `memory serve`'s Responses front (`POST /v1/responses`): its request
/// decoder never panics; a refusal names the field at fault or says the
/// body is not JSON (or not an object); a decoded body keeps every item.
///
/// # Panics
///
/// When one of those does not hold.
///
/// ```
/// memory_tests::fuzz::serve_responses(br#"{"input": [{"role": "user", "content": "hi"}]}"#);
/// ```
pub fn serve_responses(bytes: &[u8]) {
    let decoded = memory_serve::test_util::decode_responses_request(bytes);
    check_decoded(bytes, decoded, item_bounds, &RESPONSES_FIELDS);
}

/// The fewest and the most messages a Responses body that decodes may
/// give: one for `instructions`, one for a string input, and for items
/// one each but for the model's, whose runs are one message each (a
/// closing `compaction_trigger` gives none).
fn item_bounds(bytes: &[u8]) -> (usize, usize) {
    let body: serde_json::Value = serde_json::from_slice(bytes).expect("a decoded body is JSON");
    let instructions = usize::from(body["instructions"].is_string());
    let items = match &body["input"] {
        serde_json::Value::String(_) => return (instructions + 1, instructions + 1),
        serde_json::Value::Array(items) => items.as_slice(),
        _ => &[],
    };
    let trigger = usize::from(
        items
            .last()
            .is_some_and(|i| i["type"] == "compaction_trigger"),
    );
    let model = |i: &serde_json::Value| {
        let kind = i["type"].as_str().unwrap_or("message");
        kind == "reasoning"
            || (kind.ends_with("_call") && kind != "compaction_trigger")
            || (kind == "message" && i["role"] == "assistant")
    };
    let own = items.iter().filter(|i| !model(i)).count() - trigger;
    let any_model = usize::from(items.iter().any(model));
    (
        instructions + own + any_model,
        instructions + items.len() - trigger,
    )
}

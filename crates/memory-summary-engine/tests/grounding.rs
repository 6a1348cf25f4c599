//! The grounding rule on realistic spans: a chat between two friends, a
//! coding agent's steps, tiny spans and other languages; good summaries
//! pass, replies that say nothing about the span fail.

use memory_core::{Message, ToolCall, transcript};
use memory_summary_engine::Rejection;
use memory_summary_engine::grounding::{self, Grounding};

/// A chat span in the shape of the LoCoMo conversations, as a summarizer
/// gets it.
fn chat() -> String {
    let turns = [
        ("user", "Hey Mel! Good to see you! How have you been?"),
        (
            "assistant",
            "Hey Caroline! I'm swamped with the kids and work. What's new with you?",
        ),
        (
            "user",
            "I went to an LGBTQ support group yesterday and the transgender stories were so inspiring.",
        ),
        (
            "assistant",
            "That's wonderful, Caroline. What will you do next?",
        ),
        (
            "user",
            "I'm going to keep studying and look into counseling jobs, maybe working with trans youth.",
        ),
        (
            "assistant",
            "You'd be great at counseling! I finished a painting of a lake sunrise last week, it calms me down.",
        ),
        (
            "user",
            "I love that! Are you still going camping with the kids in June?",
        ),
        (
            "assistant",
            "Yes, we booked a spot near the beach for June 12, the kids can't wait.",
        ),
    ];
    let messages: Vec<Message> = turns
        .iter()
        .map(|(role, text)| match *role {
            "user" => Message::user(*text),
            _ => Message::assistant(*text),
        })
        .collect();
    transcript::to_text(&messages)
}

/// A coding agent's span, tool calls and results included.
fn agent() -> String {
    let messages = vec![
        Message::user(
            "Crash report: mypy 1.6 raises INTERNAL ERROR on a TypedDict with a ReadOnly key. Fix it.",
        ),
        Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                "c1",
                "str_replace_editor",
                r#"{"command":"view","path":"/workspace/python__mypy__1.6/mypy/checkexpr.py","view_range":[4100,4140]}"#,
            )],
        ),
        Message::tool_result(
            "c1",
            "4112  def visit_typeddict_index_expr(self, td_type, index):\n4113      key_names = self.get_typeddict_keys(td_type)\n4114      assert index.value in td_type.items",
        ),
        Message::assistant_with_tools(
            "The assert fails when the key is wrapped in ReadOnly; I will unwrap it first.",
            vec![ToolCall::new(
                "c2",
                "str_replace_editor",
                r#"{"command":"str_replace","path":"/workspace/python__mypy__1.6/mypy/checkexpr.py","old_str":"assert index.value in td_type.items","new_str":"key = unwrap_readonly(index.value)"}"#,
            )],
        ),
        Message::tool_result("c2", "The file mypy/checkexpr.py has been edited."),
        Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                "c3",
                "execute_bash",
                r#"{"command":"python -m pytest mypy/test/testcheck.py -k typeddict -q"}"#,
            )],
        ),
        Message::tool_result("c3", "212 passed, 1 failed: testTypedDictReadOnlyKey"),
    ];
    transcript::to_text(&messages)
}

/// Asserts that each of `good` is grounded in `source` and each of `bad`
/// is not, rejected as [`Rejection::Ungrounded`].
fn judge(source: &str, good: &[&str], bad: &[&str]) {
    for (summaries, grounded) in [(good, true), (bad, false)] {
        for summary in summaries {
            let g = Grounding::of(source, summary);
            assert_eq!(g.is_grounded(), grounded, "{summary}: {g:?}");
            if let Err(err) = grounding::check(source, summary) {
                assert!(matches!(err, Rejection::Ungrounded { .. }), "{err}");
            }
        }
    }
}

#[test]
fn a_chat_span_is_judged_both_ways() {
    judge(
        &chat(),
        &[
            "Caroline went to an LGBTQ support group and wants to study counseling for trans youth. \
             Melanie has kids, painted a lake sunrise, and is going camping near the beach on June 12.",
            "Caroline: support group, counseling plans. Melanie: painting, camping in June.",
            // Without a name or a date, in other words, but about the span.
            "One friend found a support group inspiring and plans a counseling career; the other paints and will go camping with her kids.",
        ],
        &[
            "I'm ready to assist with any code you'd like me to work on.",
            "Sure! Let me know if you have any other questions.",
            "Here is a summary of the conversation between the user and the assistant.",
        ],
    );
}

#[test]
fn an_agent_span_is_judged_both_ways() {
    judge(
        &agent(),
        &[
            "## Goals\nFix mypy 1.6 INTERNAL ERROR on TypedDict with a ReadOnly key.\n## State\n\
             Edited mypy/checkexpr.py (visit_typeddict_index_expr) to unwrap ReadOnly; \
             pytest: 212 passed, testTypedDictReadOnlyKey still fails.",
            "Patched checkexpr.py to unwrap ReadOnly keys; one typeddict test still fails.",
        ],
        &[
            "I'm ready to assist with any code you'd like me to work on.",
            // Generic success talk: no file, no identifier, no number.
            "The changes have successfully resolved the issue and fixed any issues.",
            // The request's own framing, restated.
            "The assistant can now merge the steps into a single summary, so that it continues from its newest steps.",
        ],
    );
}

#[test]
fn a_tiny_span_accepts_a_summary_in_other_words() {
    let source = "user: thanks!\nassistant: You're welcome.";
    assert!(grounding::check(source, "Pleasantries.").is_ok());
    let source = "user: What's the capital of Australia?\nassistant: Canberra.";
    assert!(grounding::check(source, "Asked for Australia's capital: Canberra.").is_ok());
    assert!(grounding::check(source, "Canberra.").is_ok());
    assert!(grounding::check(source, "I can help with that!").is_err());
}

#[test]
fn other_languages_are_judged_by_their_own_words() {
    let german = "user: Kannst du die Datei config/settings.yaml prüfen? Der Timeout steht auf 30 Sekunden.\n\
                  assistant: In config/settings.yaml steht timeout: 30; ich setze ihn auf 120 Sekunden.";
    assert!(
        grounding::check(
            german,
            "Timeout in config/settings.yaml von 30 auf 120 Sekunden erhöht."
        )
        .is_ok()
    );
    assert!(
        grounding::check(
            german,
            "I'm ready to assist with any code you'd like me to work on."
        )
        .is_err()
    );
    let russian = "user: Напомни, когда встреча с Ириной по проекту бюджета?\n\
                   assistant: Встреча с Ириной в четверг в 15:00, обсуждаем бюджет отдела продаж.";
    assert!(
        grounding::check(
            russian,
            "Встреча с Ириной в четверг, 15:00: бюджет отдела продаж."
        )
        .is_ok()
    );
    assert!(
        grounding::check(
            russian,
            "Sure! Let me know if you have any other questions."
        )
        .is_err()
    );
    // A summary in another language than the span still shares its names
    // and numbers.
    assert!(
        grounding::check(
            russian,
            "Meeting with Ирина on Thursday at 15:00 about the sales budget."
        )
        .is_ok()
    );
}

//! Transcript validation and repair: tool pairing and order.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::message::{Message, ToolCall};
use crate::structure;

/// One way a transcript breaks the invariants. Indices are message positions.
///
/// ```
/// use memory_core::{validate, Message, Violation};
/// let v = validate(&[Message::tool_result("c1", "r")]);
/// assert_eq!(v, vec![Violation::OrphanResult { index: 0, tool_call_id: "c1".into() }]);
/// assert!(v[0].to_string().contains("message 0"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// A tool result whose call appears nowhere.
    OrphanResult {
        /// Position of the result.
        index: usize,
        /// The id it answers.
        tool_call_id: String,
    },
    /// A tool call with no result right after its message.
    UnansweredCall {
        /// Position of the assistant message.
        index: usize,
        /// The call's id.
        tool_call_id: String,
    },
    /// A result that comes before its call.
    ResultBeforeCall {
        /// Position of the result.
        index: usize,
        /// Position of the call's message.
        call_index: usize,
        /// The id.
        tool_call_id: String,
    },
    /// A result separated from its call by another message.
    DetachedResult {
        /// Position of the result.
        index: usize,
        /// Position of the call's message.
        call_index: usize,
        /// The id.
        tool_call_id: String,
    },
    /// A second result for a call already answered.
    DuplicateResult {
        /// Position of the second result.
        index: usize,
        /// The id.
        tool_call_id: String,
    },
    /// Two calls with the same id.
    DuplicateCallId {
        /// Position of the second call's message.
        index: usize,
        /// The id.
        tool_call_id: String,
    },
}

impl Violation {
    /// The position of the message the violation is about.
    ///
    /// ```
    /// use memory_core::{validate, Message};
    /// let v = validate(&[Message::user("hi"), Message::tool_result("c1", "r")]);
    /// assert_eq!(v[0].index(), 1);
    /// ```
    pub fn index(&self) -> usize {
        match self {
            Violation::OrphanResult { index, .. }
            | Violation::UnansweredCall { index, .. }
            | Violation::ResultBeforeCall { index, .. }
            | Violation::DetachedResult { index, .. }
            | Violation::DuplicateResult { index, .. }
            | Violation::DuplicateCallId { index, .. } => *index,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::OrphanResult {
                index,
                tool_call_id,
            } => write!(
                f,
                "message {index}: tool result for `{tool_call_id}` has no tool call"
            ),
            Violation::UnansweredCall {
                index,
                tool_call_id,
            } => write!(
                f,
                "message {index}: tool call `{tool_call_id}` has no result after it"
            ),
            Violation::ResultBeforeCall {
                index,
                call_index,
                tool_call_id,
            } => write!(
                f,
                "message {index}: tool result for `{tool_call_id}` comes before its call (message {call_index})"
            ),
            Violation::DetachedResult {
                index,
                call_index,
                tool_call_id,
            } => write!(
                f,
                "message {index}: tool result for `{tool_call_id}` is separated from its call (message {call_index})"
            ),
            Violation::DuplicateResult {
                index,
                tool_call_id,
            } => write!(
                f,
                "message {index}: second tool result for `{tool_call_id}`"
            ),
            Violation::DuplicateCallId {
                index,
                tool_call_id,
            } => write!(
                f,
                "message {index}: tool call id `{tool_call_id}` is used twice"
            ),
        }
    }
}

/// Every violation of tool pairing and order in `messages`, in order of
/// position. Empty means valid.
///
/// ```
/// use memory_core::{validate, Message, ToolCall};
/// let ok = [
///     Message::user("go"),
///     Message::assistant_with_tools("", vec![ToolCall::new("a", "t", "{}"), ToolCall::new("b", "t", "{}")]),
///     Message::tool_result("b", "2"),
///     Message::tool_result("a", "1"),
/// ];
/// assert!(validate(&ok).is_empty());
/// ```
pub fn validate(messages: &[Message]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let first_call = first_calls(messages, &mut violations);
    let mut answered: HashSet<&str> = HashSet::new();
    for step in structure::steps(messages) {
        let head = &messages[step.start];
        let calls: Vec<&str> = head.tool_calls().iter().map(|c| c.id.as_str()).collect();
        for i in step.clone() {
            let Some(id) = messages[i].tool_call_id() else {
                continue;
            };
            if calls.contains(&id) && first_call.get(id) == Some(&step.start) {
                if !answered.insert(id) {
                    violations.push(Violation::DuplicateResult {
                        index: i,
                        tool_call_id: id.to_string(),
                    });
                }
                continue;
            }
            let call = first_call.get(id).copied();
            violations.push(misplaced(i, id, call, answered.contains(id)));
        }
        for id in calls {
            let answered_here = messages[step.clone()]
                .iter()
                .any(|m| m.tool_call_id() == Some(id));
            if !answered_here && first_call.get(id) == Some(&step.start) {
                violations.push(Violation::UnansweredCall {
                    index: step.start,
                    tool_call_id: id.to_string(),
                });
            }
        }
    }
    violations.sort_by_key(Violation::index);
    violations
}

/// Where each call id is first made; a [`Violation::DuplicateCallId`] for
/// every later call with the same id.
fn first_calls<'m>(
    messages: &'m [Message],
    violations: &mut Vec<Violation>,
) -> HashMap<&'m str, usize> {
    let mut first_call: HashMap<&str, usize> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        for call in m.tool_calls() {
            if first_call.contains_key(call.id.as_str()) {
                violations.push(Violation::DuplicateCallId {
                    index: i,
                    tool_call_id: call.id.clone(),
                });
            } else {
                first_call.insert(&call.id, i);
            }
        }
    }
    first_call
}

/// What is wrong with result `index`, which answers `id` outside the step
/// that first called it (`call`, if anywhere); `answered` says whether that
/// call already has its result.
fn misplaced(index: usize, id: &str, call: Option<usize>, answered: bool) -> Violation {
    let tool_call_id = id.to_string();
    match call {
        None => Violation::OrphanResult {
            index,
            tool_call_id,
        },
        Some(call_index) if call_index > index => Violation::ResultBeforeCall {
            index,
            call_index,
            tool_call_id,
        },
        Some(_) if answered => Violation::DuplicateResult {
            index,
            tool_call_id,
        },
        Some(call_index) => Violation::DetachedResult {
            index,
            call_index,
            tool_call_id,
        },
    }
}

/// What [`repair`] did to one message.
///
/// ```
/// use memory_core::{repair, Message, RepairAction};
/// let fixed = repair(&[Message::tool_result("c1", "r")]);
/// assert_eq!(fixed.actions, vec![RepairAction::DroppedOrphan { index: 0, tool_call_id: "c1".into() }]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepairAction {
    /// A result with no call anywhere was dropped.
    DroppedOrphan {
        /// Its position in the input.
        index: usize,
        /// Its id.
        tool_call_id: String,
    },
    /// A second result for the same call was dropped.
    DroppedDuplicate {
        /// Its position in the input.
        index: usize,
        /// Its id.
        tool_call_id: String,
    },
    /// A result was moved to follow its call.
    MovedResult {
        /// Its position in the input.
        index: usize,
        /// Its id.
        tool_call_id: String,
    },
    /// A call with no result was given an explicit placeholder result.
    AddedMissingResult {
        /// Position of the call's message in the input.
        index: usize,
        /// The call's id.
        tool_call_id: String,
    },
    /// A call reusing the id of an earlier call was given a fresh id (and
    /// so was its result).
    RenamedCall {
        /// Position of the call's message in the input.
        index: usize,
        /// The id it reused.
        tool_call_id: String,
        /// Its new id.
        renamed_to: String,
    },
}

/// A repaired transcript and what was done to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    /// The valid transcript.
    pub messages: Vec<Message>,
    /// Every change, in order of the input positions they concern.
    pub actions: Vec<RepairAction>,
}

/// Text of the result [`repair`] adds for a call that has none.
pub const MISSING_RESULT: &str = "[no result was recorded for this tool call]";

/// Makes a transcript valid, deterministically, for histories loaded from
/// elsewhere. The rule:
///
/// 1. each tool call takes the first result with its id, wherever it stands
///    (before the next call that reuses the id), and that result is placed
///    right after the call's message, in the order of the calls;
/// 2. a call that reuses an id an earlier call has (some servers number
///    their calls afresh each turn) is renamed to a fresh id, `ID~2`,
///    `ID~3`, ..., and takes the first result with the reused id after its
///    message (before the next reuse), renamed with it;
/// 3. a call with no result gets an explicit placeholder result,
///    [`MISSING_RESULT`];
/// 4. a result whose id no call has is dropped, and so is every further
///    result for an id already answered;
/// 5. everything else keeps its order and content.
///
/// A valid transcript comes back unchanged, with no actions.
///
/// ```
/// use memory_core::{repair, validate, Message, ToolCall, MISSING_RESULT};
/// let broken = [
///     Message::user("go"),
///     Message::assistant_with_tools("", vec![ToolCall::new("a", "t", "{}")]),
///     Message::user("hello?"),
/// ];
/// let fixed = repair(&broken);
/// assert!(validate(&fixed.messages).is_empty());
/// assert_eq!(fixed.messages[2], Message::tool_result("a", MISSING_RESULT));
///
/// let reused = [
///     Message::assistant_with_tools("", vec![ToolCall::new("call_0", "ls", "{}")]),
///     Message::tool_result("call_0", "a.txt"),
///     Message::assistant_with_tools("", vec![ToolCall::new("call_0", "cat", "{}")]),
///     Message::tool_result("call_0", "hello"),
/// ];
/// let fixed = repair(&reused);
/// assert!(validate(&fixed.messages).is_empty());
/// assert_eq!(fixed.messages[2].tool_calls()[0].id, "call_0~2");
/// assert_eq!(fixed.messages[3], Message::tool_result("call_0~2", "hello"));
/// ```
pub fn repair(messages: &[Message]) -> Repaired {
    let mut repairer = Repairer::new(messages);
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        if m.is_tool_result() {
            continue;
        }
        let mut message = m.clone();
        let mut answers = Vec::new();
        let mut expected = i + 1;
        for (k, call) in m.tool_calls().iter().enumerate() {
            answers.push(repairer.answer(i, k, call, &mut message, &mut expected));
        }
        out.push(message);
        out.extend(answers);
    }
    let mut actions = repairer.actions;
    actions.extend(dropped(messages, &repairer.used));
    actions.sort_by_key(|a| match a {
        RepairAction::DroppedOrphan { index, .. }
        | RepairAction::DroppedDuplicate { index, .. }
        | RepairAction::MovedResult { index, .. }
        | RepairAction::AddedMissingResult { index, .. }
        | RepairAction::RenamedCall { index, .. } => *index,
    });
    Repaired {
        messages: out,
        actions,
    }
}

/// What [`repair`] knows of a transcript's calls and results as it goes.
struct Repairer<'m> {
    messages: &'m [Message],
    /// Where the results of each id are.
    results: HashMap<&'m str, Vec<usize>>,
    /// Which messages call each id.
    calls: HashMap<&'m str, Vec<usize>>,
    /// Every id in use (renamed ones included).
    ids: HashSet<String>,
    /// Results already placed after a call.
    used: HashSet<usize>,
    /// How many calls of each id were met so far.
    made: HashMap<&'m str, usize>,
    actions: Vec<RepairAction>,
}

impl<'m> Repairer<'m> {
    fn new(messages: &'m [Message]) -> Self {
        let mut results: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut calls: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut ids: HashSet<String> = HashSet::new();
        for (i, m) in messages.iter().enumerate() {
            if let Some(id) = m.tool_call_id() {
                results.entry(id).or_default().push(i);
                ids.insert(id.to_string());
            }
            for call in m.tool_calls() {
                calls.entry(&call.id).or_default().push(i);
                ids.insert(call.id.clone());
            }
        }
        Self {
            messages,
            results,
            calls,
            ids,
            used: HashSet::new(),
            made: HashMap::new(),
            actions: Vec::new(),
        }
    }

    /// The result of call `k` of message `i` (renamed in `message` when
    /// its id was used before): the first unused one in reach, or an
    /// explicit placeholder; `expected` is where the next result belongs.
    fn answer(
        &mut self,
        i: usize,
        k: usize,
        call: &'m ToolCall,
        message: &mut Message,
        expected: &mut usize,
    ) -> Message {
        let id = call.id.as_str();
        let reuse = self.made.entry(id).or_default();
        *reuse += 1;
        let first = *reuse == 1;
        // Results before the next message that calls the id again; a
        // reusing call's only after its own message.
        let until = self.calls[id]
            .iter()
            .copied()
            .find(|&c| c > i)
            .unwrap_or(self.messages.len());
        let from = if first { 0 } else { i + 1 };
        let result = self.results.get(id).and_then(|found| {
            found
                .iter()
                .copied()
                .find(|&r| (from..until).contains(&r) && !self.used.contains(&r))
        });
        let id = if first {
            call.id.clone()
        } else {
            let fresh = fresh_id(id, &mut self.ids);
            self.actions.push(RepairAction::RenamedCall {
                index: i,
                tool_call_id: call.id.clone(),
                renamed_to: fresh.clone(),
            });
            rename_call(message, k, &fresh);
            fresh
        };
        let Some(r) = result else {
            self.actions.push(RepairAction::AddedMissingResult {
                index: i,
                tool_call_id: id.clone(),
            });
            return Message::tool_result(id, MISSING_RESULT);
        };
        self.used.insert(r);
        if r != *expected {
            self.actions.push(RepairAction::MovedResult {
                index: r,
                tool_call_id: call.id.clone(),
            });
        }
        *expected = r + 1;
        let mut answer = self.messages[r].clone();
        if let Message::ToolResult { tool_call_id, .. } = &mut answer {
            tool_call_id.clone_from(&id);
        }
        answer
    }
}

/// `id~N` for the smallest `N` from 2 that no id in `taken` has; taken
/// from now on.
fn fresh_id(id: &str, taken: &mut HashSet<String>) -> String {
    let fresh = (2..)
        .map(|n| format!("{id}~{n}"))
        .find(|candidate| !taken.contains(candidate))
        .expect("an unused id");
    taken.insert(fresh.clone());
    fresh
}

/// Gives call `k` of `message` the id `id`.
fn rename_call(message: &mut Message, k: usize, id: &str) {
    if let Message::Assistant { tool_calls, .. } = message {
        tool_calls[k].id = id.to_string();
    }
}

/// The results [`repair`] leaves out (those not `used`): a duplicate when
/// a result with their id was placed, an orphan otherwise.
fn dropped(messages: &[Message], used: &HashSet<usize>) -> Vec<RepairAction> {
    let answered: HashSet<&str> = used
        .iter()
        .filter_map(|&r| messages[r].tool_call_id())
        .collect();
    let mut actions = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let Some(id) = m.tool_call_id() else {
            continue;
        };
        if used.contains(&i) {
            continue;
        }
        actions.push(if answered.contains(id) {
            RepairAction::DroppedDuplicate {
                index: i,
                tool_call_id: id.to_string(),
            }
        } else {
            RepairAction::DroppedOrphan {
                index: i,
                tool_call_id: id.to_string(),
            }
        });
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(ids: &[&str]) -> Message {
        Message::assistant_with_tools(
            "",
            ids.iter().map(|id| ToolCall::new(*id, "t", "{}")).collect(),
        )
    }

    #[test]
    fn each_kind_of_violation_is_named_with_its_position() {
        let m = [
            Message::tool_result("x", "before"), // 0: before its call at 2
            Message::user("go"),                 // 1
            call(&["x", "y"]),                   // 2: y unanswered
            Message::tool_result("x", "dup?"),   // 3: x answered here
            Message::tool_result("x", "again"),  // 4: duplicate
            Message::user("more"),               // 5
            Message::tool_result("z", "orphan"), // 6
            call(&["w"]),                        // 7
            Message::assistant("interrupt"),     // 8
            Message::tool_result("w", "late"),   // 9: detached
        ];
        let v = validate(&m);
        assert!(v.contains(&Violation::ResultBeforeCall {
            index: 0,
            call_index: 2,
            tool_call_id: "x".into()
        }));
        assert!(v.contains(&Violation::UnansweredCall {
            index: 2,
            tool_call_id: "y".into()
        }));
        assert!(v.contains(&Violation::DuplicateResult {
            index: 4,
            tool_call_id: "x".into()
        }));
        assert!(v.contains(&Violation::OrphanResult {
            index: 6,
            tool_call_id: "z".into()
        }));
        assert!(v.contains(&Violation::UnansweredCall {
            index: 7,
            tool_call_id: "w".into()
        }));
        assert!(v.contains(&Violation::DetachedResult {
            index: 9,
            call_index: 7,
            tool_call_id: "w".into()
        }));
        assert_eq!(v.len(), 6, "{v:?}");
    }

    #[test]
    fn repair_makes_any_of_them_valid_and_is_idempotent() {
        let m = [
            Message::tool_result("x", "before"),
            Message::user("go"),
            call(&["x", "y"]),
            Message::tool_result("x", "dup"),
            Message::user("more"),
            Message::tool_result("z", "orphan"),
            call(&["w"]),
            Message::assistant("interrupt"),
            Message::tool_result("w", "late"),
        ];
        let fixed = repair(&m);
        assert!(validate(&fixed.messages).is_empty(), "{:?}", fixed.messages);
        assert_eq!(
            fixed.messages,
            vec![
                Message::user("go"),
                call(&["x", "y"]),
                Message::tool_result("x", "before"),
                Message::tool_result("y", MISSING_RESULT),
                Message::user("more"),
                call(&["w"]),
                Message::tool_result("w", "late"),
                Message::assistant("interrupt"),
            ]
        );
        let again = repair(&fixed.messages);
        assert_eq!(again.messages, fixed.messages);
        assert!(again.actions.is_empty());
    }

    #[test]
    fn reused_call_ids_are_renamed_and_keep_their_own_results() {
        // Found by fuzzing: a second call with an id already used left the
        // repaired transcript invalid and its result dropped.
        let m = [
            Message::user("go"),
            call(&["c1", "c2"]),
            Message::tool_result("c1", "one"),
            Message::tool_result("c2", "two"),
            call(&["c2", "c3", "c2"]),
            Message::tool_result("c2", "again"),
            Message::tool_result("c2", "third"),
            Message::tool_result("c2", "~2"),
        ];
        let fixed = repair(&m);
        assert!(validate(&fixed.messages).is_empty(), "{:?}", fixed.messages);
        let renamed = fixed.messages[4].tool_calls();
        let ids: Vec<&str> = renamed.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c2~2", "c3", "c2~3"]);
        assert_eq!(
            fixed.messages[5..],
            [
                Message::tool_result("c2~2", "again"),
                Message::tool_result("c3", MISSING_RESULT),
                Message::tool_result("c2~3", "third"),
            ]
        );
        let renames = fixed
            .actions
            .iter()
            .filter(|a| matches!(a, RepairAction::RenamedCall { index: 4, .. }))
            .count();
        assert_eq!(renames, 2, "{:?}", fixed.actions);
        assert!(fixed.actions.contains(&RepairAction::DroppedDuplicate {
            index: 7,
            tool_call_id: "c2".into()
        }));
        assert_eq!(repair(&fixed.messages).messages, fixed.messages);
    }

    #[test]
    fn valid_transcripts_are_untouched() {
        let m = [
            Message::system("s"),
            Message::user("go"),
            call(&["a", "b"]),
            Message::tool_result("a", "1"),
            Message::tool_result("b", "2"),
            Message::assistant("done"),
        ];
        assert!(validate(&m).is_empty());
        let fixed = repair(&m);
        assert_eq!(fixed.messages, m.to_vec());
        assert!(fixed.actions.is_empty());
    }
}

//! A text-only agent's observations: the user message after a step that
//! wrote its command in its text is that command's output (the rule is
//! `memory_core::structure`'s, shared with the index of what a context
//! leaves out).

pub(crate) use memory_core::structure::{is_observation, issues_a_command};

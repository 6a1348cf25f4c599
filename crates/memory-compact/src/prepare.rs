//! From a plan to the requests: what is sent, with which previous summary,
//! files and instructions.

use memory_core::{History, Message};

use crate::call::Job;
use crate::covering::identity;
use crate::prompt::{self, Part};
use crate::state::lock;
use crate::turns::Plan;
use crate::{Compact, FileOps, Preparation, body};

impl Compact {
    /// The job that summarizes `plan` of `work`. `extra` instructions come
    /// after the standing ones.
    pub(crate) fn prepare(
        &self,
        work: &History<'_>,
        plan: &Plan,
        extra: Option<&str>,
        manual: bool,
        background: bool,
    ) -> Job {
        let messages = work.messages();
        let previous: Vec<String> = plan
            .previous
            .iter()
            .filter_map(|&i| body::text(&messages[i]))
            .filter(|t| !t.is_empty())
            .collect();
        let previous = (!previous.is_empty()).then(|| previous.join("\n\n"));

        let mut files = FileOps::new();
        for &i in &plan.previous {
            if let Some(listed) = body::files(&messages[i]) {
                files.merge(&listed);
            }
        }
        if let Some((made, remembered)) = &lock(&self.state).files
            && plan
                .previous
                .iter()
                .any(|&i| identity(&messages[i]) == *made)
        {
            files.merge(remembered);
        }
        let earlier: Vec<Message> = plan.earlier.iter().map(|&i| messages[i].clone()).collect();
        let current: Vec<Message> = plan.current.iter().map(|&i| messages[i].clone()).collect();
        files.record_messages(earlier.iter().chain(&current));

        let instructions = match (self.instructions.as_deref(), extra) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b).map(str::to_string),
        };
        let question = plan.question.map(|q| messages[q].text());
        let request = |part: Part<'_>| {
            prompt::request(
                &self.prompt,
                part,
                instructions.as_deref(),
                self.max_input_chars,
                &self.options,
            )
        };
        let requests = if plan.is_split() {
            vec![
                request(Part {
                    messages: &earlier,
                    previous: previous.as_deref(),
                    question: None,
                }),
                request(Part {
                    messages: &current,
                    previous: None,
                    question: question.as_deref(),
                }),
            ]
        } else if current.is_empty() {
            vec![request(Part {
                messages: &earlier,
                previous: previous.as_deref(),
                question: None,
            })]
        } else {
            vec![request(Part {
                messages: &current,
                previous: previous.as_deref(),
                question: question.as_deref(),
            })]
        };

        let (messages, turn_prefix) = if plan.is_split() {
            (earlier, current)
        } else {
            let mut all = earlier;
            all.extend(current);
            (all, Vec::new())
        };
        Job {
            preparation: Preparation {
                messages,
                turn_prefix,
                previous_summary: previous,
                files,
                instructions,
                tokens: plan.new_tokens,
                tokens_before: work.total(),
                background,
                manual,
            },
            requests,
        }
    }
}

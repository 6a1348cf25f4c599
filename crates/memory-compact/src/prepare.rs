//! From a plan to the requests: what is sent, with which previous summary,
//! files and instructions.

use memory_core::{History, MemoryError, Message, TokenCounter};
use memory_summary_engine::cap;

use crate::call::Job;
use crate::prompt::Part;
use crate::settings::{Mode, Settings, Trigger};
use crate::split::Piece;
use crate::summary_state::SummaryState;
use crate::turns::Plan;
use crate::{FileOps, Preparation, body};

/// The file list of a summary keeps room for itself of up to
/// `1 / FILES_SHARE` of the summary cap: the model is asked for that much
/// less.
const FILES_SHARE: usize = 4;

/// One compaction as it was asked for: where it runs, what asked for it,
/// and the instructions added for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compaction<'a> {
    /// Foreground or background.
    pub mode: Mode,
    /// The threshold, or a caller.
    pub trigger: Trigger,
    /// Instructions after the standing ones.
    pub extra: Option<&'a str>,
}

impl Compaction<'_> {
    /// A compaction the threshold asked for, in `mode`.
    pub fn threshold(mode: Mode) -> Self {
        Compaction {
            mode,
            trigger: Trigger::Threshold,
            extra: None,
        }
    }
}

/// The job that summarizes `plan` of `work`.
///
/// # Errors
///
/// Counting the requests failed.
pub(crate) async fn prepare(
    settings: &Settings,
    summary_state: &SummaryState,
    work: &History<'_>,
    plan: &Plan,
    compaction: Compaction<'_>,
    counter: &dyn TokenCounter,
) -> Result<Job, MemoryError> {
    let messages = work.messages();
    let pick = |indices: &[usize]| -> Vec<Message> {
        indices.iter().map(|&i| messages[i].clone()).collect()
    };
    let (earlier, current) = (pick(&plan.earlier), pick(&plan.current));
    let previous = previous_summary(messages, plan);
    let files = files(
        summary_state,
        messages,
        plan,
        earlier.iter().chain(&current),
    );
    let instructions = settings.instructions(compaction.extra);
    let question = plan.question.map(|q| messages[q].text());
    let (requests, pieces) = {
        let mut template = settings.template(instructions.as_deref());
        template.options.max_tokens = Some(reply_share(settings, &files, counter).await?);
        let mut requests = Vec::with_capacity(2);
        let mut pieces = Vec::with_capacity(2);
        for part in parts(
            plan,
            &earlier,
            &current,
            previous.as_deref(),
            question.as_deref(),
        ) {
            requests.push(template.request(part, counter).await?);
            pieces.push(Piece::of(part, &template));
        }
        (requests, pieces)
    };
    let (messages, turn_prefix) = if plan.is_split() {
        (earlier, current)
    } else {
        ([earlier, current].concat(), Vec::new())
    };
    Ok(Job {
        preparation: Preparation {
            messages,
            turn_prefix,
            previous_summary: previous,
            files,
            instructions,
            tokens: plan.new_tokens,
            tokens_before: work.total(),
            background: compaction.mode == Mode::Background,
            manual: compaction.trigger == Trigger::Manual,
        },
        requests,
        pieces,
    })
}

/// The model's share of the summary cap: the cap holds the whole message,
/// so it is the cap less the prefix, handle line and header every summary carries, and
/// less the room of the file list, up to a quarter of the cap.
async fn reply_share(
    settings: &Settings,
    files: &FileOps,
    counter: &dyn TokenCounter,
) -> Result<u32, MemoryError> {
    let cap = settings.summary_max_tokens() as usize;
    let overhead = counter.count_message(&body::framing()).await?;
    let listed = match files.is_empty() {
        true => 0,
        false => counter.count(&files.render()).await?.min(cap / FILES_SHARE),
    };
    // At least one token is asked for: a summary that then overruns its cap
    // is refused when it comes back.
    let share = cap::reply_allowance(cap, overhead + listed).unwrap_or(1);
    Ok(u32::try_from(share).unwrap_or(u32::MAX))
}

/// The text of Compact's earlier summaries, to merge.
fn previous_summary(messages: &[Message], plan: &Plan) -> Option<String> {
    let previous: Vec<String> = plan
        .previous
        .iter()
        .filter_map(|&i| body::text(&messages[i]))
        .filter(|t| !t.is_empty())
        .collect();
    (!previous.is_empty()).then(|| previous.join("\n\n"))
}

/// The files the earlier summaries list (those of the last summary made
/// included, when it is one of them) and those `new` messages touch.
fn files<'m>(
    summary_state: &SummaryState,
    messages: &[Message],
    plan: &Plan,
    new: impl Iterator<Item = &'m Message>,
) -> FileOps {
    let mut files = FileOps::new();
    for &i in &plan.previous {
        if let Some(listed) = body::files(&messages[i]) {
            files.merge(&listed);
        }
    }
    if let Some(remembered) = summary_state.files_of(plan.previous.iter().map(|&i| &messages[i])) {
        files.merge(&remembered);
    }
    files.record_messages(new);
    files
}

/// What each request summarizes: the history and the newest round's older
/// steps apart when the turn is split, else whichever is new.
fn parts<'a>(
    plan: &Plan,
    earlier: &'a [Message],
    current: &'a [Message],
    previous: Option<&'a str>,
    question: Option<&'a str>,
) -> Vec<Part<'a>> {
    let history = Part {
        messages: earlier,
        previous,
        question: None,
    };
    let turn = Part {
        messages: current,
        previous: None,
        question,
    };
    if plan.is_split() {
        vec![history, turn]
    } else if current.is_empty() {
        vec![history]
    } else {
        vec![Part { previous, ..turn }]
    }
}

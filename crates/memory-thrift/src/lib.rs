//! Thrift: fits an agent's history into a token budget without calling a
//! model.
//!
//! [`Thrift`] is a [`TrimStrategy`](memory_core::TrimStrategy). It returns a
//! projection (storage keeps everything), and it never sheds the **floor**:
//! protected messages and summaries, the task (the session's first
//! request, unless the history forgot it), the current question (the
//! newest user message) and the newest step.
//!
//! # The algorithm, in order
//!
//! **1. A history within the budget is returned as it is**, byte for byte.
//!
//! **2. What is kept from call to call.** A provider caches the prompt's
//! prefix, so the context shown at a model call is the one shown at the
//! call before with what came since appended (the new step, or a reply and
//! the next user message; the new step's long outputs cut if that makes it
//! fit), for as long as that fits the budget. When it does not, the history
//! is *shed afresh* down to the low watermark (80% of the budget), which
//! leaves room for the next calls to append again. This is replayed from
//! the history itself, call by call (`calls`), so the same history always
//! gives the same context; the replay starts afresh at every 32nd model
//! call, which bounds its work. What a call reads of the history (each
//! message's identity, kind, count and terms, the cuts already made, where
//! the last replay stopped) is kept in a memo (`memo`, `message_index`,
//! `term_index`, `shrink_cache`, `resume`), so that a call reads only what
//! was added since the last one; the memo never changes a result.
//!
//! **3. When a question reaches back.** A new user message is appended like
//! anything else, unless it is a question (a question mark, at most 128
//! tokens) that does not answer the step before it, and an older round the
//! context no longer shows scores at least 0.15 for it and more than 0.7 of
//! the best round still shown (`reach`). The context is then chosen afresh
//! for it, shed to a level that moves in fixed steps of the budget's share
//! above the watermark (`sticky`), so that the calls after it append
//! again. After a summary, a short user message asked since it sees the
//! turns the summary covers again, chosen from the whole budget; a
//! tool-calling agent's steps see them like their other older turns.
//!
//! **4. What is cut, in which order.** A shed is one pass of six stages
//! (`shrink_stages`, `drop_stage`), aiming at one target (the sticky level,
//! the low watermark or the budget). Each runs only while the total is over
//! the budget, stops at the target, and goes oldest first:
//!
//! 1. the **reasoning** of earlier steps is replaced by a [`placeholder`]
//!    that names its length and handle;
//! 2. **long tool outputs** (over 1,024 tokens) are cut to head and tail
//!    around a marker line ([`cut`]), the newest step's last; a text-only
//!    agent's observations alike;
//! 3. **earlier tool results** are replaced by a [`placeholder`] that keeps
//!    the call id; of the newest round the newest 3 to 5 stay, and the
//!    others go 3 at a time, so that the prefix changes once per batch;
//! 4. **images and pass-through blocks** of earlier user messages are
//!    replaced by placeholders;
//! 5. **whole rounds and steps are dropped**: the newest round's steps are
//!    kept newest first while they fit (so only its oldest go); the tokens
//!    left go to the earlier rounds (and the steps before the first user
//!    message) most [relevant](relevance) to the current question
//!    ([`Relevance`]; a unit's neighbours share 0.7 of its score, and a
//!    month the question names lifts the turns said in it), with a recency
//!    bonus; an earlier round too large to keep whole keeps its request and
//!    its newest steps that fit; what is kept keeps its order;
//! 6. as a last resort, the **floor's tool outputs** are cut to the longest
//!    head and tail that fits.
//!
//! When even the floor does not fit, the result is as small as Thrift can
//! make it and says `fits: false`. In an agent round of thousands of steps,
//! the older steps that no shed could keep are left out before the stages
//! run (`horizon`), with the same result. [`Thrift::trim_traced`] says
//! what each stage shed ([`ThriftTrace`]).
//!
//! **5. How far back it reaches.** The earlier rounds that end more than
//! the [horizon](memory_core::covered::horizon) (32 budgets of tokens, as
//! far back as a summary's covered turns are kept within reach; never
//! less than 262,144 tokens) before the current question are past reach
//! (`past_reach`): a shed drops them before the stages run, and no
//! question reaches back to them (the index of what a context leaves out
//! still names them). So a fresh choice weighs at most the horizon's
//! rounds, however long the session.
//!
//! # Where it lives
//!
//! `thrift` holds [`Thrift`], its builder and the view a summary's covered
//! turns are placed in; `settings` what it is set to, with the defaults;
//! `replay` the replay of calls, over the calls a history records and the
//! append (`calls`); `reach` the reach-back; `shed` one shed, whose target
//! is a level of `sticky`; `layout` where the question, the newest step
//! and the floor are; `shrink_stages` stages 1 to 4 and 6, `drop_stage`
//! stage 5, over a `working_copy` of the history; `horizon` the steps of a
//! long round left out; `past_reach` the earlier rounds past the horizon;
//! `shortcuts` the work a pass may save without changing its result.
//! Relevance: `scoring`
//! ([`Relevance`], [`Lexical`]), `semantic` ([`Semantic`]), [`relevance`]
//! (terms and weights), `term_index`, `neighbours`, `dates`, and the small
//! leaves `texts`, `observation`, `output_cut`, `kind_positions`.
//!
//! # Thresholds
//!
//! Each threshold is a named constant beside the code it tunes, with the
//! reason for it and, where one was measured, the figure that chose it: the
//! public defaults ([`DEFAULT_LOW_WATERMARK`],
//! [`DEFAULT_KEEP_RECENT_RESULTS`], [`DEFAULT_MAX_TOOL_OUTPUT_TOKENS`],
//! [`DEFAULT_RECENCY_WEIGHT`], [`DEFAULT_LOOP_RECENCY_WEIGHT`],
//! [`DEFAULT_SEMANTIC_WEIGHT`]), the reach-back's (`reach`), the replay
//! span (`calls`), the neighbours' share, the keep floor
//! ([`relevance::keep_floor`]), the date lift (`dates`) and the bounds of
//! the work a call saves (`horizon`, `message_index`, `partial_sort`).
//!
//! # Public surface
//!
//! [`Thrift`] and its defaults, [`ThriftTrace`] with [`Shed`] and
//! [`Tally`], the [`Relevance`] trait with its default [`Lexical`] and the
//! embedding blend [`Semantic`], the [`relevance`] terms, the head-and-tail
//! [`cut`] and the [`placeholder`] texts.
//!
//! ```
//! use memory_core::{Budget, CharTokenCounter, Message, Pipeline, TrimStrategy};
//! use memory_thrift::Thrift;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut history = Vec::new();
//! for topic in ["the parser", "lunch", "the weather", "holidays"] {
//!     history.push(Message::user(format!("Tell me about {topic}.")));
//!     history.push(Message::assistant(format!("Here is a long story about {topic}. {}", "la ".repeat(40))));
//! }
//! history.push(Message::user("Back to the parser: what did you say?"));
//!
//! let pipeline = Pipeline::new().then(Thrift::new());
//! let result = pipeline.trim(&history, &Budget::tokens(80), &CharTokenCounter).await.unwrap();
//! assert!(result.fits);
//! // The round about the parser is kept over newer, unrelated ones.
//! assert_eq!(result.messages[0], Message::user("Tell me about the parser."));
//! assert_eq!(result.messages.last(), history.last());
//! # });
//! ```

mod calls;
pub mod cut;
mod dates;
#[cfg(test)]
mod draw;
mod drop_stage;
mod horizon;
mod kind_positions;
mod layout;
mod memo;
mod message_index;
mod neighbours;
mod observation;
mod output_cut;
mod partial_sort;
mod past_reach;
pub mod placeholder;
mod reach;
pub mod relevance;
mod replay;
mod resume;
mod scoring;
mod semantic;
mod settings;
mod shed;
mod shortcuts;
mod shrink_cache;
mod shrink_stages;
mod sticky;
mod term_index;
mod texts;
mod thrift;
mod trace;
mod working_copy;

#[cfg(test)]
mod horizon_tests;
#[cfg(test)]
mod incremental_tests;

pub use scoring::{Lexical, Relevance};
pub use semantic::{DEFAULT_SEMANTIC_WEIGHT, Semantic};
pub use settings::{
    DEFAULT_KEEP_RECENT_RESULTS, DEFAULT_LOOP_RECENCY_WEIGHT, DEFAULT_LOW_WATERMARK,
    DEFAULT_MAX_TOOL_OUTPUT_TOKENS, DEFAULT_RECENCY_WEIGHT,
};
pub use thrift::Thrift;
pub use trace::{Shed, Tally, ThriftTrace};

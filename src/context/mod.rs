//! Context management's pieces: what keeps a long conversation inside a model's context window.
//! Token estimates, the compaction threshold, where a compaction cuts and what it summarizes,
//! the files a summary lists, whether an error means the context overflowed, and which errors
//! are worth retrying with what delays; and the summary itself, written by the agent's model
//! (`summary`, the one piece here that performs a request).
//!
//! Everything else here is a pure function over messages and session entries (`crate::json::Json`
//! in the shapes of the session file format): no agent, no I/O, no clock. The agent (and a host
//! with a policy of its own, through the C ABI's `agent_context_*` functions) decides when to
//! call them. The behaviour is pi-coding-agent 1.6.0's, pinned by the sessions kit (§4.3–§4.9);
//! the text classifiers are libagent's own rules, matched to the kit's provider texts.
//!
//! Cost: every function is linear in what it is given. An estimate visits each message once;
//! the cut point projects the branch once, then walks it backwards once.
//!
//! ```
//! use agent::context::{self, CompactionSettings, RetrySettings};
//! use agent::json::json;
//! use agent::session::Session;
//!
//! // Is the context too full? The last usage counts what the model saw, then estimates.
//! let messages = [json!({"role": "user", "content": "x".repeat(40_000)})];
//! let tokens = context::estimate_context(&messages).tokens as f64;
//! assert!(context::should_compact(tokens, 16_000.0, &CompactionSettings::default()));
//!
//! // What would a compaction of a session keep and summarize?
//! let mut session = Session::in_memory("/work");
//! for text in ["first question", "first answer", "second question"] {
//!     let message = json!({"role": "user", "content": text.repeat(200), "timestamp": 1});
//!     session.append_message(&message).unwrap();
//! }
//! let settings = CompactionSettings { keep_recent_tokens: 500, ..Default::default() };
//! let path = session.branch_path().unwrap(); // a file session reads its entries back: a Result
//! let prepared = context::prepare_compaction(&path, &settings).unwrap();
//! assert_eq!(prepared.messages_to_summarize.len(), 2);
//!
//! // A failed request: compact on an overflow, retry a transient error after a delay.
//! let failed = json!({"stopReason": "error", "errorMessage": "529 overloaded_error"});
//! assert!(!context::is_context_overflow(&failed, Some(200_000.0)));
//! assert!(context::is_retryable_error(&failed));
//! assert_eq!(context::retry_schedule(&RetrySettings::default()), [2000, 4000, 8000]);
//! ```

pub mod cut;
pub mod estimate;
pub mod files;
pub mod overflow;
pub mod projection;
pub mod retry;
pub mod summary;
pub mod threshold;

pub use cut::{prepare_compaction, CompactionPreparation, SummarizerInput};
pub use estimate::{
    estimate_context, estimate_message, estimate_projected, usage_context_tokens, ContextEstimate,
};
pub use files::{FileLists, FileOps};
pub use overflow::{is_context_overflow, is_overflow_text, is_recoverable_length};
pub use retry::{
    is_retryable_error, is_retryable_text, retry_delay_ms, retry_schedule, RetrySettings,
};
pub use summary::{summarize, Summary, SummaryInput, SUMMARY_ABORTED};
pub use threshold::{should_compact, CompactionSettings};

/// The length of `text` in UTF-16 code units, as JavaScript's `String.length` counts it (a
/// character outside the Basic Multilingual Plane counts 2).
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// Orders two texts as JavaScript's default `Array.prototype.sort` does: by UTF-16 code units
/// (which differs from Rust's byte order for characters above U+FFFF against U+E000..U+FFFF).
pub fn cmp_utf16(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

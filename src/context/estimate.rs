//! Token estimates (kit §4.3): a character count over four per message, and the context's size
//! from the last valid usage a model reported plus an estimate of what came after it.

use std::borrow::Borrow;

use super::projection::Projection;
use super::utf16_len;
use crate::json::{self, Json};
use crate::transcript::current_system_message;

#[cfg(test)]
thread_local! {
    /// How many messages this thread estimated (the cost tests count work, not time).
    pub(crate) static ESTIMATES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// An image counts as this many characters (about 1,200 tokens).
const IMAGE_CHARS: usize = 4800;

/// The context's size: `tokens = usage_tokens + trailing_tokens`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextEstimate {
    /// The estimated context size in tokens.
    pub tokens: u64,
    /// What the last valid assistant usage reported (0 without one).
    pub usage_tokens: u64,
    /// The estimate of the messages after that usage (all of them without one).
    pub trailing_tokens: u64,
    /// The index of the message whose usage counted, if any.
    pub last_usage_index: Option<usize>,
}

impl ContextEstimate {
    /// The kit's shape: `{"tokens", "usageTokens", "trailingTokens", "lastUsageIndex"}`.
    pub fn to_json(&self) -> Json {
        json::json!({
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        })
    }

    fn all_estimated(tokens: u64) -> Self {
        ContextEstimate {
            tokens,
            usage_tokens: 0,
            trailing_tokens: tokens,
            last_usage_index: None,
        }
    }
}

fn text_len(value: Option<&Json>) -> usize {
    value.and_then(Json::as_str).map_or(0, utf16_len)
}

/// Characters of a user-like content: a string, or its text blocks plus a fixed count per image.
fn content_chars(content: Option<&Json>) -> usize {
    match content {
        Some(Json::String(text)) => utf16_len(text),
        Some(Json::Array(blocks)) => blocks
            .iter()
            .map(|block| match block.get("type").and_then(Json::as_str) {
                Some("text") => text_len(block.get("text")),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// The length of `JSON.stringify(value)` in UTF-16 units (0 for an absent value).
fn json_text_len(value: Option<&Json>) -> usize {
    value.map_or(0, |v| utf16_len(&json::to_string(v)))
}

fn assistant_chars(content: Option<&Json>) -> usize {
    let Some(Json::Array(blocks)) = content else {
        return 0;
    };
    blocks
        .iter()
        .map(|block| match block.get("type").and_then(Json::as_str) {
            Some("text") => text_len(block.get("text")),
            Some("thinking") => text_len(block.get("thinking")),
            Some("toolCall") => text_len(block.get("name")) + json_text_len(block.get("arguments")),
            _ => 0,
        })
        .sum()
}

fn system_chars(message: &Json) -> usize {
    let sections: usize = match message.get("sections") {
        Some(Json::Object(sections)) => sections.values().map(|s| text_len(Some(s))).sum(),
        _ => 0,
    };
    let tools = match message.get("toolsAdded") {
        None | Some(Json::Null) => 0,
        tools => json_text_len(tools),
    };
    content_chars(message.get("content")) + sections + tools
}

/// Messages estimated in this process: what compaction's cost test counts (one relaxed add per
/// message estimated).
static MESSAGES_ESTIMATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many messages [`estimate_message`] has estimated in this process so far.
pub fn messages_estimated() -> u64 {
    MESSAGES_ESTIMATED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The estimated tokens of one message: its characters (UTF-16 units) over four, rounded up.
/// What counts: text of user, custom and tool-result content (an image counts 4,800
/// characters); an assistant's text, thinking, and each tool call's name and JSON arguments; a
/// bash execution's command and output; a summary's text; a system message's content, sections
/// and added tools as JSON. Any other role estimates to 0.
pub fn estimate_message(message: &Json) -> u64 {
    MESSAGES_ESTIMATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    #[cfg(test)]
    ESTIMATES.with(|count| count.set(count.get() + 1));
    let chars = match message.get("role").and_then(Json::as_str) {
        Some("user" | "custom" | "toolResult") => content_chars(message.get("content")),
        Some("assistant") => assistant_chars(message.get("content")),
        Some("system") => system_chars(message),
        Some("bashExecution") => text_len(message.get("command")) + text_len(message.get("output")),
        Some("branchSummary" | "compactionSummary") => text_len(message.get("summary")),
        _ => 0,
    };
    chars.div_ceil(4) as u64
}

fn number(usage: &Json, key: &str) -> f64 {
    usage.get(key).and_then(Json::as_f64).unwrap_or(f64::NAN)
}

/// The context size a usage reports: its `totalTokens`, or when that is 0 (or absent) the sum
/// of `input`, `output`, `cacheRead` and `cacheWrite`. NaN when a needed member is missing.
pub fn usage_context_tokens(usage: &Json) -> f64 {
    match usage.get("totalTokens").and_then(Json::as_f64) {
        Some(total) if total != 0.0 => total,
        _ => ["input", "output", "cacheRead", "cacheWrite"]
            .iter()
            .map(|key| number(usage, key))
            .sum(),
    }
}

/// The context tokens of an assistant message whose usage can be trusted: not aborted, not an
/// error, and reporting more than 0 tokens.
pub fn valid_usage_tokens(message: &Json) -> Option<u64> {
    if message.get("role").and_then(Json::as_str) != Some("assistant") {
        return None;
    }
    if matches!(
        message.get("stopReason").and_then(Json::as_str),
        Some("aborted" | "error")
    ) {
        return None;
    }
    let usage = message.get("usage").filter(|u| u.is_object())?;
    let tokens = usage_context_tokens(usage);
    (tokens > 0.0).then_some(tokens as u64)
}

/// The context's size: the last valid assistant usage (see [`valid_usage_tokens`]) plus the
/// estimates of the messages after it; without one, the sum of every message's estimate.
pub fn estimate_context<M: Borrow<Json>>(messages: &[M]) -> ContextEstimate {
    let last_usage = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, m)| valid_usage_tokens(m.borrow()).map(|tokens| (index, tokens)));
    let sum_from = |start: usize| -> u64 {
        messages[start..]
            .iter()
            .map(|m| estimate_message(m.borrow()))
            .sum()
    };
    match last_usage {
        None => ContextEstimate::all_estimated(sum_from(0)),
        Some((index, usage_tokens)) => {
            let trailing_tokens = sum_from(index + 1);
            ContextEstimate {
                tokens: usage_tokens + trailing_tokens,
                usage_tokens,
                trailing_tokens,
                last_usage_index: Some(index),
            }
        }
    }
}

/// The context estimate of a session branch's projected context (`branch` = the path from the
/// root to the leaf, `projection` = its projection). A usage is trusted only when no
/// `context_edit` or `compaction` entry comes after the entry that holds it on the branch: an
/// edit or a compaction changed what the model would be sent since. Otherwise every message is
/// estimated, the system messages as the one current system message they replay to.
pub fn estimate_projected(projection: &Projection, branch: &[&Json]) -> ContextEstimate {
    let messages = projection.messages();
    let estimate = estimate_context(&messages);
    if let Some(usage_index) = estimate.last_usage_index {
        let usage_entry_id = projection.source_of_message(usage_index).and_then(entry_id);
        let position_of_usage =
            usage_entry_id.and_then(|id| branch.iter().position(|e| entry_id(e) == Some(id)));
        let last_invalidating = branch.iter().rposition(|e| {
            matches!(
                e.get("type").and_then(Json::as_str),
                Some("context_edit" | "compaction")
            )
        });
        let usage_is_newer = match (position_of_usage, last_invalidating) {
            (Some(usage), Some(invalidating)) => usage > invalidating,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if usage_is_newer {
            return estimate;
        }
    }
    let system = current_system_message(messages.iter().copied());
    let tokens = system.as_ref().map_or(0, estimate_message)
        + messages
            .iter()
            .filter(|m| m.get("role").and_then(Json::as_str) != Some("system"))
            .map(|m| estimate_message(m))
            .sum::<u64>();
    ContextEstimate::all_estimated(tokens)
}

fn entry_id(entry: &Json) -> Option<&str> {
    entry.get("id").and_then(Json::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    #[test]
    fn rounds_up_per_message_and_counts_utf16_units() {
        assert_eq!(
            estimate_message(&json!({"role": "user", "content": "abcde"})),
            2
        );
        // One emoji is two UTF-16 units: "😀😀" is 4 units, exactly one token.
        assert_eq!(
            estimate_message(&json!({"role": "user", "content": "😀😀"})),
            1
        );
        assert_eq!(estimate_message(&json!({"role": "user", "content": ""})), 0);
    }

    #[test]
    fn unknown_roles_and_malformed_content_estimate_to_zero() {
        assert_eq!(
            estimate_message(&json!({"role": "note", "content": "a long text"})),
            0
        );
        assert_eq!(estimate_message(&json!({"content": "no role"})), 0);
        assert_eq!(
            estimate_message(&json!({"role": "assistant", "content": "not blocks"})),
            0
        );
        assert_eq!(estimate_message(&json!({"role": "user", "content": 42})), 0);
    }

    #[test]
    fn usage_missing_a_member_is_not_trusted() {
        // totalTokens 0 and no cacheWrite: the sum is not a number (JavaScript's NaN), so the
        // usage is skipped and everything is estimated.
        let message = json!({"role": "assistant", "content": [], "stopReason": "stop",
            "usage": {"input": 10, "output": 1, "cacheRead": 0, "totalTokens": 0}});
        assert_eq!(valid_usage_tokens(&message), None);
        let with_all = json!({"role": "assistant", "content": [], "stopReason": "stop",
            "usage": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 2, "totalTokens": 0}});
        assert_eq!(valid_usage_tokens(&with_all), Some(13));
    }
}

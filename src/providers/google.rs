//! `google-generative-ai`: pi-ai 1.6.0's Gemini API provider (kit README §8.1, §8.10–§8.12).
//! `request` builds the `streamGenerateContent` request from the transcript; `response` splits
//! the body the way the Google SDK does and maps each chunk onto the stream.
//!
//! Differences from pi-ai, by design: a function call without an id gets a deterministic id
//! ([`response::fallback_tool_call_id`]) instead of one built from the clock, and a stream event
//! that is not JSON fails with a libagent text unless the JSON is merely cut short (V8's
//! `Unexpected end of JSON input`).

mod request;
mod response;
#[cfg(any(test, feature = "fuzzing"))]
pub(super) use response::read_body;

use super::output::Output;
use super::{require_api_key, Call};
use crate::json::Json;
use crate::stream::StreamSender;

/// `streamSimple`: fails synchronously without an API key (a header does not replace it here)
/// and for a thinking level the model maps to something Gemini does not know.
pub fn start(call: Call, sender: &StreamSender) -> Result<(), String> {
    require_api_key(&call, &[])?;
    let thinking = request::thinking(&call)?;
    let out = Output::new(sender.clone(), &call.model);
    crate::runtime::spawn(async move {
        let _ = response::run(call, thinking, out).await;
    });
    Ok(())
}

/// The major version of a `gemini-N…` (or `gemini-live-N…`) model id.
fn gemini_major_version(id: &str) -> Option<u64> {
    let id = id.to_lowercase();
    let rest = id.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Models that take tool-call ids in `functionCall`/`functionResponse` (Gemini 3+, and Claude and
/// gpt-oss served through Google's APIs).
fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-")
        || id.starts_with("gpt-oss-")
        || gemini_major_version(id).is_some_and(|v| v >= 3)
}

/// A `model.id` as a string (the model was checked to have one).
fn model_id(model: &Json) -> &str {
    model.get("id").and_then(Json::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;

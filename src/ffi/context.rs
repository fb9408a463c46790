//! Context management's pieces from C (see `crate::context`): token estimates, the compaction
//! threshold, a session's compaction preparation, file lists, error classification and retry
//! delays. Pure JSON-in, JSON-out functions: a host with its own compaction or retry policy
//! calls them, and the sessions kit's runner checks them. Nothing here runs a model.

use crate::json::Field;
use std::ffi::c_char;

use super::session::{session_arg, AgentSession};
use super::*;
use crate::context::{self, projection::Projection, CompactionSettings, FileOps, RetrySettings};
use crate::json::{self, json, Json};
use crate::session::convert_to_llm;
use crate::sync::lock;

fn ill_shaped(message: impl Into<String>) -> FfiError {
    FfiError {
        status: AGENT_ERR_INVALID_JSON,
        message: message.into(),
    }
}

/// The branch as references. The session parses it for this call (`branch_values`), so a host
/// asking for estimates does not make the session keep its entries parsed, and the work runs
/// outside the session's lock.
fn refs(values: &[Json]) -> Vec<&Json> {
    values.iter().collect()
}

fn write_json_out(out: *mut *mut c_char, out_len: *mut usize, value: &Json) {
    write_owned_text(out, out_len, &json::to_string(value));
}

/// An optional JSON argument that must be an object (or NULL / `null`): its members.
fn options_object(ptr: *const c_char, len: usize, name: &str) -> FfiResult<Json> {
    match opt_json_arg(ptr, len, name)? {
        None | Some(Json::Null) => Ok(Json::Null),
        Some(value @ Json::Object(_)) => Ok(value),
        Some(_) => Err(ill_shaped(format!("{name} must be a JSON object or null."))),
    }
}

/// An optional number member (`null` counts as absent).
fn number_member(value: &Json, key: &str, name: &str) -> FfiResult<Option<f64>> {
    match value.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(ill_shaped(format!("{name}'s \"{key}\" must be a number."))),
    }
}

/// Writes to `*out_json` (free with `agent_string_free`) the token estimates of `messages_json`
/// (an array of messages): `{"perMessage": [tokens, ...], "context": {"tokens", "usageTokens",
/// "trailingTokens", "lastUsageIndex"}}`. A message's estimate is its characters (UTF-16 units)
/// over four, rounded up (an image counts 4,800 characters; thinking, tool calls' JSON
/// arguments, bash commands and output, summaries and system sections count). The context's
/// tokens are the last valid assistant usage (not aborted or an error, more than 0 tokens;
/// `totalTokens`, else the sum of its parts) plus the estimates of the messages after it
/// (`lastUsageIndex` is that message's index, or null when every message is estimated).
///
/// Fails with `AGENT_ERR_INVALID_JSON` when `messages_json` is not an array of messages.
#[no_mangle]
pub unsafe extern "C" fn agent_context_estimate(
    messages_json: *const c_char,
    messages_json_len: usize,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let messages = messages_arg(
            json_arg(messages_json, messages_json_len, "messages_json")?,
            "messages_json",
        )?;
        let per_message: Vec<u64> = messages.iter().map(context::estimate_message).collect();
        let estimate = context::estimate_context(&messages);
        write_json_out(
            out_json,
            out_json_len,
            &json!({"perMessage": per_message, "context": estimate.to_json()}),
        );
        Ok(())
    })
}

/// Writes to `*out_json` (free with `agent_string_free`) the estimated size of the context at
/// the session's leaf: `{"tokens", "usageTokens", "trailingTokens", "lastUsageIndex"}` as for
/// `agent_context_estimate`, except that a usage is not trusted when a `context_edit` or
/// `compaction` entry on the branch comes after it (the context changed since the model
/// reported it); then every context message is estimated, the system messages once as the
/// current system message they replay to. This is what a compaction records as `tokensBefore`.
#[no_mangle]
pub unsafe extern "C" fn agent_session_estimate(
    session: AgentSession,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let shared = session_arg(session)?;
        let estimate = {
            let values = lock(&shared).branch_values()?;
            let branch = refs(&values);
            context::estimate_projected(&Projection::of_branch(&branch), &branch)
        };
        write_json_out(out_json, out_json_len, &estimate.to_json());
        Ok(())
    })
}

/// Decides whether a context should be compacted, writing `{"contextTokens", "shouldCompact"}`
/// to `*out_json` (free with `agent_string_free`). `input_json`: `{"contextTokens": number}`
/// or `{"usage": {...an assistant usage...}}` (its context tokens: `totalTokens`, else the sum
/// of `input`, `output`, `cacheRead` and `cacheWrite`), plus `"contextWindow": number` and
/// optionally `"settings": {"enabled"?, "reserveTokens"?, "keepRecentTokens"?}` (defaults
/// true, 16384, 20000). Compact when enabled and `contextTokens > contextWindow -
/// reserveTokens`.
///
/// Fails with `AGENT_ERR_INVALID_JSON` when a member is missing or of the wrong type.
#[no_mangle]
pub unsafe extern "C" fn agent_context_should_compact(
    input_json: *const c_char,
    input_json_len: usize,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let input = json_arg(input_json, input_json_len, "input_json")?;
        if !input.is_object() {
            return Err(ill_shaped(
                "input_json must be a JSON object: {\"contextTokens\" or \"usage\", \"contextWindow\", \"settings\"?}.",
            ));
        }
        let tokens = match (number_member(&input, "contextTokens", "input_json")?, input.field("usage")) {
            (Some(tokens), _) => tokens,
            (None, Some(usage @ Json::Object(_))) => context::usage_context_tokens(usage),
            _ => {
                return Err(ill_shaped(
                    "input_json needs \"contextTokens\" (a number) or \"usage\" (an assistant usage object).",
                ))
            }
        };
        let window = number_member(&input, "contextWindow", "input_json")?.ok_or_else(|| {
            ill_shaped("input_json needs \"contextWindow\" (a number of tokens).")
        })?;
        let settings = CompactionSettings::default()
            .with_overrides(input.field("settings").unwrap_or(&Json::Null))
            .map_err(ill_shaped)?;
        let decision = context::should_compact(tokens, window, &settings);
        write_json_out(
            out_json,
            out_json_len,
            &json!({"contextTokens": json::number(tokens), "shouldCompact": decision}),
        );
        Ok(())
    })
}

/// Prepares compacting the session at its leaf, writing to `*out_json` (free with
/// `agent_string_free`) `null` when there is nothing to compact (the branch ends with a
/// compaction, or nothing would be summarized), else:
/// `{"firstKeptEntryId", "isSplitTurn", "tokensBefore", "previousSummary" (string or null),
/// "messagesToSummarize", "turnPrefixMessages", "fileOps": {"read", "written", "edited"},
/// "readFiles", "modifiedFiles", "summarizerInput": {"history", "turnPrefix"}}`.
///
/// The cut keeps about `keepRecentTokens` of the newest context and falls where a turn may
/// resume (never on a tool result); when it falls inside a turn, `turnPrefixMessages` holds
/// that turn's start, to be summarized apart. `summarizerInput` is what a summarizer is given
/// per message: `{"role": "user", "text"}`, `{"role": "assistant", "text"?, "toolCalls"?:
/// [{"name", "arguments"}]}` (no thinking), `{"role": "toolResult", "text", "truncatedChars"}`
/// (text cut to 2,000 UTF-16 units). The file lists are sorted and include the previous
/// compaction's (unless a hook wrote it). Nothing is written to the session: the caller
/// summarizes and appends the `compaction` entry.
///
/// `settings_json`: NULL or `{"keepRecentTokens"?, ...}` as for `agent_context_should_compact`.
#[no_mangle]
pub unsafe extern "C" fn agent_session_prepare_compaction(
    session: AgentSession,
    settings_json: *const c_char,
    settings_json_len: usize,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let shared = session_arg(session)?;
        let settings = CompactionSettings::default()
            .with_overrides(&options_object(
                settings_json,
                settings_json_len,
                "settings_json",
            )?)
            .map_err(ill_shaped)?;
        let values = lock(&shared).branch_values()?;
        let prepared = context::prepare_compaction(&refs(&values), &settings);
        let value = match prepared {
            None => Json::Null,
            Some(prepared) => {
                let mut value = prepared.to_json();
                value["summarizerInput"] = prepared.summarizer_input(convert_to_llm).to_json();
                value
            }
        };
        write_json_out(out_json, out_json_len, &value);
        Ok(())
    })
}

/// Writes to `*out_json` (free with `agent_string_free`) the files `messages_json` (an array of
/// messages) read and modified: `{"fileOps": {"read", "written", "edited"}, "readFiles",
/// "modifiedFiles"}` from assistants' `read`, `write` and `edit` tool calls with a non-empty
/// string `path` argument and tool results' `nestedCalls.calls`. `modifiedFiles` = written and
/// edited, `readFiles` = read and not modified; every list sorted by UTF-16 code units.
#[no_mangle]
pub unsafe extern "C" fn agent_context_file_lists(
    messages_json: *const c_char,
    messages_json_len: usize,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let messages = messages_arg(
            json_arg(messages_json, messages_json_len, "messages_json")?,
            "messages_json",
        )?;
        let ops = FileOps::from_messages(&messages);
        let lists = ops.lists();
        write_json_out(
            out_json,
            out_json_len,
            &json!({"fileOps": ops.to_json(), "readFiles": lists.read_files, "modifiedFiles": lists.modified_files}),
        );
        Ok(())
    })
}

/// Classifies a failed (or suspicious) assistant message, writing to `*out_json` (free with
/// `agent_string_free`) `{"overflow", "recoverableLength"? (only when asked), "retryable",
/// "retryableInSession"}`:
/// - `overflow`: the context overflowed: an error whose text says so (rate limits and
///   throttling never count), or, with a known `contextWindow`, a successful stop whose input
///   plus cache reads exceed it, or a length stop with no output whose input fills 99% of it.
///   A session compacts and retries once, never more.
/// - `recoverableLength` (when `desiredMaxOutput` is given): a length stop before that much
///   output; compacting and retrying once may let the answer finish.
/// - `retryable`: an error whose text looks transient (overload, rate limit, a 5xx, a dropped
///   connection or stream, a timeout) and is not an account limit (quota, billing, usage caps).
/// - `retryableInSession`: retryable and not an overflow (an overflow is compacted, never
///   retried).
///
/// `message_json`: the assistant message (`stopReason`, `errorMessage`, `provider`, `usage`).
/// `options_json`: NULL or `{"contextWindow"?: tokens (0 or absent: unknown),
/// "desiredMaxOutput"?: tokens}`.
#[no_mangle]
pub unsafe extern "C" fn agent_context_classify_error(
    message_json: *const c_char,
    message_json_len: usize,
    options_json: *const c_char,
    options_json_len: usize,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let message = json_arg(message_json, message_json_len, "message_json")?;
        if !message.is_object() {
            return Err(ill_shaped(
                "message_json must be an assistant message (a JSON object).",
            ));
        }
        let options = options_object(options_json, options_json_len, "options_json")?;
        let window = number_member(&options, "contextWindow", "options_json")?;
        let overflow = context::is_context_overflow(&message, window);
        let retryable = context::is_retryable_error(&message);
        let mut result = json!({
            "overflow": overflow,
            "retryable": retryable,
            "retryableInSession": retryable && !overflow,
        });
        if let Some(desired) = number_member(&options, "desiredMaxOutput", "options_json")? {
            result["recoverableLength"] = context::is_recoverable_length(&message, desired).into();
        }
        write_json_out(out_json, out_json_len, &result);
        Ok(())
    })
}

fn retry_settings_arg(ptr: *const c_char, len: usize) -> FfiResult<RetrySettings> {
    RetrySettings::default()
        .with_overrides(&options_object(ptr, len, "settings_json")?)
        .map_err(ill_shaped)
}

/// Writes to `*out_json` (free with `agent_string_free`) `{"delays": [ms, ...]}`: the wait
/// before each retry of one failing turn, retries 1 to `maxRetries` (empty when disabled).
/// `settings_json`: NULL or `{"enabled"?, "maxRetries"?, "baseDelayMs"?, "maxAgentDelayMs"?}`
/// (defaults true, 3, 2000, 60000); see `agent_context_retry_delay` for each delay.
#[no_mangle]
pub unsafe extern "C" fn agent_context_retry_delays(
    settings_json: *const c_char,
    settings_json_len: usize,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let settings = retry_settings_arg(settings_json, settings_json_len)?;
        let delays = context::retry_schedule(&settings);
        write_json_out(out_json, out_json_len, &json!({ "delays": delays }));
        Ok(())
    })
}

/// Writes to `*out_delay_ms` the wait before retry number `attempt` (1-based; below 1 counts as
/// 1): `baseDelayMs × 2^(attempt − 1)`, capped at `maxAgentDelayMs` (a product beyond 2^53 − 1
/// counts as 2^53 − 1). `settings_json` as for `agent_context_retry_delays`.
#[no_mangle]
pub unsafe extern "C" fn agent_context_retry_delay(
    settings_json: *const c_char,
    settings_json_len: usize,
    attempt: i64,
    out_delay_ms: *mut u64,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_delay_ms, "out_delay_ms")?;
        let settings = retry_settings_arg(settings_json, settings_json_len)?;
        write_out(
            out_delay_ms,
            context::retry_delay_ms(settings.base_delay_ms, settings.max_delay_ms, attempt),
        );
        Ok(())
    })
}

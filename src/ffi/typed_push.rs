//! Typed stream pushes: the hot assistant stream events (block start, delta, end) by content
//! index, without JSON. Each stands for exactly one delta-form event of SPEC §3.7 and behaves as
//! `agent_stream_push` of that event would (failures such as
//! `Received text_delta for non-text content` included), so a host that has a delta as a string
//! pays no JSON parse and no JSON rendering.

use std::ffi::c_char;

use super::call::{push_into, stream_state, AgentStream};
use super::*;
use crate::json::{Json, JsonMap};
use crate::stream::{BlockKind, StreamOp};

/// The type of a streamed content block: `AGENT_BLOCK_TEXT`, `AGENT_BLOCK_THINKING` or
/// `AGENT_BLOCK_TOOLCALL`.
pub type AgentBlockKind = i32;
/// A `text` block (`text_start` / `text_delta` / `text_end`).
pub const AGENT_BLOCK_TEXT: AgentBlockKind = 0;
/// A `thinking` block (`thinking_start` / `thinking_delta` / `thinking_end`).
pub const AGENT_BLOCK_THINKING: AgentBlockKind = 1;
/// A `toolCall` block (`toolcall_start` / `toolcall_delta` / `toolcall_end`).
pub const AGENT_BLOCK_TOOLCALL: AgentBlockKind = 2;

fn kind_arg(kind: AgentBlockKind) -> FfiResult<BlockKind> {
    match kind {
        AGENT_BLOCK_TEXT => Ok(BlockKind::Text),
        AGENT_BLOCK_THINKING => Ok(BlockKind::Thinking),
        AGENT_BLOCK_TOOLCALL => Ok(BlockKind::ToolCall),
        other => err(
            AGENT_ERR_INVALID_ARGUMENT,
            format!("Unknown block kind {other}."),
        ),
    }
}

/// `len` bytes at `text` as UTF-8 (`text` may be NULL when `len` is 0).
fn text_arg<'a>(text: *const c_char, len: usize) -> FfiResult<&'a str> {
    if len == 0 {
        return Ok("");
    }
    if text.is_null() {
        return err(AGENT_ERR_NULL, "text is NULL.");
    }
    // SAFETY: the caller passes `len` readable bytes at `text` for the call.
    let bytes = unsafe { std::slice::from_raw_parts(text as *const u8, len) };
    std::str::from_utf8(bytes).map_err(|e| FfiError {
        status: AGENT_ERR_INVALID_UTF8,
        message: format!("text is not valid UTF-8: {e}."),
    })
}

/// An optional C string argument (NULL = absent).
fn opt_str_arg<'a>(ptr: *const c_char, name: &str) -> FfiResult<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        str_arg(ptr, name).map(Some)
    }
}

fn push_delta(
    stream: *mut AgentStream,
    kind: BlockKind,
    content_index: usize,
    text: *const c_char,
    len: usize,
) -> FfiResult {
    let state = stream_state(stream)?;
    let delta = text_arg(text, len)?.to_owned();
    push_into(&state, false, |sender| {
        sender.push_op(StreamOp::KindDelta {
            kind,
            index: content_index,
            delta,
        })
    })
}

/// Pushes `{"type":"text_delta","contentIndex":content_index,"delta":text}` without JSON:
/// `len` bytes of UTF-8 at `text` (not NUL-terminated; NULL allowed when `len` is 0), copied.
/// Same rules and statuses as `agent_stream_push` of that event.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_text_delta(
    stream: *mut AgentStream,
    content_index: usize,
    text: *const c_char,
    len: usize,
) -> *mut AgentError {
    boundary(|| push_delta(stream, BlockKind::Text, content_index, text, len))
}

/// Pushes a `thinking_delta` without JSON (see `agent_stream_push_text_delta`).
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_thinking_delta(
    stream: *mut AgentStream,
    content_index: usize,
    text: *const c_char,
    len: usize,
) -> *mut AgentError {
    boundary(|| push_delta(stream, BlockKind::Thinking, content_index, text, len))
}

/// Pushes a `toolcall_delta` without JSON: `text` is the next piece of the arguments' JSON text
/// (see `agent_stream_push_text_delta`).
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_toolcall_delta(
    stream: *mut AgentStream,
    content_index: usize,
    text: *const c_char,
    len: usize,
) -> *mut AgentError {
    boundary(|| push_delta(stream, BlockKind::ToolCall, content_index, text, len))
}

/// The typed delta that the JSON text `{"type":"<block>_delta","contentIndex":<n>,"delta":"…"}`
/// stands for, when `text` is exactly that: compact, these three keys in this order, `n` a plain
/// decimal below 10^9 (what a typed push of that delta is equivalent to; `make
/// conformance-typed` checks the equivalence). `None` for anything else, which takes the JSON
/// path.
pub(crate) fn compact_delta_event(text: &str) -> Option<StreamOp> {
    let rest = text.strip_prefix(r#"{"type":""#)?;
    let (kind, rest) = [
        ("text_delta", BlockKind::Text),
        ("thinking_delta", BlockKind::Thinking),
        ("toolcall_delta", BlockKind::ToolCall),
    ]
    .into_iter()
    .find_map(|(name, kind)| Some((kind, rest.strip_prefix(name)?)))?;
    let rest = rest.strip_prefix(r#"","contentIndex":"#)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (number, rest) = rest.split_at(digits);
    if !(1..=9).contains(&digits) || (digits > 1 && number.starts_with('0')) {
        return None;
    }
    let literal = rest.strip_prefix(r#","delta":"#)?.strip_suffix('}')?;
    if !literal.starts_with('"') {
        return None;
    }
    // The JSON path's own string parsing (escapes, lone surrogates) of the one string literal.
    match crate::json::parse(literal).ok()? {
        Json::String(delta) => Some(StreamOp::KindDelta {
            kind,
            index: number.parse().ok()?,
            delta,
        }),
        _ => None,
    }
}

/// The block a delta-form `*_start` event places (SPEC §3.7 rules 2, 5, 8).
fn start_block(kind: BlockKind, id: Option<&str>, tool_name: Option<&str>) -> JsonMap {
    let mut block = JsonMap::new();
    block.insert("type".into(), kind.block_type().into());
    match kind {
        BlockKind::Text | BlockKind::Thinking => {
            block.insert(kind.block_type().into(), "".into());
        }
        BlockKind::ToolCall => {
            if let Some(id) = id {
                block.insert("id".into(), id.into());
            }
            if let Some(name) = tool_name {
                block.insert("name".into(), name.into());
            }
            block.insert("arguments".into(), Json::Object(JsonMap::new()));
        }
    }
    block
}

fn push_start(
    stream: *mut AgentStream,
    kind: BlockKind,
    content_index: usize,
    id: Option<&str>,
    tool_name: Option<&str>,
) -> FfiResult {
    let state = stream_state(stream)?;
    let block = start_block(kind, id, tool_name);
    push_into(&state, false, |sender| {
        sender.push_op(StreamOp::StartBlock {
            index: content_index,
            block,
        })
    })
}

/// Pushes `{"type":"text_start"|"thinking_start"|"toolcall_start","contentIndex":content_index}`
/// without JSON (a tool call started this way has neither `id` nor `name`: see
/// `agent_stream_push_toolcall_start`). Same rules and statuses as `agent_stream_push`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_block_start(
    stream: *mut AgentStream,
    kind: AgentBlockKind,
    content_index: usize,
) -> *mut AgentError {
    boundary(|| push_start(stream, kind_arg(kind)?, content_index, None, None))
}

/// Pushes `{"type":"toolcall_start","contentIndex":content_index,"id":id,"toolName":tool_name}`
/// without JSON; `id` and `tool_name` are NUL-terminated UTF-8, NULL = the field is absent.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_toolcall_start(
    stream: *mut AgentStream,
    content_index: usize,
    id: *const c_char,
    tool_name: *const c_char,
) -> *mut AgentError {
    boundary(|| {
        let id = opt_str_arg(id, "id")?;
        let tool_name = opt_str_arg(tool_name, "tool_name")?;
        push_start(stream, BlockKind::ToolCall, content_index, id, tool_name)
    })
}

/// Pushes `{"type":"text_end"|"thinking_end"|"toolcall_end","contentIndex":content_index}`
/// without JSON (no `content`/`contentSignature`/`toolCall`: the block keeps what was streamed;
/// a tool call's arguments are parsed as SPEC §3.9 says). Same rules and statuses as
/// `agent_stream_push`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_block_end(
    stream: *mut AgentStream,
    kind: AgentBlockKind,
    content_index: usize,
) -> *mut AgentError {
    boundary(|| {
        let kind = kind_arg(kind)?;
        let state = stream_state(stream)?;
        push_into(&state, false, |sender| {
            sender.push_op(StreamOp::KindEnd {
                kind,
                index: content_index,
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> Option<(BlockKind, usize, String)> {
        match compact_delta_event(text)? {
            StreamOp::KindDelta { kind, index, delta } => Some((kind, index, delta)),
            other => panic!("not a delta: {other:?}"),
        }
    }

    /// Exactly the compact three-key form is recognised, with the JSON path's string decoding.
    #[test]
    fn compact_delta_events_are_recognised_exactly() {
        let text = BlockKind::Text;
        assert_eq!(
            delta(r#"{"type":"text_delta","contentIndex":0,"delta":"hi"}"#),
            Some((text, 0, "hi".into()))
        );
        assert_eq!(
            delta(r#"{"type":"thinking_delta","contentIndex":12,"delta":"a\"b\\\n\u00e9\ud800}"}"#),
            Some((BlockKind::Thinking, 12, "a\"b\\\né\u{fffd}}".into()))
        );
        assert_eq!(
            delta(r#"{"type":"toolcall_delta","contentIndex":3,"delta":"{\"a\":1}"}"#),
            Some((BlockKind::ToolCall, 3, r#"{"a":1}"#.into()))
        );
        for other in [
            r#"{"type":"text_delta","contentIndex":0,"delta":"hi","partial":null}"#,
            r#"{"contentIndex":0,"type":"text_delta","delta":"hi"}"#,
            r#"{"type": "text_delta","contentIndex":0,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":"hi"} "#,
            r#"{"type":"text_delta","contentIndex":01,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":1.0,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":-1,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":1000000000,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":5}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":"a"}"b"}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":"unterminated}"#,
            r#"{"type":"text_start","contentIndex":0,"delta":"hi"}"#,
            r#"{"type":"image_delta","contentIndex":0,"delta":"hi"}"#,
        ] {
            assert_eq!(delta(other), None, "{other}");
        }
    }
}

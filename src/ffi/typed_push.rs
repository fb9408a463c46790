//! Typed stream pushes: the hot assistant stream events (block start, delta, end) by content
//! index, without JSON. Each stands for exactly one delta-form event of SPEC §3.7 and behaves as
//! `agent_stream_push` of that event would (failures such as
//! `Received text_delta for non-text content` included), so a host that has a delta as a string
//! pays no JSON parse and no JSON rendering.

use std::ffi::c_char;

use super::call::{push_into, stream_state, AgentStream};
use super::*;
use crate::stream::typed::start_block_op;
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

/// An optional text argument (NULL = absent).
fn opt_str_arg<'a>(ptr: *const c_char, len: usize, name: &str) -> FfiResult<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        str_arg(ptr, len, name).map(Some)
    }
}

fn push_delta(
    stream: AgentStream,
    kind: BlockKind,
    content_index: usize,
    text: *const c_char,
    len: usize,
) -> FfiResult {
    let state = stream_state(stream.id)?;
    let delta = str_arg(text, len, "text")?.into();
    push_into(&state, false, |sender| {
        sender.push_op(StreamOp::KindDelta {
            kind,
            index: content_index,
            delta,
        })
    })
}

/// Pushes `{"type":"text_delta","contentIndex":content_index,"delta":text}` without JSON:
/// `len` bytes of UTF-8 at `text` (NULL allowed when `len` is 0), copied.
/// Same rules and statuses as `agent_stream_push` of that event.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_text_delta(
    stream: AgentStream,
    content_index: usize,
    text: *const c_char,
    len: usize,
) -> *mut AgentError {
    boundary(|| push_delta(stream, BlockKind::Text, content_index, text, len))
}

/// Pushes a `thinking_delta` without JSON (see `agent_stream_push_text_delta`).
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_thinking_delta(
    stream: AgentStream,
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
    stream: AgentStream,
    content_index: usize,
    text: *const c_char,
    len: usize,
) -> *mut AgentError {
    boundary(|| push_delta(stream, BlockKind::ToolCall, content_index, text, len))
}

fn push_start(
    stream: AgentStream,
    kind: BlockKind,
    content_index: usize,
    id: Option<&str>,
    tool_name: Option<&str>,
) -> FfiResult {
    let state = stream_state(stream.id)?;
    let op = start_block_op(kind, content_index, id, tool_name);
    push_into(&state, false, |sender| sender.push_op(op))
}

/// Pushes `{"type":"text_start"|"thinking_start"|"toolcall_start","contentIndex":content_index}`
/// without JSON (a tool call started this way has neither `id` nor `name`: see
/// `agent_stream_push_toolcall_start`). Same rules and statuses as `agent_stream_push`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_block_start(
    stream: AgentStream,
    kind: AgentBlockKind,
    content_index: usize,
) -> *mut AgentError {
    boundary(|| push_start(stream, kind_arg(kind)?, content_index, None, None))
}

/// Pushes `{"type":"toolcall_start","contentIndex":content_index,"id":id,"toolName":tool_name}`
/// without JSON; `id` and `tool_name` are UTF-8 texts, NULL = the field is absent.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_toolcall_start(
    stream: AgentStream,
    content_index: usize,
    id: *const c_char,
    id_len: usize,
    tool_name: *const c_char,
    tool_name_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let id = opt_str_arg(id, id_len, "id")?;
        let tool_name = opt_str_arg(tool_name, tool_name_len, "tool_name")?;
        push_start(stream, BlockKind::ToolCall, content_index, id, tool_name)
    })
}

/// Pushes `{"type":"text_end"|"thinking_end"|"toolcall_end","contentIndex":content_index}`
/// without JSON (no `content`/`contentSignature`/`toolCall`: the block keeps what was streamed;
/// a tool call's arguments are parsed as SPEC §3.9 says). Same rules and statuses as
/// `agent_stream_push`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push_block_end(
    stream: AgentStream,
    kind: AgentBlockKind,
    content_index: usize,
) -> *mut AgentError {
    boundary(|| {
        let kind = kind_arg(kind)?;
        let state = stream_state(stream.id)?;
        push_into(&state, false, |sender| {
            sender.push_op(StreamOp::KindEnd {
                kind,
                index: content_index,
            })
        })
    })
}

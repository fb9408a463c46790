//! Agent handles: construction, runs, queues, state and settings.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::handles::Registry;
use super::options::{hook_kind, host_hook, AgentHookFn, AgentHookKind, AgentOptions, OPTIONS};
use super::run::{
    start_run, AgentDoneFn, AgentRun, AgentWaitResult, AGENT_WAIT_DONE, AGENT_WAIT_TIMEOUT,
};
use super::stream::{host_stream_fn, providers_stream_fn, scripted, AgentStreamFn};
use super::tool::{tool_arg, AgentTool};
use super::*;
use crate::agent::{Agent, AgentOptions as CoreOptions, PromptInput};
use crate::dispatch::WeakDispatcher;
use crate::error::ErrorKind;
use crate::json::Json;
use crate::sync::lock;

/// An agent handle: a generation-checked value (a freed or forged handle is reported, never
/// used); `{0}` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentHandle {
    pub id: u64,
}

pub(crate) struct FfiAgent {
    pub agent: Agent,
    pub freed: Arc<AtomicBool>,
    pub event_cache: Arc<super::events::EventCache>,
    /// A host-pumped agent's dispatcher: the host data it takes is confined to it.
    pub dispatcher: Option<WeakDispatcher>,
}

impl FfiAgent {
    /// Host data this agent takes: a host-pumped agent's finalizers run inside its dispatches.
    pub fn home(&self, data: &Arc<HostData>) -> Arc<HostData> {
        if let Some(dispatcher) = &self.dispatcher {
            data.home_to(dispatcher);
        }
        data.clone()
    }
}

pub(crate) static AGENTS: Registry<Arc<FfiAgent>> = Registry::new("agent", 0xa6e7_a6e7_0000_0000);

pub(crate) fn agent_arg(handle: AgentHandle) -> FfiResult<Arc<FfiAgent>> {
    AGENTS.get(handle.id, "agent")
}

/// Builds an agent from `options` (consumed, also on failure; the null handle = defaults).
/// Without a stream function and without a process-wide default it fails with
/// `AGENT_ERR_NO_STREAM_FN` and the reference's text. Writes `*out_agent` on success.
#[no_mangle]
pub unsafe extern "C" fn agent_new(
    options: AgentOptions,
    out_agent: *mut AgentHandle,
) -> *mut AgentError {
    boundary(|| {
        let (core_options, homeless) = if options.id == 0 {
            (CoreOptions::default(), Vec::new())
        } else {
            let builder = OPTIONS.get(options.id, "options")?;
            OPTIONS.remove(options.id);
            let taken = lock(&builder).take();
            let unbuilt = taken.ok_or_else(|| FfiError {
                status: AGENT_ERR_INVALID_HANDLE,
                message: "options was already consumed.".into(),
            })?;
            (unbuilt.options, unbuilt.homeless)
        };
        check_out(out_agent, "out_agent")?;
        let dispatcher = core_options.dispatcher.as_ref().map(|d| d.downgrade());
        let agent = Agent::new(core_options)?;
        if let Some(dispatcher) = &dispatcher {
            for data in homeless {
                data.home_to(dispatcher);
            }
        }
        let ffi = FfiAgent {
            agent,
            freed: Arc::new(AtomicBool::new(false)),
            event_cache: Default::default(),
            dispatcher,
        };
        write_out(
            out_agent,
            AgentHandle {
                id: AGENTS.insert(Arc::new(ffi)),
            },
        );
        Ok(())
    })
}

/// Frees an agent. A running run is cancelled (no new host callback of this agent starts
/// afterwards), its `done` is called with `AGENT_RUN_FREED` before this returns, event queues
/// close, and the agent's references to tools, hooks and listeners are dropped (running their
/// finalizers once unused). Called from a host thread, it returns only after a callback of this
/// agent that is running at that moment (a `done`, a tool, a hook...) returned and the run let go
/// of everything it held, so no callback or finalizer of this agent runs after it (never wait in
/// a callback for a thread that is inside `agent_free`). Called on the runtime thread (inside a
/// callback) it never waits; callbacks already scheduled are then dropped, not called.
/// A host-pumped agent (`agent_options_set_dispatcher`) freed outside a dispatch of its
/// dispatcher queues that `done` and those finalizers instead: they run inside the next
/// `agent_dispatch` (or `agent_dispatcher_free`), on the pumping thread.
/// Callable from any thread, including inside this agent's callbacks.
#[no_mangle]
pub unsafe extern "C" fn agent_free(handle: AgentHandle) -> *mut AgentError {
    boundary(|| {
        agent_arg(handle)?;
        let Some(ffi) = AGENTS.remove(handle.id) else {
            return err(AGENT_ERR_INVALID_HANDLE, "agent is a freed agent.");
        };
        ffi.freed.store(true, Ordering::SeqCst);
        ffi.agent.shutdown("The agent was freed.");
        Ok(())
    })
}

fn prompt_input(value: Json) -> FfiResult<PromptInput> {
    match value {
        Json::String(text) => Ok(PromptInput::Text {
            text,
            images: Vec::new(),
        }),
        Json::Array(_) => Ok(PromptInput::Messages(messages_arg(value, "input_json")?)),
        message => {
            check_message(&message, "input_json")?;
            Ok(PromptInput::Message(message))
        }
    }
}

/// `prompt(input)` (SPEC §7.6). `input_json`: a JSON string (a text prompt), one message object,
/// or an array of messages (a message is any object with a string `role`). On success the run is
/// active and `*out_run` (when not NULL) names it (free it with `agent_run_free`); `done`
/// (optional) is called when it settled. While a run is active it fails with `AGENT_ERR_BUSY`
/// and the reference's text, and `done` is not called.
#[no_mangle]
pub unsafe extern "C" fn agent_prompt(
    handle: AgentHandle,
    input_json: *const c_char,
    input_json_len: usize,
    done: AgentDoneFn,
    user_data: *mut c_void,
    out_run: *mut AgentRun,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        let input = prompt_input(json_arg(input_json, input_json_len, "input_json")?)?;
        start_run(&ffi.freed, done, user_data, out_run, |done| {
            ffi.agent.start_prompt(input, Some(done))
        })
    })
}

/// `prompt(text, images)`: `images_json` is NULL or a JSON array of image blocks
/// (`{"type":"image","data","mimeType"}`), appended after the text block when non-empty.
/// Otherwise as `agent_prompt`.
#[no_mangle]
pub unsafe extern "C" fn agent_prompt_text(
    handle: AgentHandle,
    text: *const c_char,
    text_len: usize,
    images_json: *const c_char,
    images_json_len: usize,
    done: AgentDoneFn,
    user_data: *mut c_void,
    out_run: *mut AgentRun,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        let text = str_arg(text, text_len, "text")?.to_string();
        let images = match opt_json_arg(images_json, images_json_len, "images_json")? {
            None => Vec::new(),
            Some(Json::Array(images)) if images.iter().all(Json::is_object) => images,
            Some(_) => {
                return err(
                    AGENT_ERR_INVALID_JSON,
                    "images_json must be a JSON array of image objects.",
                )
            }
        };
        start_run(&ffi.freed, done, user_data, out_run, |done| {
            ffi.agent
                .start_prompt(PromptInput::Text { text, images }, Some(done))
        })
    })
}

/// `continue()` (SPEC §7.7), with a run handle as `agent_prompt`. Fails with `AGENT_ERR_BUSY`
/// during a run and with `AGENT_ERR_INVALID_STATE` when there is nothing to continue from
/// (reference texts).
#[no_mangle]
pub unsafe extern "C" fn agent_continue(
    handle: AgentHandle,
    done: AgentDoneFn,
    user_data: *mut c_void,
    out_run: *mut AgentRun,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        start_run(&ffi.freed, done, user_data, out_run, |done| {
            ffi.agent.start_continue(Some(done))
        })
    })
}

/// Compacts the conversation now (issue 27): the older messages are replaced by a summary and
/// the recent ones (about `compaction.keepRecentTokens`) kept; with a session, a `compaction`
/// entry is appended. A run like `agent_prompt` (`*out_run`, `done`; `AGENT_ERR_BUSY` while a
/// run is active) that emits `AGENT_EVENT_COMPACTION_START` and `AGENT_EVENT_COMPACTION_END`
/// with reason "manual". `focus` (NULL or empty: none; UTF-8, `len` bytes or `AGENT_NTS`): what
/// the summary should keep in particular. The summary comes from the `AGENT_HOOK_COMPACT` hook or the agent's own
/// model. The run fails (`AGENT_RUN_FAILED`) when there is nothing to compact or the summary
/// could not be made, and ends `AGENT_RUN_ABORTED` when it was aborted or the hook cancelled;
/// the transcript and session are then unchanged.
#[no_mangle]
pub unsafe extern "C" fn agent_compact(
    handle: AgentHandle,
    focus: *const c_char,
    len: usize,
    done: AgentDoneFn,
    user_data: *mut c_void,
    out_run: *mut AgentRun,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        let focus = if focus.is_null() && (len == 0 || len == AGENT_NTS) {
            None
        } else {
            Some(str_arg(focus, len, "focus")?.to_string()).filter(|f| !f.is_empty())
        };
        start_run(&ffi.freed, done, user_data, out_run, |done| {
            ffi.agent.start_compact(focus, Some(done))
        })
    })
}

fn message_op(
    handle: AgentHandle,
    message_json: *const c_char,
    message_json_len: usize,
    op: impl FnOnce(&Agent, Json),
) -> FfiResult {
    let ffi = agent_arg(handle)?;
    let message = json_arg(message_json, message_json_len, "message_json")?;
    check_message(&message, "message_json")?;
    op(&ffi.agent, message);
    Ok(())
}

/// Queues a steering message (delivered at the next steering poll). Allowed at any time.
#[no_mangle]
pub unsafe extern "C" fn agent_steer(
    handle: AgentHandle,
    message_json: *const c_char,
    message_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        message_op(handle, message_json, message_json_len, |agent, m| {
            agent.steer(m)
        })
    })
}

/// Queues a follow-up message (delivered when a run would otherwise stop).
#[no_mangle]
pub unsafe extern "C" fn agent_follow_up(
    handle: AgentHandle,
    message_json: *const c_char,
    message_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        message_op(handle, message_json, message_json_len, |agent, m| {
            agent.follow_up(m)
        })
    })
}

/// Aborts the active run's signal; does nothing when idle. Abort callbacks run later on the
/// runtime thread, never inside this call.
#[no_mangle]
pub unsafe extern "C" fn agent_abort(handle: AgentHandle) -> *mut AgentError {
    boundary(|| {
        agent_arg(handle)?.agent.abort();
        Ok(())
    })
}

/// Blocks until the active run (if any) finished its cleanup and its `done` returned, or
/// `timeout_ms` passed (< 0: no limit); writes `AGENT_WAIT_DONE` or `AGENT_WAIT_TIMEOUT`. Fails
/// with `AGENT_ERR_WOULD_DEADLOCK` on the runtime thread (inside a callback), where the run could
/// never finish.
#[no_mangle]
pub unsafe extern "C" fn agent_wait_for_idle(
    handle: AgentHandle,
    timeout_ms: i64,
    out_result: *mut AgentWaitResult,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_result, "out_result")?;
        let timeout = (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64));
        let agent = agent_arg(handle)?.agent.clone();
        let result = match agent.wait_for_idle_blocking(timeout) {
            Ok(()) => AGENT_WAIT_DONE,
            Err(e) if e.kind == ErrorKind::Timeout => AGENT_WAIT_TIMEOUT,
            Err(e) => {
                return Err(FfiError::from(e).named(
                    ErrorKind::WouldDeadlock,
                    "agent_wait_for_idle was called inside a callback (on the runtime thread, or inside agent_dispatch), where the run cannot finish.",
                ))
            }
        };
        write_out(out_result, result);
        Ok(())
    })
}

/// `reset()` (SPEC §7.16); `AGENT_ERR_BUSY` during a run.
#[no_mangle]
pub unsafe extern "C" fn agent_reset(handle: AgentHandle) -> *mut AgentError {
    boundary(|| agent_arg(handle)?.agent.reset().map_err(FfiError::from))
}

fn write_json(out: *mut *mut c_char, out_len: *mut usize, value: &Json) {
    write_owned_text(out, out_len, &crate::json::to_string(value));
}

/// Writes `*out_json` (free with `agent_string_free`): the queued messages `peekQueuedMessages()`
/// returns (steering if any, else follow-ups; one or all per the queue's mode).
#[no_mangle]
pub unsafe extern "C" fn agent_peek_queued_messages(
    handle: AgentHandle,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let messages = agent_arg(handle)?.agent.peek_queued_messages();
        write_json(out_json, out_json_len, &Json::Array(messages));
        Ok(())
    })
}

/// Writes whether either queue holds messages.
#[no_mangle]
pub unsafe extern "C" fn agent_has_queued_messages(
    handle: AgentHandle,
    out_has: *mut bool,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_has, "out_has")?;
        write_out(out_has, agent_arg(handle)?.agent.has_queued_messages());
        Ok(())
    })
}

/// Drops the queued steering messages.
#[no_mangle]
pub unsafe extern "C" fn agent_clear_steering_queue(handle: AgentHandle) -> *mut AgentError {
    boundary(|| {
        agent_arg(handle)?.agent.clear_steering_queue();
        Ok(())
    })
}

/// Drops the queued follow-up messages.
#[no_mangle]
pub unsafe extern "C" fn agent_clear_follow_up_queue(handle: AgentHandle) -> *mut AgentError {
    boundary(|| {
        agent_arg(handle)?.agent.clear_follow_up_queue();
        Ok(())
    })
}

/// Drops every queued message.
#[no_mangle]
pub unsafe extern "C" fn agent_clear_all_queues(handle: AgentHandle) -> *mut AgentError {
    boundary(|| {
        agent_arg(handle)?.agent.clear_all_queues();
        Ok(())
    })
}

/// Writes `*out_state_json` (free with `agent_string_free`): a snapshot `{systemPrompt, model,
/// thinkingLevel, tools (definitions), messages, isStreaming, streamingMessage?,
/// pendingToolCalls, errorMessage?, steeringMode, followUpMode, steeringQueue, followUpQueue,
/// toolExecution, sessionId?, transport?, thinkingBudgets?, maxRetryDelayMs?, timeoutMs?,
/// connectTimeoutMs?, idleTimeoutMs?, maxRetries?, caCertificates?, caCertificateFile?,
/// identity?}`.
/// Costs the size of the whole transcript: per-frame readers use `agent_get_message_count`,
/// `agent_get_message` and `agent_get_messages`.
#[no_mangle]
pub unsafe extern "C" fn agent_get_state(
    handle: AgentHandle,
    out_state_json: *mut *mut c_char,
    out_state_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_state_json, "out_state_json")?;
        write_json(
            out_state_json,
            out_state_json_len,
            &agent_arg(handle)?.agent.state_json(),
        );
        Ok(())
    })
}

/// Writes the number of messages in the transcript (O(1): cheap enough for every frame).
#[no_mangle]
pub unsafe extern "C" fn agent_get_message_count(
    handle: AgentHandle,
    out_count: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_count, "out_count")?;
        write_out(out_count, agent_arg(handle)?.agent.message_count());
        Ok(())
    })
}

/// Writes `*out_message_json` (free with `agent_string_free`): the transcript's message at
/// `index` (0 = first). `AGENT_ERR_INVALID_ARGUMENT` when `index` is out of range. Costs the
/// size of that message only.
#[no_mangle]
pub unsafe extern "C" fn agent_get_message(
    handle: AgentHandle,
    index: usize,
    out_message_json: *mut *mut c_char,
    out_message_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_message_json, "out_message_json")?;
        let agent = &agent_arg(handle)?.agent;
        let Some(message) = agent.message_range(index, 1).pop() else {
            let count = agent.message_count();
            return err(
                AGENT_ERR_INVALID_ARGUMENT,
                format!("index {index} is out of range: the transcript holds {count} messages."),
            );
        };
        write_owned_text(out_message_json, out_message_json_len, message.text());
        Ok(())
    })
}

/// Writes `*out_messages_json` (free with `agent_string_free`): a JSON array of the transcript's
/// messages `start .. start + count`, clamped to the transcript (an empty array past its end).
/// With `agent_get_message_count`, reads the last N messages without the whole state. Costs the
/// size of the messages returned only.
#[no_mangle]
pub unsafe extern "C" fn agent_get_messages(
    handle: AgentHandle,
    start: usize,
    count: usize,
    out_messages_json: *mut *mut c_char,
    out_messages_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_messages_json, "out_messages_json")?;
        let messages = agent_arg(handle)?.agent.message_range(start, count);
        let mut text = String::new();
        crate::message::write_json_array(&mut text, &messages);
        write_owned_text(out_messages_json, out_messages_json_len, &text);
        Ok(())
    })
}

/// Replaces the transcript with a copy of `messages_json` (an array of messages). A run in
/// progress appends its later messages to the new transcript (SPEC §7.15).
#[no_mangle]
pub unsafe extern "C" fn agent_set_messages(
    handle: AgentHandle,
    messages_json: *const c_char,
    messages_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        let messages = messages_arg(
            json_arg(messages_json, messages_json_len, "messages_json")?,
            "messages_json",
        )?;
        ffi.agent.set_messages(messages);
        Ok(())
    })
}

/// Replaces the executable tools with `tools[0..count]` (the agent takes its own references).
/// Takes effect at the next run; the change is declared before its next request (SPEC §4.7).
/// Hook results name tools (`context.tools`), so the agent keeps a reference to the newest tool
/// of every name it was ever given, also after it was replaced by a set without that name; a
/// tool's finalizer runs when a tool of the same name replaces it, or at `agent_free`.
///
/// # Safety
/// `tools` must be NULL (with `count` 0) or point to `count` readable tool handles.
#[no_mangle]
pub unsafe extern "C" fn agent_set_tools(
    handle: AgentHandle,
    tools: *const AgentTool,
    count: usize,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        if tools.is_null() && count > 0 {
            return err(AGENT_ERR_NULL, "tools is NULL.");
        }
        let handles = if count == 0 {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(tools, count) }
        };
        let tools = handles
            .iter()
            .enumerate()
            .map(|(i, &tool)| tool_arg(tool, &format!("tools[{i}]")))
            .collect::<FfiResult<Vec<_>>>()?;
        if let Some(dispatcher) = &ffi.dispatcher {
            tools.iter().for_each(|tool| tool.home_to(dispatcher));
        }
        ffi.agent
            .set_tools(tools.into_iter().map(|tool| tool.tool).collect());
        Ok(())
    })
}

/// Changes reassignable fields at once from a JSON object: `model` (object), `thinkingLevel`,
/// `steeringMode`, `followUpMode`, `toolExecution`, `sessionId`, `transport`, `thinkingBudgets`,
/// `maxRetryDelayMs`, `identity`, `abortGraceMs`, and the providers' transport options
/// `timeoutMs`, `connectTimeoutMs`, `idleTimeoutMs`, `maxRetries`, `caCertificates`,
/// `caCertificateFile`, `compaction` and `retry` (see `agent_options_new`; `compaction` and
/// `retry` change the members they name, a `null` member resets it) (`null` unsets all but the
/// first five). Unknown fields,
/// wrong types or unknown values (as in `agent_options_new`) fail with `AGENT_ERR_INVALID_JSON`
/// naming the field, and change nothing. Captured by the next run (modes apply at once).
#[no_mangle]
pub unsafe extern "C" fn agent_configure(
    handle: AgentHandle,
    patch_json: *const c_char,
    patch_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        let patch = json_arg(patch_json, patch_json_len, "patch_json")?;
        Ok(ffi.agent.configure(&patch)?)
    })
}

/// Installs (or, with NULL `hook`, removes) a hook; captured when the next run starts
/// (prepareNextTurn hooks: at the next turn boundary, SPEC §7.2).
#[no_mangle]
pub unsafe extern "C" fn agent_set_hook(
    handle: AgentHandle,
    kind: AgentHookKind,
    hook: AgentHookFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        let kind = hook_kind(kind)?;
        let hook = host_hook(kind, hook, ffi.home(&HostData::new(user_data, finalizer)));
        let replaced = ffi
            .agent
            .update_settings(|settings| settings.hooks.set(kind, hook));
        // Dropped after the agent's lock was released: its finalizer may call back in.
        drop(replaced);
        Ok(())
    })
}

/// Reassigns the stream function (NULL: the next run looks up the process-wide default when its
/// main loop starts, failing the run when there is none).
#[no_mangle]
pub unsafe extern "C" fn agent_set_stream_fn(
    handle: AgentHandle,
    stream_fn: AgentStreamFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        let data = ffi.home(&HostData::new(user_data, finalizer));
        ffi.agent.set_stream_fn(host_stream_fn(stream_fn, data));
        Ok(())
    })
}

/// Uses the built-in model providers (see `agent_set_default_providers`) as the stream function.
#[no_mangle]
pub unsafe extern "C" fn agent_use_providers(handle: AgentHandle) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        ffi.agent.set_stream_fn(Some(providers_stream_fn()?));
        Ok(())
    })
}

/// Uses the built-in scripted model (see `agent_options_set_scripted_model`) as the stream function.
#[no_mangle]
pub unsafe extern "C" fn agent_set_scripted_model(
    handle: AgentHandle,
    script_json: *const c_char,
    script_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let ffi = agent_arg(handle)?;
        ffi.agent
            .set_stream_fn(Some(scripted(script_json, script_json_len)?));
        Ok(())
    })
}

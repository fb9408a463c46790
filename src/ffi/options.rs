//! The options builder (`AgentOptions` of SPEC §7.1) and host hooks.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use super::call::{json_c_string, new_value_call, AgentHookCall, Shape};
use super::handles::Registry;
use super::stream::{host_stream_fn, providers_stream_fn, scripted, AgentStreamFn};
use super::tool::{tool_arg, AgentTool};
use super::*;
use crate::agent::{AgentOptions as CoreOptions, HookKind};
use crate::host::{AbortSignal, Hook};
use crate::sync::lock;

/// An options builder, consumed by `agent_new` (a generation-checked value; `{0}` is the null
/// handle).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentOptions {
    pub id: u64,
}

/// Which hook (SPEC §7.1): one of the `AGENT_HOOK_*` values.
pub type AgentHookKind = i32;
/// `convertToLlm(messages)`: answer an array of messages (NULL: the default conversion).
pub const AGENT_HOOK_CONVERT_TO_LLM: AgentHookKind = 0;
/// `transformContext(messages)`: answer an array of messages (NULL: unchanged).
pub const AGENT_HOOK_TRANSFORM_CONTEXT: AgentHookKind = 1;
/// `getApiKey(provider)`: input is the provider as a JSON string; answer a JSON string or NULL.
pub const AGENT_HOOK_GET_API_KEY: AgentHookKind = 2;
/// `beforeToolCall({assistantMessage, toolCall, args, context})`: answer `{block?, reason?, terminate?}` or NULL.
pub const AGENT_HOOK_BEFORE_TOOL_CALL: AgentHookKind = 3;
/// `afterToolCall({assistantMessage, toolCall, args, result, isError, context})`: answer overrides or NULL.
pub const AGENT_HOOK_AFTER_TOOL_CALL: AgentHookKind = 4;
/// `finishTurn({message, toolResults, context, newMessages})`: answer `{"action":"continue"|"end"}` or NULL.
pub const AGENT_HOOK_FINISH_TURN: AgentHookKind = 5;
/// `prepareRequest({context, model, thinkingLevel})`: answer `{context?, model?, thinkingLevel?}` or NULL.
pub const AGENT_HOOK_PREPARE_REQUEST: AgentHookKind = 6;
/// `prepareNextTurn()` (input `null`): answer `{context?, messages?, model?, thinkingLevel?}` or NULL.
pub const AGENT_HOOK_PREPARE_NEXT_TURN: AgentHookKind = 7;
/// `prepareNextTurnWithContext(turnContext)`: like `prepareNextTurn`, with the turn context.
pub const AGENT_HOOK_PREPARE_NEXT_TURN_WITH_CONTEXT: AgentHookKind = 8;
/// libagent: `compact({reason, preparation, focus?})`, called before a compaction's summary is
/// written: answer `{"summary": text, "details"?: object}` to supply it, `{"cancel": true}` to
/// cancel the compaction, or NULL to let libagent write it with the agent's model.
pub const AGENT_HOOK_COMPACT: AgentHookKind = 9;

/// A hook, called with the hook's argument object as JSON (NUL-terminated, with its length;
/// borrowed for the call; in it a context's `tools` are tool definitions). Answer through `call`
/// exactly once (now or later, any thread): `agent_hook_call_complete(call, json_or_NULL, len)`
/// or `agent_hook_call_fail(call, message, len)`. In answers, `context.tools` is an array of
/// tool names.
pub type AgentHookFn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        input_json: *const c_char,
        input_json_len: usize,
        call: AgentHookCall,
    ),
>;

pub(crate) fn hook_kind(kind: AgentHookKind) -> FfiResult<HookKind> {
    usize::try_from(kind)
        .ok()
        .and_then(|index| HookKind::ALL.get(index).copied())
        .ok_or_else(|| FfiError {
            status: AGENT_ERR_INVALID_ARGUMENT,
            message: format!("Unknown hook kind {kind}."),
        })
}

/// The core hook behind a C callback (`None` when `callback` is NULL).
pub(crate) fn host_hook(
    kind: HookKind,
    callback: AgentHookFn,
    data: Arc<HostData>,
) -> Option<Hook> {
    let shape = match kind {
        HookKind::ConvertToLlm | HookKind::TransformContext => Shape::Messages,
        HookKind::GetApiKey => Shape::StringOrNull,
        _ => Shape::Object,
    };
    Some(hook_of(callback?, data, shape))
}

/// A core hook calling `callback` with its input as JSON and answers of `shape`.
pub(crate) fn hook_of(
    callback: unsafe extern "C" fn(*mut c_void, *const c_char, usize, AgentHookCall),
    data: Arc<HostData>,
    shape: Shape,
) -> Hook {
    Arc::new(move |input, signal: AbortSignal| {
        let pending = new_value_call(shape, &signal);
        let text = json_c_string(&input);
        let call = AgentHookCall { id: pending.token };
        // SAFETY: the host registered this callback for this user_data.
        guard_callback(|| unsafe {
            callback(data.user_data, text.as_ptr(), text.as_bytes().len(), call)
        });
        pending.into_future()
    })
}

/// Options not yet consumed by `agent_new`.
pub(crate) struct Unbuilt {
    pub options: CoreOptions,
    /// The host data and tools given to the options: homed to the dispatcher (see `HostData`)
    /// when the agent is built with one, whenever `agent_options_set_dispatcher` was called.
    pub homeless: Vec<Homeless>,
}

/// Host data waiting for the agent's dispatcher.
pub(crate) enum Homeless {
    Data(std::sync::Weak<HostData>),
    Tool(super::tool::ToolEntry),
}

impl Homeless {
    pub fn home_to(self, dispatcher: &crate::dispatch::WeakDispatcher) {
        match self {
            Homeless::Data(data) => {
                if let Some(data) = data.upgrade() {
                    data.home_to(dispatcher);
                }
            }
            Homeless::Tool(tool) => tool.home_to(dispatcher),
        }
    }
}

pub(crate) type Builder = Arc<Mutex<Option<Unbuilt>>>;

pub(crate) static OPTIONS: Registry<Builder> =
    Registry::new("options object", 0x0b7e_0b7e_0000_0000);

/// Changes an options builder under its lock. What `change` returns (a replaced stream function
/// or hook) is dropped by the caller after the lock was released: its finalizer is host code.
pub(crate) fn with_options<R>(
    options: AgentOptions,
    change: impl FnOnce(&mut CoreOptions) -> FfiResult<R>,
) -> FfiResult<R> {
    with_unbuilt(options, |unbuilt| change(&mut unbuilt.options))
}

pub(crate) fn with_unbuilt<R>(
    options: AgentOptions,
    change: impl FnOnce(&mut Unbuilt) -> FfiResult<R>,
) -> FfiResult<R> {
    let builder = OPTIONS.get(options.id, "options")?;
    let mut guard = lock(&builder);
    match guard.as_mut() {
        Some(unbuilt) => change(unbuilt),
        None => err(AGENT_ERR_INVALID_HANDLE, "options was already consumed."),
    }
}

/// Host data the options' agent takes: homed when the agent is built with a dispatcher.
fn remember(options: AgentOptions, homeless: Homeless) -> FfiResult {
    with_unbuilt(options, |unbuilt| {
        unbuilt.homeless.push(homeless);
        Ok(())
    })
}

/// Creates an options builder from `options_json` (NULL = all defaults):
/// `{"initialState": {"systemPrompt"?, "model"?, "thinkingLevel"?, "messages"?}, "steeringMode"?,
/// "followUpMode"?, "toolExecution"?, "sessionId"?, "transport"?, "thinkingBudgets"?,
/// "maxRetryDelayMs"?, "identity"?, "abortGraceMs"?, "timeoutMs"?, "connectTimeoutMs"?,
/// "idleTimeoutMs"?, "maxRetries"?, "caCertificates"?, "caCertificateFile"?, "compaction"?,
/// "retry"?}`. `timeoutMs` to `caCertificateFile` are the built-in providers' transport options, passed to the stream function like
/// `maxRetryDelayMs`: `timeoutMs` bounds one attempt from connecting to the last body byte
/// (default 600000 ms, 0 = no limit), `connectTimeoutMs` the TCP connect and TLS handshake
/// (30000), `idleTimeoutMs` the silence before the response head or between body bytes (300000);
/// `maxRetries` (default 0) retries failed requests as pi-ai does; `caCertificates` (PEM text) and
/// `caCertificateFile` (a PEM file) add trusted CAs to the system's and the bundled roots.
/// Context management (issue 27), off unless enabled: `"compaction": {"enabled"?, "reserveTokens"?
/// (16384), "keepRecentTokens"? (20000)}` compacts when the context passes the model's
/// `contextWindow` minus `reserveTokens` and recovers from a context overflow by compacting and
/// retrying once (it needs the model's `contextWindow`; without one it stays off and the first
/// run says so in a `compaction_end` errorMessage); `"retry": {"enabled"?, "maxRetries"? (3),
/// "baseDelayMs"? (2000), "maxDelayMs"? (60000)}` retries transient model errors with
/// exponential backoff (events `AGENT_EVENT_COMPACTION_*`, `AGENT_EVENT_AUTO_RETRY_*`).
/// Unknown fields, wrong types and unknown
/// values (modes: "one-at-a-time"|"all"; toolExecution: "parallel"|"sequential"; thinkingLevel:
/// "off"|"minimal"|"low"|"medium"|"high"|"xhigh"|"max"; negative delays; a non-integer
/// maxRetries; a CA that holds no PEM certificate) fail with `AGENT_ERR_INVALID_JSON` naming the
/// field. Writes `*out_options`.
#[no_mangle]
pub unsafe extern "C" fn agent_options_new(
    options_json: *const c_char,
    options_json_len: usize,
    out_options: *mut AgentOptions,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_options, "out_options")?;
        let options = match opt_json_arg(options_json, options_json_len, "options_json")? {
            Some(value) if !value.is_object() => {
                return err(
                    AGENT_ERR_INVALID_JSON,
                    "options_json must be a JSON object.",
                )
            }
            Some(value) => CoreOptions::from_json(value)?,
            None => CoreOptions::default(),
        };
        let id = OPTIONS.insert(Arc::new(Mutex::new(Some(Unbuilt {
            options,
            homeless: Vec::new(),
        }))));
        write_out(out_options, AgentOptions { id });
        Ok(())
    })
}

/// Frees an options builder that was not passed to `agent_new`.
#[no_mangle]
pub extern "C" fn agent_options_free(options: AgentOptions) -> *mut AgentError {
    boundary(|| {
        OPTIONS.get(options.id, "options")?;
        OPTIONS.remove(options.id);
        Ok(())
    })
}

/// Appends a tool to `initialState.tools` (the options take their own reference).
#[no_mangle]
pub unsafe extern "C" fn agent_options_add_tool(
    options: AgentOptions,
    tool: AgentTool,
) -> *mut AgentError {
    boundary(|| {
        let tool = tool_arg(tool, "tool")?;
        with_unbuilt(options, |unbuilt| {
            unbuilt.options.initial_state.tools.push(tool.tool.clone());
            unbuilt.homeless.push(Homeless::Tool(tool));
            Ok(())
        })
    })
}

/// Sets the agent's stream function (NULL: use the process-wide default, resolved by `agent_new`).
#[no_mangle]
pub unsafe extern "C" fn agent_options_set_stream_fn(
    options: AgentOptions,
    stream_fn: AgentStreamFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        // Validate first: on failure the library takes no reference (the finalizer is not run).
        with_options(options, |_| Ok(()))?;
        let data = HostData::new(user_data, finalizer);
        remember(options, Homeless::Data(Arc::downgrade(&data)))?;
        let stream_fn = host_stream_fn(stream_fn, data);
        let replaced = with_options(options, |o| {
            Ok(std::mem::replace(&mut o.stream_fn, stream_fn))
        })?;
        drop(replaced);
        Ok(())
    })
}

/// Uses the built-in scripted model as the stream function. `script_json` is an array of
/// responses, one per request: `{"content": [{"type":"text","text","chunks"?|"deltas"?,
/// "signature"?} | {"type":"thinking","thinking",...} | {"type":"toolCall","id","name",
/// "arguments"?|"argsText"?,"chunks"?|"deltas"?}], "stopReason"?, "errorMessage"?, "usage"?,
/// "delayMs"?, "throw"?}`. Each response streams as deltas in lock step with the listeners.
#[no_mangle]
pub unsafe extern "C" fn agent_options_set_scripted_model(
    options: AgentOptions,
    script_json: *const c_char,
    script_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let stream_fn = scripted(script_json, script_json_len)?;
        let replaced = with_options(options, |o| Ok(o.stream_fn.replace(stream_fn)))?;
        drop(replaced);
        Ok(())
    })
}

/// Uses the built-in model providers as the stream function (see
/// `agent_set_default_providers`).
#[no_mangle]
pub extern "C" fn agent_options_use_providers(options: AgentOptions) -> *mut AgentError {
    boundary(|| {
        // The handle is checked first: a bad handle is reported whatever the build.
        with_options(options, |_| Ok(()))?;
        let stream_fn = providers_stream_fn()?;
        let replaced = with_options(options, |o| Ok(o.stream_fn.replace(stream_fn)))?;
        drop(replaced);
        Ok(())
    })
}

/// Installs (or, with NULL `hook`, removes) a hook.
#[no_mangle]
pub unsafe extern "C" fn agent_options_set_hook(
    options: AgentOptions,
    kind: AgentHookKind,
    hook: AgentHookFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        let kind = hook_kind(kind)?;
        with_options(options, |_| Ok(()))?;
        let data = HostData::new(user_data, finalizer);
        remember(options, Homeless::Data(Arc::downgrade(&data)))?;
        let hook = host_hook(kind, hook, data);
        let replaced = with_options(options, |o| Ok(o.settings.hooks.set(kind, hook)))?;
        drop(replaced);
        Ok(())
    })
}

//! Host tools: `agent_tool_new` and the adapters that run C execute/prepareArguments callbacks.

use crate::json::Field;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use super::call::{
    self, new_tool_call, new_value_call, AgentHookCall, AgentToolCall, Answer, Shape, CALLS,
};
use super::handles::Registry;
use super::*;
use crate::dispatch::WeakDispatcher;
use crate::host::{
    AbortSignal, AgentTool as CoreTool, HookResult, HostFuture, ToolBehavior, ToolInvocation,
};
use crate::json::Json;
use crate::sync::lock;

/// A reference-counted tool (a generation-checked value; `{0}` is the null handle). Agents and
/// options take their own reference.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentTool {
    pub id: u64,
}

/// Runs a tool (SPEC §6.8). `tool_call_id` and `args_json` (the validated arguments; both
/// NUL-terminated, with their lengths) are borrowed for the callback. Answer through `call`
/// exactly once, now or later, from any thread: `agent_tool_call_complete` or
/// `agent_tool_call_fail`. Report progress with `agent_tool_call_update` before answering;
/// observe aborts with `agent_tool_call_is_aborted` / `agent_tool_call_on_abort`.
pub type AgentToolExecuteFn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        tool_call_id: *const c_char,
        tool_call_id_len: usize,
        args_json: *const c_char,
        args_json_len: usize,
        call: AgentToolCall,
    ),
>;

/// The synchronous `prepareArguments(args)` shim (SPEC §5.2), called with the raw arguments. It
/// must answer before returning: `agent_hook_call_complete(call, args_json, len)` (NULL keeps the
/// arguments) or `agent_hook_call_fail(call, message, len)`.
pub type AgentPrepareArgumentsFn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        args_json: *const c_char,
        args_json_len: usize,
        call: AgentHookCall,
    ),
>;

type ExecuteCallback =
    unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize, AgentToolCall);
type PrepareCallback = unsafe extern "C" fn(*mut c_void, *const c_char, usize, AgentHookCall);

pub(crate) struct HostTool {
    execute: ExecuteCallback,
    data: Arc<HostData>,
    prepare: Mutex<Option<(PrepareCallback, Arc<HostData>)>>,
    /// The dispatcher of the first host-pumped agent given the tool: a `prepareArguments` shim
    /// installed later is confined to it too.
    home: std::sync::OnceLock<WeakDispatcher>,
}

impl HostTool {
    fn home_to(&self, dispatcher: &WeakDispatcher) {
        let _ = self.home.set(dispatcher.clone());
        self.data.home_to(dispatcher);
        if let Some((_, data)) = &*lock(&self.prepare) {
            data.home_to(dispatcher);
        }
    }
}

/// What a tool handle holds: the core tool, with the host data its callbacks use (a host tool's
/// adapter, or the consent hook of a coding tool).
#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub tool: CoreTool,
    pub adapter: Option<Arc<HostTool>>,
    pub consent: Option<Arc<HostData>>,
}

impl ToolEntry {
    /// Confines the tool's finalizers to the dispatcher of a host-pumped agent given the tool
    /// (the first such agent decides).
    pub fn home_to(&self, dispatcher: &WeakDispatcher) {
        if let Some(adapter) = &self.adapter {
            adapter.home_to(dispatcher);
        }
        if let Some(consent) = &self.consent {
            consent.home_to(dispatcher);
        }
    }
}

impl ToolBehavior for HostTool {
    fn execute(&self, invocation: ToolInvocation) -> HostFuture<HookResult> {
        let pending = new_tool_call(invocation.on_update, &invocation.signal);
        let call = AgentToolCall { id: pending.token };
        let id = std::ffi::CString::new(invocation.tool_call_id).unwrap_or_default();
        let args = call::json_c_string(&invocation.args);
        // SAFETY: the host registered this callback for this user_data.
        guard_callback(|| unsafe {
            (self.execute)(
                self.data.user_data,
                id.as_ptr(),
                id.as_bytes().len(),
                args.as_ptr(),
                args.as_bytes().len(),
                call,
            )
        });
        pending.into_future()
    }

    fn has_prepare_arguments(&self) -> bool {
        lock(&self.prepare).is_some()
    }

    fn prepare_arguments(&self, args: Json) -> Result<Json, String> {
        let Some((callback, data)) = lock(&self.prepare).clone() else {
            return Ok(args);
        };
        let pending = new_value_call(Shape::Any, &AbortSignal::new());
        let call = AgentHookCall { id: pending.token };
        let text = call::json_c_string(&args);
        // SAFETY: the host registered this callback for this user_data.
        guard_callback(|| unsafe {
            callback(data.user_data, text.as_ptr(), text.as_bytes().len(), call)
        });
        match pending.answer() {
            Answer::Now(Ok(Some(prepared))) => Ok(prepared),
            Answer::Now(Ok(None)) => Ok(args),
            Answer::Now(Err(message)) => Err(message),
            Answer::Later(_) => {
                CALLS.remove(call.id);
                Err("prepareArguments did not answer before returning".into())
            }
        }
    }
}

/// Tools by handle: host tools keep their C adapter (built-in tools have none).
pub(crate) static TOOLS: Registry<ToolEntry> = Registry::new("tool", 0x7001_7001_0000_0000);

/// The tool behind a handle.
pub(crate) fn tool_arg(tool: AgentTool, name: &str) -> FfiResult<ToolEntry> {
    TOOLS.get(tool.id, name)
}

/// Creates a tool. `definition_json`: `{"name", "label"?, "description"?, "parameters"?,
/// "executionMode"?, "constrainedSampling"?, "outputSchema"?, "replay"?}` (`name` required;
/// other fields are kept and passed through). `finalizer(user_data)` runs when the last
/// reference to the tool is dropped. Writes `*out_tool` on success; free it with
/// `agent_tool_free` (agents keep their own references).
#[no_mangle]
pub unsafe extern "C" fn agent_tool_new(
    definition_json: *const c_char,
    definition_json_len: usize,
    execute: AgentToolExecuteFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
    out_tool: *mut AgentTool,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_tool, "out_tool")?;
        let Some(execute) = execute else {
            return err(AGENT_ERR_NULL, "execute is NULL.");
        };
        let definition = json_arg(definition_json, definition_json_len, "definition_json")?;
        if !definition.field("name").is_some_and(Json::is_string) {
            return err(
                AGENT_ERR_INVALID_JSON,
                "definition_json must be a JSON object with a string \"name\".",
            );
        }
        let behavior = Arc::new(HostTool {
            execute,
            data: HostData::new(user_data, finalizer),
            prepare: Mutex::new(None),
            home: std::sync::OnceLock::new(),
        });
        let tool = CoreTool::new(definition, behavior.clone());
        let id = TOOLS.insert(ToolEntry {
            tool,
            adapter: Some(behavior),
            consent: None,
        });
        write_out(out_tool, AgentTool { id });
        Ok(())
    })
}

/// Installs (or, with NULL, removes) the tool's `prepareArguments` shim.
#[no_mangle]
pub unsafe extern "C" fn agent_tool_set_prepare_arguments(
    tool: AgentTool,
    prepare: AgentPrepareArgumentsFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        let Some(behavior) = TOOLS.get(tool.id, "tool")?.adapter else {
            return err(
                AGENT_ERR_INVALID_ARGUMENT,
                "tool is a built-in tool: its prepareArguments cannot be replaced.",
            );
        };
        let data = HostData::new(user_data, finalizer);
        if let Some(home) = behavior.home.get() {
            data.home_to(home);
        }
        let replaced = std::mem::replace(
            &mut *lock(&behavior.prepare),
            prepare.map(|callback| (callback, data)),
        );
        // Dropped after the lock was released: its finalizer is host code.
        drop(replaced);
        Ok(())
    })
}

/// Drops the host's reference to a tool. Agents that use it keep theirs.
#[no_mangle]
pub extern "C" fn agent_tool_free(tool: AgentTool) -> *mut AgentError {
    boundary(|| match TOOLS.remove(tool.id) {
        Some(_) => Ok(()),
        None => TOOLS.get(tool.id, "tool").map(|_| ()),
    })
}

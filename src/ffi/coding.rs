//! The coding tool pack from C: `agent_coding_tools_new` (see `crate::coding`).

use crate::json::Field;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::call::Shape;
use super::options::{hook_of, AgentHookFn};
use super::tool::{AgentTool, ToolEntry, TOOLS};
use super::*;
use crate::coding::{coding_tools, CodingOptions, ConsentFn, ConsentRequest};
use crate::host::{call_hook, Hook};
use crate::json::{json, Json};

/// Creates the coding tool pack (pi-coding-agent's `read`, `write`, `edit`, `ls`, `find`,
/// `grep`, `bash`) for the directory `root`. Every path the file tools (all but `bash`) use
/// stays inside it: paths that lead out of the root (`..`, absolute paths, symbolic links) are
/// refused, and named pipes, sockets and devices are refused without blocking. `bash` is not
/// confined: its commands run with the host process's rights and can read and write anywhere the
/// process can; it is off unless enabled, and `consent` is its only gate. A file hard-linked into
/// the root from outside is read like any other unless `refuseHardLinks` is set.
///
/// `options_json` (NULL = defaults): `{"tools"?: ["read", ...] (default: all but bash, or all
/// seven with bash on), "bash"?: bool (default false: bash is off unless enabled),
/// "bashTimeoutMs"?: number|null (default 120000; null: no default timeout), "maxEditBytes"?:
/// number (default 64 MiB: `edit` holds the file in memory and refuses larger ones),
/// "refuseHardLinks"?: bool (default false; true: `read`, `edit` and `grep` refuse files with
/// more than one hard link, and `grep` skips them in a tree)}`.
///
/// `consent` (may be NULL) is asked before `write`, `edit` and `bash` change anything, on the
/// runtime thread, with `{"toolCallId", "tool", "args"}`. Answer through `call` once (now or
/// later, any thread): `agent_hook_call_complete(call, NULL, 0)` (or `"true"`) allows the call;
/// `agent_hook_call_complete(call, "{\"allow\":false,\"reason\":\"...\"}", AGENT_NTS)` (or
/// `"false"`) or `agent_hook_call_fail(call, reason, len)` refuses it, and the model sees the
/// reason as the tool's error. `finalizer(user_data)` runs when the last tool of the pack is gone.
///
/// Writes up to `capacity` tool handles to `out_tools` and their number to `*out_count` (7 is
/// always enough); each is an ordinary tool: add it with `agent_options_add_tool` or
/// `agent_set_tools` and free it with `agent_tool_free`. Fails with `AGENT_ERR_INVALID_ARGUMENT`
/// when `root` is not a directory, an option is wrong, or `capacity` is too small.
#[no_mangle]
pub unsafe extern "C" fn agent_coding_tools_new(
    root: *const c_char,
    root_len: usize,
    options_json: *const c_char,
    options_json_len: usize,
    consent: AgentHookFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
    out_tools: *mut AgentTool,
    capacity: usize,
    out_count: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_count, "out_count")?;
        if out_tools.is_null() {
            return err(AGENT_ERR_NULL, "out_tools is NULL.");
        }
        let root = str_arg(root, root_len, "root")?;
        let mut options = match opt_json_arg(options_json, options_json_len, "options_json")? {
            None => CodingOptions::default(),
            Some(value) => CodingOptions::from_json(&value).map_err(|message| FfiError {
                status: AGENT_ERR_INVALID_JSON,
                message,
            })?,
        };
        let data = HostData::new(user_data, finalizer);
        if let Some(callback) = consent {
            options.consent = Some(consent_fn(hook_of(callback, data.clone(), Shape::Any)));
        }
        let tools = coding_tools(root, options).map_err(|message| FfiError {
            status: AGENT_ERR_INVALID_ARGUMENT,
            message,
        })?;
        if tools.len() > capacity {
            return err(
                AGENT_ERR_INVALID_ARGUMENT,
                format!(
                    "out_tools holds {capacity} tools; the pack has {}.",
                    tools.len()
                ),
            );
        }
        for (index, tool) in tools.into_iter().enumerate() {
            let handle = AgentTool {
                id: TOOLS.insert(ToolEntry {
                    tool,
                    adapter: None,
                    consent: Some(data.clone()),
                }),
            };
            // SAFETY: the caller gave room for `capacity` handles.
            unsafe { *out_tools.add(index) = handle };
            write_out(out_count, index + 1);
        }
        Ok(())
    })
}

/// The pack's consent function over a C hook: allow on NULL/true/{allow:true}.
fn consent_fn(hook: Hook) -> ConsentFn {
    Arc::new(move |request: ConsentRequest| {
        let input = json!({
            "toolCallId": request.tool_call_id,
            "tool": request.tool,
            "args": request.args,
        });
        // The call observes the run's abort (agent_hook_call_is_aborted).
        let answer = call_hook(&hook, input, &request.signal);
        Box::pin(async move {
            match answer.await? {
                None | Some(Json::Bool(true)) => Ok(()),
                Some(Json::Object(object)) if object.field("allow") != Some(&Json::Bool(false)) => {
                    Ok(())
                }
                Some(Json::Object(object)) => Err(object
                    .field("reason")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string()),
                Some(_) => Err(String::new()),
            }
        })
    })
}

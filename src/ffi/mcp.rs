//! MCP servers' tools from C: `agent_mcp_*` (see `crate::mcp`).

use std::ffi::c_char;
use std::time::Duration;

use super::handles::Registry;
use super::tool::{AgentTool, ToolEntry, TOOLS};
use super::*;
use crate::mcp::McpTools;

/// The MCP servers of one configuration: a generation-checked value (a freed or forged handle
/// is reported, never used); `{0}` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentMcp {
    pub id: u64,
}

static MCPS: Registry<McpTools> = Registry::new("MCP server set", 0x3c90_3c90_0000_0000);

fn mcp_arg(mcp: AgentMcp) -> FfiResult<McpTools> {
    MCPS.get(mcp.id, "mcp")
}

/// Starts the MCP servers of `config_json` and returns at once: every enabled server connects in
/// the background (a stdio server is started as a child process in a process group of its own; a
/// streamable-HTTP server is reached at its URL) and its tools are listed (all pages).
///
/// `config_json` is the standard MCP client configuration: `{"mcpServers": {"<name>": {...}}}`
/// with, for a stdio server, `"command"`, `"args"?` (strings), `"env"?` (names to strings, set on
/// top of this process's environment) and `"cwd"?`; for a streamable-HTTP server `"url"` and
/// `"headers"?`; for both `"type"?` (`"stdio"`, `"http"` or `"streamable-http"`), `"timeout"?`
/// (seconds, default 60: the bound of each request; a call's progress notifications restart it)
/// and `"enabled"?` (default true). `${VAR}` in `env` and `headers` values is replaced by the
/// environment variable. Server names are letters, digits, `_` and `-`. A wrong entry (the legacy
/// `"type": "sse"`, a missing `command`, an unset variable, ...) does not fail the call: that
/// server is reported `failed` with the reason by `agent_mcp_servers_json`, the others connect.
///
/// Fails with `AGENT_ERR_INVALID_JSON` when `config_json` is not JSON or has no `"mcpServers"`
/// object. Free the handle with `agent_mcp_free`.
#[no_mangle]
pub unsafe extern "C" fn agent_mcp_connect(
    config_json: *const c_char,
    config_json_len: usize,
    out_mcp: *mut AgentMcp,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_mcp, "out_mcp")?;
        crate::runtime::check_not_forked().map_err(|message| FfiError {
            status: AGENT_ERR_INVALID_STATE,
            message,
        })?;
        let config = json_arg(config_json, config_json_len, "config_json")?;
        let tools = McpTools::connect(&config).map_err(|message| FfiError {
            status: AGENT_ERR_INVALID_JSON,
            message,
        })?;
        write_out(
            out_mcp,
            AgentMcp {
                id: MCPS.insert(tools),
            },
        );
        Ok(())
    })
}

/// Waits until no server is still connecting (each is `ready`, `failed`, `disabled` or
/// `closed`), or `timeout_ms` passed. `*out_settled` (may be NULL) tells which. Fails with
/// `AGENT_ERR_WOULD_DEADLOCK` on the runtime thread (inside a callback).
#[no_mangle]
pub unsafe extern "C" fn agent_mcp_wait(
    mcp: AgentMcp,
    timeout_ms: u64,
    out_settled: *mut bool,
) -> *mut AgentError {
    boundary(|| {
        let tools = mcp_arg(mcp)?;
        if crate::runtime::is_runtime_thread() {
            return err(
                AGENT_ERR_WOULD_DEADLOCK,
                "agent_mcp_wait cannot be called inside a libagent callback: the servers connect on this thread.",
            );
        }
        let settled = tools.wait_blocking(Duration::from_millis(timeout_ms));
        if !out_settled.is_null() {
            write_out(out_settled, settled);
        }
        Ok(())
    })
}

/// The servers as JSON, in the configuration's order: `[{"name", "state" ("connecting", "ready",
/// "failed", "disabled" or "closed"), "toolCount", "lastError" (a sentence or null), "skipped"
/// (sentences naming tools left out, e.g. for an input schema that is not a valid JSON
/// Schema)}]`. A failed server's `lastError` ends with what it wrote to stderr last. Free the
/// text with `agent_string_free`; `out_len` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn agent_mcp_servers_json(
    mcp: AgentMcp,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let tools = mcp_arg(mcp)?;
        let servers: Vec<Json> = tools.servers().iter().map(|s| s.to_json()).collect();
        write_owned_json(
            out_json,
            out_len,
            crate::json::to_string(&Json::Array(servers)),
        );
        Ok(())
    })
}

/// The definitions of the tools the ready servers offer now, as JSON: `[{"name", "label",
/// "description", "parameters"}]`, in the order `agent_mcp_tools` gives them. Free the text with
/// `agent_string_free`; `out_len` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn agent_mcp_tools_json(
    mcp: AgentMcp,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let (_, tools) = mcp_arg(mcp)?.tools();
        let definitions: Vec<Json> = tools.iter().map(|t| (*t.definition).clone()).collect();
        write_owned_json(
            out_json,
            out_len,
            crate::json::to_string(&Json::Array(definitions)),
        );
        Ok(())
    })
}

/// The number of tools the ready servers offer now (what `agent_mcp_tools` needs room for).
#[no_mangle]
pub unsafe extern "C" fn agent_mcp_tool_count(
    mcp: AgentMcp,
    out_count: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_count, "out_count")?;
        write_out(out_count, mcp_arg(mcp)?.tools().1.len());
        Ok(())
    })
}

/// Writes the tools the ready servers offer now, as tool handles, to `out_tools` (room for
/// `capacity`) and their number to `*out_count`. Each is named `mcp__<server>__<tool>` as
/// pi-coding-agent 1.6.0 names it (characters other than ASCII letters, digits and `_` become
/// `_`; a name over 64 characters, or one two tools would share, is cut and ends in `_` and 8
/// hex digits), labelled `<server>/<tool>`, with the tool's description and input schema.
/// Add them with `agent_options_add_tool` or `agent_set_tools`; free each with
/// `agent_tool_free`.
///
/// A call sends `tools/call`: text and images come back as content blocks, embedded resources
/// as text (images as images), other blocks as a short placeholder; `isError` makes an error
/// result; text beyond 20 KB keeps its start and end. A call that gets no answer within the
/// server's timeout (restarted by each progress notification, which also reaches the host as a
/// tool update) fails with a sentence saying so; an abort cancels it. A message larger than
/// 16 MiB ends the connection with an error naming the limit, and a server whose connection
/// dropped is started (or reached) again by the next call. Tools of a server closed with
/// `agent_mcp_close` fail with a sentence saying it is closed.
///
/// Fails with `AGENT_ERR_INVALID_ARGUMENT` when `capacity` is too small (ask
/// `agent_mcp_tool_count`; the list may change when a server announces new tools).
#[no_mangle]
pub unsafe extern "C" fn agent_mcp_tools(
    mcp: AgentMcp,
    out_tools: *mut AgentTool,
    capacity: usize,
    out_count: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_count, "out_count")?;
        let (_, tools) = mcp_arg(mcp)?.tools();
        if tools.len() > capacity {
            return err(
                AGENT_ERR_INVALID_ARGUMENT,
                format!(
                    "out_tools holds {capacity} tools; the MCP servers offer {}.",
                    tools.len()
                ),
            );
        }
        if out_tools.is_null() && !tools.is_empty() {
            return err(AGENT_ERR_NULL, "out_tools is NULL.");
        }
        for (index, tool) in tools.iter().enumerate() {
            let handle = AgentTool {
                id: TOOLS.insert(ToolEntry {
                    tool: tool.clone(),
                    adapter: None,
                    consent: None,
                }),
            };
            // SAFETY: the caller gave room for `capacity` handles.
            unsafe { *out_tools.add(index) = handle };
        }
        write_out(out_count, tools.len());
        Ok(())
    })
}

/// Gives the set to the agent the options build: at the start of each turn the agent takes the
/// set's current tools (so a server's `tools/list_changed` takes effect between turns), and a
/// prompt first waits, up to 10 s, for servers still connecting so their tools are in its first
/// request. The tools join each request's tools; they are not in the agent's tool list
/// (`agent_set_tools` leaves them). The options keep the set: `agent_mcp_free` may follow at
/// once; the servers end when the set is closed or when the last agent holding it is freed.
#[no_mangle]
pub extern "C" fn agent_options_add_mcp(
    options: super::options::AgentOptions,
    mcp: AgentMcp,
) -> *mut AgentError {
    boundary(|| {
        let tools = mcp_arg(mcp)?;
        super::options::with_unbuilt(options, |unbuilt| {
            unbuilt
                .options
                .settings
                .tool_sets
                .push(std::sync::Arc::new(tools));
            Ok(())
        })
    })
}

/// Ends every server of the set and waits for them: a stdio server's stdin is closed, then its
/// process group gets SIGTERM, then SIGKILL (a second of grace each), so nothing of it outlives
/// the call; an HTTP session is ended. Fails with `AGENT_ERR_WOULD_DEADLOCK` on the runtime
/// thread (inside a callback). Closing twice is harmless.
#[no_mangle]
pub extern "C" fn agent_mcp_close(mcp: AgentMcp) -> *mut AgentError {
    boundary(|| close(mcp_arg(mcp)?))
}

fn close(tools: McpTools) -> FfiResult {
    if crate::runtime::is_runtime_thread() {
        return err(
            AGENT_ERR_WOULD_DEADLOCK,
            "MCP servers cannot be closed inside a libagent callback: they are closed on this thread.",
        );
    }
    let (tx, rx) = std::sync::mpsc::channel();
    crate::runtime::spawn(async move {
        tools.close().await;
        let _ = tx.send(());
    });
    let _ = rx.recv();
    Ok(())
}

/// Releases the handle. When no agent holds the set (`agent_options_add_mcp`), its servers end:
/// as `agent_mcp_close` does (on the runtime thread, where that cannot wait, their process
/// groups are killed at once). Otherwise they end with the last agent holding the set (killed
/// at once when it is freed). Tool handles taken from the set stay valid handles whose calls
/// then fail with a sentence saying the server is gone.
#[no_mangle]
pub extern "C" fn agent_mcp_free(mcp: AgentMcp) -> *mut AgentError {
    boundary(|| {
        let tools = MCPS.remove(mcp.id).map_or_else(|| mcp_arg(mcp), Ok)?;
        if !tools.is_shared() && !crate::runtime::is_runtime_thread() {
            close(tools)?;
        }
        // Dropping the last reference kills whatever is left of the process groups.
        Ok(())
    })
}

//! Sessions from C: pi's JSONL session files (see `crate::session`), opened, created or kept in
//! memory, appended to, branched, and read back as JSON.

use crate::json::Field;
use std::ffi::c_char;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::handles::Registry;
use super::options::{with_options, AgentOptions};
use super::*;
use crate::json::Json;
use crate::session::{Durability, Session, SessionError, SessionErrorKind};
use crate::sync::lock;

/// A session handle: a generation-checked value (a freed or forged handle is reported, never
/// used); `{0}` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentSession {
    pub id: u64,
}

/// What `agent_session_get` returns: one of the `AGENT_SESSION_*` values.
pub type AgentSessionPart = i32;
/// The header: `{"type": "session", "version", "id", "timestamp", "cwd", ...}`.
pub const AGENT_SESSION_HEADER: AgentSessionPart = 0;
/// Every entry except the header, in file order (an array).
pub const AGENT_SESSION_ENTRIES: AgentSessionPart = 1;
/// The entries from the root to the leaf (an array).
pub const AGENT_SESSION_BRANCH: AgentSessionPart = 2;
/// The context at the leaf: `{"messages", "thinkingLevel", "model"}` (`model` is
/// `{"provider", "modelId"}` or null).
pub const AGENT_SESSION_CONTEXT: AgentSessionPart = 3;
/// The context's messages converted for a model (an array).
pub const AGENT_SESSION_LLM: AgentSessionPart = 4;
/// The leaf's id: a JSON string, or null.
pub const AGENT_SESSION_LEAF_ID: AgentSessionPart = 5;
/// The file: `{"path": string or null (in memory), "exists": bool}` (a new session's file
/// exists once it holds a user or assistant message).
pub const AGENT_SESSION_FILE: AgentSessionPart = 6;

static SESSIONS: Registry<Arc<Mutex<Session>>> = Registry::new("session", 0x5e55_5e55_0000_0000);

/// The session behind a handle (an agent attached to it keeps this reference).
pub(crate) fn session_arg(handle: AgentSession) -> FfiResult<Arc<Mutex<Session>>> {
    SESSIONS.get(handle.id, "session")
}

impl From<SessionError> for FfiError {
    fn from(error: SessionError) -> Self {
        let status = match error.kind {
            SessionErrorKind::Io => AGENT_ERR_IO,
            SessionErrorKind::Locked => AGENT_ERR_LOCKED,
            SessionErrorKind::NotASession => AGENT_ERR_NOT_A_SESSION,
            SessionErrorKind::Refused => AGENT_ERR_INVALID_ARGUMENT,
        };
        FfiError {
            status,
            message: error.message,
        }
    }
}

/// The options every constructor takes: `{"cwd"?: string, "durability"?: "flush"|"fsync"}`.
struct SessionOptions {
    cwd: String,
    durability: Durability,
}

fn options_arg(ptr: *const c_char, len: usize) -> FfiResult<SessionOptions> {
    let value = opt_json_arg(ptr, len, "options_json")?.unwrap_or(Json::Null);
    let invalid = |message: &str| FfiError {
        status: AGENT_ERR_INVALID_JSON,
        message: message.to_string(),
    };
    if !(value.is_null() || value.is_object()) {
        return Err(invalid(
            "options_json must be an object: {\"cwd\"?: string, \"durability\"?: \"flush\"|\"fsync\"}.",
        ));
    }
    let cwd = match value.field("cwd") {
        None | Some(Json::Null) => std::env::current_dir()
            .map(|dir| dir.to_string_lossy().into_owned())
            .map_err(|e| FfiError {
                status: AGENT_ERR_IO,
                message: format!(
                    "The process's working directory cannot be read ({e}); pass \"cwd\" in options_json."
                ),
            })?,
        Some(Json::String(cwd)) => cwd.clone(),
        Some(_) => return Err(invalid("options_json's \"cwd\" must be a string.")),
    };
    let durability = match value.field("durability") {
        None | Some(Json::Null) => Durability::Flush,
        Some(Json::String(text)) if text == "flush" => Durability::Flush,
        Some(Json::String(text)) if text == "fsync" => Durability::Fsync,
        Some(_) => {
            return Err(invalid(
                "options_json's \"durability\" must be \"flush\" or \"fsync\".",
            ))
        }
    };
    Ok(SessionOptions { cwd, durability })
}

fn store(session: Session, out_session: *mut AgentSession) {
    let id = SESSIONS.insert(Arc::new(Mutex::new(session)));
    write_out(out_session, AgentSession { id });
}

/// Opens the session file at `path` (pi's `SessionManager.open`): reads it, migrates a version
/// 1 or 2 file to version 3 (rewriting it), adds a missing final newline, and takes the file's
/// advisory lock until the session is freed. Lines that are not JSON are skipped, as pi skips
/// them (`agent_session_get` cannot list them; the Rust API's `skipped_lines` does). An empty file
/// gets a new header; a path where no file exists starts a new session that is written there
/// (its directory created) once it holds a user or assistant message. The leaf is the file's last
/// entry.
///
/// `options_json`: NULL or `{"cwd"?: string (for new headers; default: the process's working
/// directory), "durability"?: "flush" (default: each entry is written to the OS as it is
/// appended) | "fsync" (each entry is also synced to the disk)}`.
///
/// Fails with `AGENT_ERR_NOT_A_SESSION` (the file is left untouched), `AGENT_ERR_LOCKED` (another
/// session has the file open) or `AGENT_ERR_IO` (naming the path and the OS error). Writes
/// `*out_session` on success; free it with `agent_session_free`.
#[no_mangle]
pub unsafe extern "C" fn agent_session_open(
    path: *const c_char,
    path_len: usize,
    options_json: *const c_char,
    options_json_len: usize,
    out_session: *mut AgentSession,
) -> *mut AgentError {
    open_with(
        path,
        path_len,
        "path",
        options_json,
        options_json_len,
        out_session,
        Session::open,
    )
}

/// The body of the three file constructors: `path` decoded as `name`, the options, `open`, the
/// handle written.
unsafe fn open_with(
    path: *const c_char,
    path_len: usize,
    name: &str,
    options_json: *const c_char,
    options_json_len: usize,
    out_session: *mut AgentSession,
    open: fn(&Path, &str, Durability) -> Result<Session, SessionError>,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_session, "out_session")?;
        let path = str_arg(path, path_len, name)?;
        let options = options_arg(options_json, options_json_len)?;
        store(
            open(Path::new(path), &options.cwd, options.durability)?,
            out_session,
        );
        Ok(())
    })
}

/// Starts a new session whose file goes into the directory `dir` (created when missing), named
/// `<timestamp>_<session id>.jsonl` as pi names them (pi's `SessionManager.create`). Nothing is
/// written until the session holds a user or assistant message; then the header and every entry
/// so far are written at once, and each later entry is appended as one line. `options_json` as
/// for `agent_session_open`. Fails with `AGENT_ERR_IO` when `dir` cannot be created.
#[no_mangle]
pub unsafe extern "C" fn agent_session_create(
    dir: *const c_char,
    dir_len: usize,
    options_json: *const c_char,
    options_json_len: usize,
    out_session: *mut AgentSession,
) -> *mut AgentError {
    open_with(
        dir,
        dir_len,
        "dir",
        options_json,
        options_json_len,
        out_session,
        Session::create,
    )
}

/// Opens the most recently modified session file in `dir` whose header names the working
/// directory (`options_json`'s `cwd`), as `agent_session_open` does; when there is none, starts
/// a new session there as `agent_session_create` does (pi's `SessionManager.continueRecent`).
#[no_mangle]
pub unsafe extern "C" fn agent_session_continue_recent(
    dir: *const c_char,
    dir_len: usize,
    options_json: *const c_char,
    options_json_len: usize,
    out_session: *mut AgentSession,
) -> *mut AgentError {
    open_with(
        dir,
        dir_len,
        "dir",
        options_json,
        options_json_len,
        out_session,
        Session::continue_recent,
    )
}

/// A session kept in memory only (pi's `SessionManager.inMemory`). `options_json`: NULL or
/// `{"cwd"?: string}` (`durability` is accepted and has no effect).
#[no_mangle]
pub unsafe extern "C" fn agent_session_in_memory(
    options_json: *const c_char,
    options_json_len: usize,
    out_session: *mut AgentSession,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_session, "out_session")?;
        let options = options_arg(options_json, options_json_len)?;
        store(Session::in_memory(&options.cwd), out_session);
        Ok(())
    })
}

/// Writes to `*out_path` (free with `agent_string_free`) the directory pi keeps the sessions of
/// working directory `cwd` in, under `base`: `base/--<cwd, its leading separator removed and the
/// other separators and colons replaced by '-'>--`. Creates nothing.
#[no_mangle]
pub unsafe extern "C" fn agent_session_directory(
    base: *const c_char,
    base_len: usize,
    cwd: *const c_char,
    cwd_len: usize,
    out_path: *mut *mut c_char,
    out_path_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_path, "out_path")?;
        let base = str_arg(base, base_len, "base")?;
        let cwd = str_arg(cwd, cwd_len, "cwd")?;
        let dir = crate::session::session_directory(Path::new(base), cwd);
        write_owned_text(out_path, out_path_len, &dir.to_string_lossy());
        Ok(())
    })
}

/// Appends an entry as a child of the leaf and makes it the leaf. `entry_json` is the entry
/// without its `id`, `parentId` and `timestamp`, which are filled in: `{"type": "message",
/// "message": {...}}`, `{"type": "model_change", "provider", "modelId"}`, `{"type":
/// "thinking_level_change", "thinkingLevel"}`, `{"type": "label", "targetId", "label"?}`,
/// `{"type": "compaction", "summary", "firstKeptEntryId" (null: keep nothing), "tokensBefore",
/// ...}`, `{"type": "context_edit", "targetId", "replacement": null | {"content"}}`, `{"type":
/// "session_info", "name"}`, `{"type": "custom", "customType", "data"}`, `{"type":
/// "custom_message", ...}`, or any other type (kept as given). Writes the new id to `*out_id`
/// (free with `agent_string_free`) when `out_id` is not NULL.
///
/// Fails with `AGENT_ERR_INVALID_ARGUMENT` and changes nothing when pi would refuse the entry (a
/// label or context edit of an entry that does not exist, a context edit of an entry off the
/// current branch or without editable content, no string `type`), and with `AGENT_ERR_IO` when
/// the file cannot be written (nothing of the entry stays in the file or in memory).
#[no_mangle]
pub unsafe extern "C" fn agent_session_append(
    session: AgentSession,
    entry_json: *const c_char,
    entry_json_len: usize,
    out_id: *mut *mut c_char,
    out_id_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        let shared = session_arg(session)?;
        let entry = json_arg(entry_json, entry_json_len, "entry_json")?;
        let id = lock(&shared).append(entry)?;
        if !out_id.is_null() {
            write_owned_text(out_id, out_id_len, &id);
        }
        Ok(())
    })
}

/// Moves the leaf to the entry `entry_id`, so the next entry becomes its child (a new branch;
/// nothing is written). `entry_id` NULL resets the leaf: the next entry is a new root. Fails with
/// `AGENT_ERR_INVALID_ARGUMENT` when no entry has that id.
#[no_mangle]
pub unsafe extern "C" fn agent_session_branch(
    session: AgentSession,
    entry_id: *const c_char,
    entry_id_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let shared = session_arg(session)?;
        let target = if entry_id.is_null() {
            None
        } else {
            Some(str_arg(entry_id, entry_id_len, "entry_id")?)
        };
        lock(&shared).branch(target)?;
        Ok(())
    })
}

/// Moves the leaf to `entry_id` (NULL: a new root) and appends there a `branch_summary` entry
/// describing the branch left behind (its `fromId` is the previous leaf, `"root"` when there was
/// none). `summary_json`: `{"summary": string, "details"?, "fromHook"?, "usage"?}`. Writes the new
/// entry's id to `*out_id` (free with `agent_string_free`) when `out_id` is not NULL. Fails with
/// `AGENT_ERR_INVALID_ARGUMENT` when no entry has that id, `AGENT_ERR_IO` as for
/// `agent_session_append`.
#[no_mangle]
pub unsafe extern "C" fn agent_session_branch_with_summary(
    session: AgentSession,
    entry_id: *const c_char,
    entry_id_len: usize,
    summary_json: *const c_char,
    summary_json_len: usize,
    out_id: *mut *mut c_char,
    out_id_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        let shared = session_arg(session)?;
        let target = if entry_id.is_null() {
            None
        } else {
            Some(str_arg(entry_id, entry_id_len, "entry_id")?)
        };
        let summary = json_arg(summary_json, summary_json_len, "summary_json")?;
        let id = lock(&shared).branch_with_summary(target, summary)?;
        if !out_id.is_null() {
            write_owned_text(out_id, out_id_len, &id);
        }
        Ok(())
    })
}

/// Replaces the session by the path from the root to `entry_id` (pi's `createBranchedSession`):
/// label entries are dropped and the kept entries re-chained, then one label entry follows per
/// label still set on a kept entry. A file session continues in a new file in the same directory
/// (its header's `parentSession` names the old file, which is left as it was), written at once
/// when the path holds a user or assistant message. Fails with `AGENT_ERR_INVALID_ARGUMENT` when
/// no entry has that id.
#[no_mangle]
pub unsafe extern "C" fn agent_session_fork(
    session: AgentSession,
    entry_id: *const c_char,
    entry_id_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let shared = session_arg(session)?;
        let target = str_arg(entry_id, entry_id_len, "entry_id")?;
        lock(&shared).fork(target)?;
        Ok(())
    })
}

/// Writes one part of the session as JSON to `*out_json` (free with `agent_string_free`): one of
/// the `AGENT_SESSION_*` values. Fails with `AGENT_ERR_INVALID_ARGUMENT` for another value.
#[no_mangle]
pub unsafe extern "C" fn agent_session_get(
    session: AgentSession,
    part: AgentSessionPart,
    out_json: *mut *mut c_char,
    out_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let shared = session_arg(session)?;
        let value = {
            let session = lock(&shared);
            // The context's text is made from the entries' texts, without values in between.
            let text = match part {
                AGENT_SESSION_CONTEXT => Some(session.context_json(false)?),
                AGENT_SESSION_LLM => Some(session.context_json(true)?),
                _ => None,
            };
            if let Some(context) = text {
                drop(session);
                if context.without_nul {
                    write_owned_json_without_nul(out_json, out_json_len, context.text);
                } else {
                    write_owned_json(out_json, out_json_len, context.text);
                }
                return Ok(());
            }
            match part {
                AGENT_SESSION_HEADER => session.header().clone(),
                AGENT_SESSION_ENTRIES => Json::Array(session.entry_values()?),
                AGENT_SESSION_BRANCH => Json::Array(session.branch_values()?),
                AGENT_SESSION_LEAF_ID => session.leaf_id().map_or(Json::Null, Json::from),
                AGENT_SESSION_FILE => crate::json::object([
                    (
                        "path",
                        session
                            .file_path()
                            .map_or(Json::Null, |p| p.to_string_lossy().into_owned().into()),
                    ),
                    ("exists", session.file_exists().into()),
                ]),
                _ => {
                    return err(
                        AGENT_ERR_INVALID_ARGUMENT,
                        format!("part is {part}; pass one of the AGENT_SESSION_* values (0 to 6)."),
                    )
                }
            }
        };
        write_owned_text(out_json, out_json_len, &crate::json::to_string(&value));
        Ok(())
    })
}

/// Releases the session handle. The file's lock is released once nothing uses the session: an
/// agent the session was attached to keeps it open until the agent is freed.
#[no_mangle]
pub extern "C" fn agent_session_free(session: AgentSession) -> *mut AgentError {
    // The removed value is dropped outside the registry's lock (closing the file is I/O).
    boundary(|| match SESSIONS.remove(session.id) {
        Some(_) => Ok(()),
        None => session_arg(session).map(|_| ()),
    })
}

/// Builds the agent on `session`: it starts from the session's context (its messages, and its
/// thinking level when one was recorded; the host's model, recorded when it differs from the
/// session's) and appends, as it runs, every message it commits (before listeners see its
/// `message_end`), model change and thinking-level change. A failed append fails the run with
/// a message naming the file. The options take a reference: `agent_session_free` may be called
/// at once. A session serves one agent at a time: `agent_new` fails with
/// `AGENT_ERR_INVALID_STATE` while another agent uses it.
#[no_mangle]
pub extern "C" fn agent_options_set_session(
    options: AgentOptions,
    session: AgentSession,
) -> *mut AgentError {
    boundary(|| {
        let session = session_arg(session)?;
        with_options(options, |o| {
            o.session = Some(session);
            Ok(())
        })
    })
}

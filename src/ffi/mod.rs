//! The C ABI. No agent logic lives here: it converts, validates and forwards to the core.
//!
//! Conventions (see `include/libagent/agent.h`): every fallible function returns an
//! `AgentError*` (NULL on success) that the caller owns; texts come in as pointer + length;
//! handles are 64-bit values; out-parameters are written only on success; no panic crosses the
//! boundary.
//!
//! # Safety
//!
//! Every export that takes a pointer is `unsafe` for Rust callers, with one contract for all:
//! each pointer is NULL or valid for the call (a NUL-terminated string, a writable
//! out-parameter, a handle the library returned — handles are checked, stale ones are
//! reported). Callbacks must not unwind.
#![allow(clippy::missing_safety_doc)] // the contract above covers every export

pub mod agent;
pub mod call;
#[cfg(feature = "coding")]
pub mod coding;
pub mod context;
pub mod dispatch;
pub mod events;
mod handles;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod models;
pub mod options;
pub mod run;
pub mod session;
pub mod stream;
pub mod tool;
pub mod typed_push;

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::json::Json;

/// An error's code: a negative `AGENT_ERR_*` value (`AGENT_OK`, 0, stands for "no error").
pub type AgentErrorCode = i32;

/// No error (`agent_error_code(NULL)`).
pub const AGENT_OK: AgentErrorCode = 0;
/// A required pointer argument was NULL.
pub const AGENT_ERR_NULL: AgentErrorCode = -1;
/// A handle was null, freed, forged or of another kind.
pub const AGENT_ERR_INVALID_HANDLE: AgentErrorCode = -2;
/// A string argument was not valid UTF-8.
pub const AGENT_ERR_INVALID_UTF8: AgentErrorCode = -3;
/// A JSON argument was malformed or had the wrong shape.
pub const AGENT_ERR_INVALID_JSON: AgentErrorCode = -4;
/// A run is active (prompt, continue and reset fail with the reference's text).
pub const AGENT_ERR_BUSY: AgentErrorCode = -5;
/// The agent's state does not allow the operation (e.g. nothing to continue from).
pub const AGENT_ERR_INVALID_STATE: AgentErrorCode = -6;
/// The call was already answered.
pub const AGENT_ERR_ALREADY_COMPLETED: AgentErrorCode = -7;
/// The stream is no longer consumed (terminal event seen, run over, agent freed).
pub const AGENT_ERR_STREAM_CLOSED: AgentErrorCode = -8;
/// A blocking wait was called where it could never finish (inside a callback of the agent it
/// waits for: on the runtime thread, or inside a dispatch).
pub const AGENT_ERR_WOULD_DEADLOCK: AgentErrorCode = -9;
/// No stream function was given and no default is configured.
pub const AGENT_ERR_NO_STREAM_FN: AgentErrorCode = -13;
/// An argument had an invalid value (unknown hook kind, bad option, ...).
pub const AGENT_ERR_INVALID_ARGUMENT: AgentErrorCode = -15;
/// An internal error (a bug in libagent); the message says where.
pub const AGENT_ERR_INTERNAL: AgentErrorCode = -16;
/// A file-system error: the message names the path and the OS error.
pub const AGENT_ERR_IO: AgentErrorCode = -17;
/// The session file is open for writing elsewhere (another session, in this process or another,
/// holds its advisory lock).
pub const AGENT_ERR_LOCKED: AgentErrorCode = -18;
/// The file is not a session file (its first entry is not a session header, its version is
/// newer than 3, or it is larger than 512 MiB); it was left untouched.
pub const AGENT_ERR_NOT_A_SESSION: AgentErrorCode = -19;

/// The major version of this header (`agent_version()` reports the library's at run time).
pub const AGENT_VERSION_MAJOR: u32 = 1;
/// The minor version of this header.
pub const AGENT_VERSION_MINOR: u32 = 0;
/// The patch version of this header.
pub const AGENT_VERSION_PATCH: u32 = 0;

// cbindgen exports numeric literals only (the header builds `AGENT_VERSION_STRING` from these,
// see cbindgen.toml): this assertion ties them to Cargo.toml, so bumping the package version
// fails the build until they are updated and the header is regenerated (`make header`).
const fn parse_version_part(text: &str) -> u32 {
    let bytes = text.as_bytes();
    let mut value = 0;
    let mut i = 0;
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

const _: () = assert!(
    AGENT_VERSION_MAJOR == parse_version_part(env!("CARGO_PKG_VERSION_MAJOR"))
        && AGENT_VERSION_MINOR == parse_version_part(env!("CARGO_PKG_VERSION_MINOR"))
        && AGENT_VERSION_PATCH == parse_version_part(env!("CARGO_PKG_VERSION_PATCH"))
        && env!("CARGO_PKG_VERSION_PRE").is_empty(),
    "AGENT_VERSION_* in src/ffi/mod.rs must match the version in Cargo.toml"
);

/// Called with a `user_data` pointer when the library drops its last reference to it.
pub type AgentFinalizer = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// An error returned by a libagent function: its code and message, owned by the caller until
/// `agent_error_free`. No later call, on any thread, changes it.
pub struct AgentError {
    code: AgentErrorCode,
    message: CString,
}

/// An error crossing the boundary: a status code and a message.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub status: AgentErrorCode,
    pub message: String,
}

impl FfiError {
    /// The error object handed to the caller.
    fn into_raw(self) -> *mut AgentError {
        let message = CString::new(self.message.replace('\0', " ")).unwrap_or_default();
        Box::into_raw(Box::new(AgentError {
            code: self.status,
            message,
        }))
    }
}

pub(crate) type FfiResult<T = ()> = Result<T, FfiError>;

/// The one place where error kinds become status codes.
impl From<crate::error::Error> for FfiError {
    fn from(error: crate::error::Error) -> Self {
        use crate::error::ErrorKind;
        let status = match error.kind {
            ErrorKind::Busy => AGENT_ERR_BUSY,
            ErrorKind::InvalidState => AGENT_ERR_INVALID_STATE,
            ErrorKind::InvalidInput => AGENT_ERR_INVALID_JSON,
            ErrorKind::NoStreamFn => AGENT_ERR_NO_STREAM_FN,
            // Outcomes, not errors: the C API reports them as results (run outcomes, wait and
            // queue results), so reaching here is a libagent bug.
            ErrorKind::RunFailed
            | ErrorKind::ModelError
            | ErrorKind::Aborted
            | ErrorKind::Closed
            | ErrorKind::Timeout => AGENT_ERR_INTERNAL,
            ErrorKind::WouldDeadlock => AGENT_ERR_WOULD_DEADLOCK,
            ErrorKind::Io => AGENT_ERR_IO,
        };
        FfiError {
            status,
            message: error.message,
        }
    }
}

impl FfiError {
    /// The same error with its message naming the C function (for errors whose core text
    /// names a Rust method).
    pub(crate) fn named(mut self, kind: crate::error::ErrorKind, message: &str) -> Self {
        if self.status == FfiError::from(crate::error::Error::new(kind, "")).status {
            self.message = message.to_string();
        }
        self
    }
}

impl From<crate::stream::StreamClosed> for FfiError {
    fn from(closed: crate::stream::StreamClosed) -> Self {
        FfiError {
            status: AGENT_ERR_STREAM_CLOSED,
            message: closed.to_string(),
        }
    }
}

pub(crate) fn err<T>(status: AgentErrorCode, message: impl Into<String>) -> FfiResult<T> {
    Err(FfiError {
        status,
        message: message.into(),
    })
}

/// Runs an export body: catches panics and returns NULL on success, else the error object.
pub(crate) fn boundary(body: impl FnOnce() -> FfiResult) -> *mut AgentError {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(error)) => error.into_raw(),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            FfiError {
                status: AGENT_ERR_INTERNAL,
                message: format!("Internal error in libagent: {detail}"),
            }
            .into_raw()
        }
    }
}

/// Runs a host callback, containing any panic that unwinds out of it (foreign exceptions
/// cannot be caught; Rust panics from binding code can).
pub(crate) fn guard_callback(callback: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(callback));
}

/// `len` for a NUL-terminated text argument (the header defines it as `((size_t)-1)`).
pub const AGENT_NTS: usize = !0;

/// A borrowed text: `len` bytes of UTF-8 at `ptr` (NUL-terminated too where libagent made it).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AgentStr {
    pub ptr: *const c_char,
    pub len: usize,
}

impl AgentStr {
    pub(crate) const EMPTY: AgentStr = AgentStr {
        ptr: c"".as_ptr(),
        len: 0,
    };

    /// Borrows `text` (which must outlive every use of the result).
    pub(crate) fn of(text: &str) -> AgentStr {
        AgentStr {
            ptr: text.as_ptr() as *const c_char,
            len: text.len(),
        }
    }
}

/// Borrows a text argument (`len` bytes, or up to its NUL when `len` is `AGENT_NTS`) as UTF-8.
pub(crate) fn str_arg<'a>(ptr: *const c_char, len: usize, name: &str) -> FfiResult<&'a str> {
    let bytes: &[u8] = if len == AGENT_NTS {
        if ptr.is_null() {
            return err(AGENT_ERR_NULL, format!("{name} is NULL."));
        }
        // SAFETY: the caller passes a NUL-terminated string that lives for the call.
        unsafe { CStr::from_ptr(ptr) }.to_bytes()
    } else if len == 0 {
        &[]
    } else if ptr.is_null() {
        return err(AGENT_ERR_NULL, format!("{name} is NULL."));
    } else {
        // SAFETY: the caller passes `len` readable bytes that live for the call.
        unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
    };
    // Most text crossing the boundary is ASCII, which a word-at-a-time check proves valid UTF-8
    // several times faster than a full validation of a short string (a typed delta's 8 bytes:
    // ~15 instructions instead of ~65).
    if bytes.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).map_err(|e| FfiError {
        status: AGENT_ERR_INVALID_UTF8,
        message: format!("{name} is not valid UTF-8: {e}."),
    })
}

/// Parses a JSON string argument.
pub(crate) fn json_arg(ptr: *const c_char, len: usize, name: &str) -> FfiResult<Json> {
    let text = str_arg(ptr, len, name)?;
    crate::json::parse(text).map_err(|e| FfiError {
        status: AGENT_ERR_INVALID_JSON,
        message: format!("{name} is not valid JSON: {e}."),
    })
}

/// Like `json_arg`, with NULL (and length 0 or `AGENT_NTS`) meaning "absent".
pub(crate) fn opt_json_arg(ptr: *const c_char, len: usize, name: &str) -> FfiResult<Option<Json>> {
    if ptr.is_null() && (len == 0 || len == AGENT_NTS) {
        Ok(None)
    } else {
        json_arg(ptr, len, name).map(Some)
    }
}

/// Checks the loosest message shape the reference accepts: an object with a string `role`.
pub(crate) fn check_message(message: &Json, name: &str) -> FfiResult {
    crate::message::check_message(message, name).map_err(invalid_json)
}

/// Checks an array of messages.
pub(crate) fn messages_arg(value: Json, name: &str) -> FfiResult<Vec<Json>> {
    crate::message::messages_from(value, name).map_err(invalid_json)
}

fn invalid_json(message: String) -> FfiError {
    FfiError {
        status: AGENT_ERR_INVALID_JSON,
        message,
    }
}

/// Writes an out-parameter (callers checked it is not NULL).
pub(crate) fn write_out<T>(out: *mut T, value: T) {
    // SAFETY: the caller checked `out` is non-NULL; it points to writable storage.
    unsafe { out.write(value) }
}

pub(crate) fn check_out<T>(out: *mut T, name: &str) -> FfiResult {
    if out.is_null() {
        err(AGENT_ERR_NULL, format!("{name} is NULL."))
    } else {
        Ok(())
    }
}

/// Writes a returned string to `out` (checked non-NULL) and its length to `out_len` (may be
/// NULL).
pub(crate) fn write_owned_text(out: *mut *mut c_char, out_len: *mut usize, text: &str) {
    let owned = CString::new(text.replace('\0', "\u{FFFD}")).unwrap_or_default();
    if !out_len.is_null() {
        write_out(out_len, owned.as_bytes().len());
    }
    write_out(out, owned.into_raw());
}

/// `write_owned_text` for JSON text made for the host, handed over without a copy when its
/// buffer has room for the terminator (JSON text holds no NUL byte: a NUL in a string is
/// escaped).
pub(crate) fn write_owned_json(out: *mut *mut c_char, out_len: *mut usize, text: String) {
    // memchr's vectorized search, not CString::new's own (a context can be 100 MB).
    if memchr::memchr(0, text.as_bytes()).is_some() {
        return write_owned_text(out, out_len, &text);
    }
    write_owned_json_without_nul(out, out_len, text);
}

/// `write_owned_json` for text whose maker saw every byte, as it wrote it, not to be NUL (no
/// second pass over a large text).
pub(crate) fn write_owned_json_without_nul(
    out: *mut *mut c_char,
    out_len: *mut usize,
    text: String,
) {
    debug_assert!(memchr::memchr(0, text.as_bytes()).is_none());
    if !out_len.is_null() {
        write_out(out_len, text.len());
    }
    // SAFETY: `text` holds no NUL byte (its maker checked every byte).
    let owned = unsafe { CString::from_vec_unchecked(text.into_bytes()) };
    write_out(out, owned.into_raw());
}

/// Host data with its finalizer: the finalizer runs once, when the last reference drops. Host
/// data taken by a host-pumped agent is homed to the agent's dispatcher: its finalizer then runs
/// only inside that dispatcher's `agent_dispatch` (queued when the last reference drops
/// elsewhere).
pub(crate) struct HostData {
    pub user_data: *mut c_void,
    finalizer: AgentFinalizer,
    home: std::sync::OnceLock<crate::dispatch::WeakDispatcher>,
}

// SAFETY: the host promises (header docs) that user_data may be used from the runtime thread
// and that finalizers may run on any thread.
unsafe impl Send for HostData {}
unsafe impl Sync for HostData {}

/// A host pointer moved to the thread that runs its finalizer (see `HostData`'s safety note).
struct HostPointer(*mut c_void);
// SAFETY: as for `HostData`.
unsafe impl Send for HostPointer {}

impl HostData {
    pub fn new(user_data: *mut c_void, finalizer: AgentFinalizer) -> std::sync::Arc<HostData> {
        std::sync::Arc::new(HostData {
            user_data,
            finalizer,
            home: std::sync::OnceLock::new(),
        })
    }

    /// Confines the finalizer to `dispatcher` (the first host-pumped agent to take the data
    /// decides; later homes are ignored).
    pub fn home_to(&self, dispatcher: &crate::dispatch::WeakDispatcher) {
        let _ = self.home.set(dispatcher.clone());
    }
}

impl Drop for HostData {
    fn drop(&mut self) {
        let Some(finalizer) = self.finalizer else {
            return;
        };
        let user_data = HostPointer(self.user_data);
        let finalize = move || {
            let user_data = user_data;
            // SAFETY: the host registered this finalizer for this user_data.
            guard_callback(|| unsafe { finalizer(user_data.0) });
        };
        match self.home.get() {
            Some(dispatcher) => dispatcher.run_confined(finalize),
            None => finalize(),
        }
    }
}

/// The error's code (an `AGENT_ERR_*` value; `AGENT_OK` for NULL).
///
/// # Safety
/// `error` must be NULL or an error returned by libagent that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn agent_error_code(error: *const AgentError) -> AgentErrorCode {
    // SAFETY: per the contract above.
    unsafe { error.as_ref() }.map_or(AGENT_OK, |e| e.code)
}

/// The error's message: UTF-8, NUL-terminated, owned by the error (valid until
/// `agent_error_free`); its length in bytes goes to `*out_len` when `out_len` is not NULL.
/// NULL gives "".
///
/// # Safety
/// `error` must be NULL or an error returned by libagent that was not freed yet; `out_len` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn agent_error_message(
    error: *const AgentError,
    out_len: *mut usize,
) -> *const c_char {
    // SAFETY: per the contract above.
    let text = unsafe { error.as_ref() }.map_or(c"", |e| e.message.as_c_str());
    if !out_len.is_null() {
        write_out(out_len, text.to_bytes().len());
    }
    text.as_ptr()
}

/// Frees an error. NULL is ignored.
///
/// # Safety
/// `error` must be NULL or an error returned by libagent that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn agent_error_free(error: *mut AgentError) {
    if !error.is_null() {
        // SAFETY: per the contract above, `error` came from `Box::into_raw`.
        guard_callback(|| drop(unsafe { Box::from_raw(error) }));
    }
}

/// Frees a string returned by libagent. NULL is ignored.
///
/// # Safety
/// `text` must be NULL or a string returned by libagent that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn agent_string_free(text: *mut c_char) {
    if !text.is_null() {
        guard_callback(|| {
            // SAFETY: per the contract above, `text` came from `CString::into_raw`.
            let text = unsafe { CString::from_raw(text) };
            let large = text.as_bytes().len() >= RELEASE_AFTER_BYTES;
            drop(text);
            if large {
                crate::release_freed_memory();
            }
        });
    }
}

/// A freed string at least this large (a session's context, say) is given back to the system
/// at once rather than kept by the allocator for later.
const RELEASE_AFTER_BYTES: usize = 16 << 20;

/// The library version, e.g. "1.0.0" (static; do not free).
#[no_mangle]
pub extern "C" fn agent_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// Checks that the loaded library serves a program built against header `major`.`minor`: fails
/// with `AGENT_ERR_INVALID_STATE`, naming both versions, when the library's major differs or its
/// minor is older (call it as `agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR)`).
#[no_mangle]
// `minor <= AGENT_VERSION_MINOR` is `minor == 0` while the minor is 0; it is the rule for 1.x.
#[allow(clippy::absurd_extreme_comparisons)]
pub extern "C" fn agent_version_check(major: u32, minor: u32) -> *mut AgentError {
    boundary(|| {
        if major == AGENT_VERSION_MAJOR && minor <= AGENT_VERSION_MINOR {
            return Ok(());
        }
        err(
            AGENT_ERR_INVALID_STATE,
            format!(
                "This program was built against libagent {major}.{minor}, but the loaded library is {}: install libagent {major}.x at version {major}.{minor} or newer.",
                env!("CARGO_PKG_VERSION")
            ),
        )
    })
}

/// Whether the calling thread is one of libagent's runtime threads, where callbacks run and
/// blocking waits fail with `AGENT_ERR_WOULD_DEADLOCK` (bindings use it to refuse a blocking
/// call up front).
#[no_mangle]
pub extern "C" fn agent_is_runtime_thread() -> bool {
    crate::runtime::is_runtime_thread()
}

/// Chooses the runtime before first use: `workers` <= 1 runs every agent on one runtime thread
/// (the default); N > 1 uses a multi-thread runtime with N workers.
/// Returns `AGENT_ERR_INVALID_STATE` once the runtime is running or was already configured.
#[no_mangle]
pub extern "C" fn agent_runtime_configure(workers: u32) -> *mut AgentError {
    boundary(|| {
        crate::runtime::configure(workers as usize).map_err(|m| FfiError {
            status: AGENT_ERR_INVALID_STATE,
            message: m,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: &[u8]) -> Result<&str, u32> {
        str_arg(bytes.as_ptr() as *const c_char, bytes.len(), "text").map_err(|e| e.status as u32)
    }

    /// The ASCII shortcut and the full check agree: ASCII and multi-byte text pass as they are,
    /// and a non-ASCII byte anywhere (short strings, long ones, at either end) is still checked.
    #[test]
    fn text_arguments_are_utf8_checked_with_or_without_the_ascii_shortcut() {
        assert_eq!(check(b"d0000001"), Ok("d0000001"));
        assert_eq!(check("é€😀 and ascii".as_bytes()), Ok("é€😀 and ascii"));
        let long = "x".repeat(100);
        for at in [0, 1, 7, 8, 15, 16, 50, 99] {
            for bad in [0xffu8, 0x80, 0xc3] {
                let mut bytes = long.clone().into_bytes();
                bytes[at] = bad;
                assert_eq!(
                    check(&bytes),
                    Err(AGENT_ERR_INVALID_UTF8 as u32),
                    "{at} {bad}"
                );
                assert_eq!(
                    check(&bytes[..at + 1]),
                    Err(AGENT_ERR_INVALID_UTF8 as u32),
                    "{at} {bad}"
                );
            }
        }
        let mut valid = long.into_bytes();
        valid.splice(40..41, "é".bytes());
        assert!(check(&valid).is_ok());
    }
}

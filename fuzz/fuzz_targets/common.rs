//! Helpers shared by the targets that drive the real `extern "C"` functions.
#![allow(dead_code, unused_imports, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};

pub use ::agent::ffi::agent::*;
pub use ::agent::ffi::call::*;
pub use ::agent::ffi::events::*;
pub use ::agent::ffi::options::*;
pub use ::agent::ffi::run::*;
pub use ::agent::ffi::stream::*;
pub use ::agent::ffi::tool::*;
pub use ::agent::ffi::*;

/// An error's code (`AGENT_OK` for success): what the targets compare.
pub type AgentStatus = AgentErrorCode;

/// Every code the header documents, except AGENT_ERR_INTERNAL (a caught libagent bug).
pub const DOCUMENTED: std::ops::RangeInclusive<AgentStatus> = AGENT_ERR_INVALID_ARGUMENT..=AGENT_OK;

/// Hang guard for waits that must finish (not a timing assertion: a settled run returns at once).
pub const SETTLE_MS: i64 = 30_000;

/// The length argument of a NUL-terminated text.
pub const NTS: usize = AGENT_NTS;

/// A C string made from arbitrary bytes the way a C caller would pass them: up to the first NUL.
pub fn c(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap()
}

thread_local! {
    /// The message of the last error `st` saw on this thread (for failure reports).
    static LAST: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

pub fn last_error() -> String {
    LAST.with(|last| last.borrow().clone())
}

/// The code of an error returned by libagent (AGENT_OK for NULL), which is freed; an error must
/// carry a message, and its code is never AGENT_ERR_INTERNAL.
#[track_caller]
pub fn st(error: *mut AgentError) -> AgentStatus {
    if error.is_null() {
        return AGENT_OK;
    }
    // SAFETY: an error libagent returned, read and freed once.
    let (code, message) = unsafe {
        let mut len = 0;
        let text = agent_error_message(error, &mut len);
        let message = CStr::from_ptr(text).to_string_lossy().into_owned();
        assert_eq!(message.len(), len, "the message length is its length");
        let code = agent_error_code(error);
        agent_error_free(error);
        (code, message)
    };
    assert!(!message.is_empty(), "an error ({code}) without a message");
    assert_ne!(code, AGENT_OK, "an error with the code AGENT_OK: {message}");
    LAST.with(|last| *last.borrow_mut() = message);
    code
}

/// Asserts that `status` is one of `allowed` (and never AGENT_ERR_INTERNAL).
#[track_caller]
pub fn expect(status: AgentStatus, allowed: &[AgentStatus], what: &str) -> AgentStatus {
    if status == AGENT_ERR_INTERNAL || !allowed.contains(&status) {
        panic!(
            "{what} returned {status} (allowed {allowed:?}): {}",
            last_error()
        );
    }
    status
}

/// Accepts any documented status code.
#[track_caller]
pub fn documented(status: AgentStatus, what: &str) -> AgentStatus {
    if status == AGENT_ERR_INTERNAL || !DOCUMENTED.contains(&status) {
        panic!("{what} returned {status}: {}", last_error());
    }
    status
}

/// A JSON argument may be rejected as malformed or as non-UTF-8.
pub const JSON_ERRORS: [AgentStatus; 3] =
    [AGENT_OK, AGENT_ERR_INVALID_JSON, AGENT_ERR_INVALID_UTF8];

/// A `done` counter: user_data is a `*const AtomicU32`.
pub unsafe extern "C" fn count_done(
    user_data: *mut c_void,
    _run: AgentRun,
    outcome: *const AgentRunOutcome,
) {
    let outcome = &*outcome;
    assert!(!outcome.error_message.ptr.is_null());
    assert!(
        outcome.status != AGENT_RUN_RUNNING,
        "done got a running outcome"
    );
    (*(user_data as *const AtomicU32)).fetch_add(1, Ordering::SeqCst);
}

/// A listener that continues at once (after building the lean JSON).
pub unsafe extern "C" fn continue_listener(
    _: *mut c_void,
    event: *const AgentEvent,
) -> AgentListenerAnswer {
    assert!((AGENT_EVENT_AGENT_START..=AGENT_EVENT_AUTO_RETRY_END).contains(&(*event).kind));
    let mut text = AgentStr {
        ptr: std::ptr::null(),
        len: 0,
    };
    expect(
        st(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &mut text)),
        &[AGENT_OK],
        "agent_event_json lean",
    );
    AGENT_LISTENER_CONTINUE
}

pub unsafe fn new_options(json: &str) -> AgentOptions {
    let mut options = AgentOptions { id: 0 };
    expect(
        st(agent_options_new(
            json.as_ptr().cast(),
            json.len(),
            &mut options,
        )),
        &[AGENT_OK],
        "agent_options_new",
    );
    options
}

pub unsafe fn new_agent(options: AgentOptions) -> AgentHandle {
    let mut agent = AgentHandle { id: 0 };
    expect(st(agent_new(options, &mut agent)), &[AGENT_OK], "agent_new");
    agent
}

/// Waits up to `timeout_ms` for the agent to be idle; whether it is.
pub unsafe fn idle(agent: AgentHandle, timeout_ms: i64) -> bool {
    let mut result = -1;
    expect(
        st(agent_wait_for_idle(agent, timeout_ms, &mut result)),
        &[AGENT_OK],
        "agent_wait_for_idle",
    );
    result == AGENT_WAIT_DONE
}

/// Whether `done` must already have run when `agent_wait_for_idle`/`agent_free` return (what the
/// header promises). `FUZZ_STRICT_DONE=0` only asks for "exactly once, eventually": the known
/// issue-7 bug (done may run after those returned) otherwise stops every run at once.
pub fn strict_done() -> bool {
    static STRICT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STRICT.get_or_init(|| std::env::var("FUZZ_STRICT_DONE").map_or(true, |v| v != "0"))
}

/// Waits (bounded: a hang guard, not a timing assertion) until `cond` holds.
#[track_caller]
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{what} did not happen within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Waits for the run to settle (it must) and checks `done` ran exactly once.
#[track_caller]
pub unsafe fn settle(agent: AgentHandle, done: &AtomicU32) {
    assert!(
        idle(agent, SETTLE_MS),
        "agent_wait_for_idle: the run must settle"
    );
    if !strict_done() {
        wait_until("done", || done.load(Ordering::SeqCst) >= 1);
    }
    assert_eq!(
        done.load(Ordering::SeqCst),
        1,
        "done must have run exactly once when wait_for_idle returns"
    );
}

/// The agent's state JSON (checked to be JSON).
pub unsafe fn state(agent: AgentHandle) -> String {
    let mut out: *mut c_char = std::ptr::null_mut();
    expect(
        st(agent_get_state(agent, &mut out, std::ptr::null_mut())),
        &[AGENT_OK],
        "agent_get_state",
    );
    // SAFETY: a string returned by libagent, freed below.
    let text = unsafe { CStr::from_ptr(out) }
        .to_str()
        .expect("state is UTF-8")
        .to_owned();
    unsafe { agent_string_free(out) };
    assert!(::agent::json::parse(&text).is_ok(), "state is not JSON");
    text
}

pub unsafe fn free_agent(agent: AgentHandle) {
    expect(st(agent_free(agent)), &[AGENT_OK], "agent_free");
    expect(
        st(agent_free(agent)),
        &[AGENT_ERR_INVALID_HANDLE],
        "agent_free twice",
    );
}

pub const FINAL_MESSAGE: &str = r#"{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"faux","provider":"test","model":"m1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}"#;

/// A stream function that answers every request at once with FINAL_MESSAGE.
pub unsafe extern "C" fn final_stream(
    _: *mut c_void,
    request: *const c_char,
    request_len: usize,
    stream: AgentStream,
) {
    let request = std::slice::from_raw_parts(request.cast::<u8>(), request_len);
    assert!(::agent::json::parse(std::str::from_utf8(request).unwrap()).is_ok());
    expect(
        st(agent_stream_end(
            stream,
            FINAL_MESSAGE.as_ptr().cast(),
            FINAL_MESSAGE.len(),
        )),
        &[AGENT_OK],
        "stream complete",
    );
}

/// A script that calls tool `t` once, then answers with text.
pub const TOOL_SCRIPT: &str = r#"[{"content":[{"type":"toolCall","id":"c1","name":"t","arguments":{"a":1,"b":"x"}}]},{"content":[{"type":"text","text":"done","chunks":2}]}]"#;

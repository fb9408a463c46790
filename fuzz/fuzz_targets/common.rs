//! Helpers shared by the targets that drive the real `extern "C"` functions.
#![allow(dead_code, unused_imports, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};

pub use ::agent::ffi::agent::*;
pub use ::agent::ffi::call::*;
pub use ::agent::ffi::events::*;
pub use ::agent::ffi::options::*;
pub use ::agent::ffi::stream::*;
pub use ::agent::ffi::tool::*;
pub use ::agent::ffi::*;

/// Every status the header documents, except AGENT_ERR_INTERNAL (a caught libagent bug).
pub const DOCUMENTED: std::ops::RangeInclusive<AgentStatus> = AGENT_ERR_INVALID_ARGUMENT..=AGENT_OK;

/// Hang guard for waits that must finish (not a timing assertion: a settled run returns at once).
pub const SETTLE_MS: i64 = 30_000;

/// A C string made from arbitrary bytes the way a C caller would pass them: up to the first NUL.
pub fn c(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap()
}

pub fn last_error() -> String {
    // SAFETY: agent_last_error never returns NULL and the text lives until the next call.
    unsafe { CStr::from_ptr(agent_last_error()) }
        .to_string_lossy()
        .into_owned()
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
    if status != AGENT_OK {
        assert!(
            !last_error().is_empty(),
            "{what} failed ({status}) without a message"
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
    status: AgentStatus,
    error: *const c_char,
) {
    assert!(!error.is_null());
    assert!(
        [AGENT_OK, AGENT_ERR_RUN_FAILED, AGENT_ERR_FREED].contains(&status),
        "done got status {status}"
    );
    (*(user_data as *const AtomicU32)).fetch_add(1, Ordering::SeqCst);
}

/// A listener that continues at once.
pub unsafe extern "C" fn continue_listener(
    _: *mut c_void,
    event: *const CAgentEvent,
    call: *mut AgentCall,
) {
    let mut kind: *const c_char = std::ptr::null();
    expect(
        agent_event_type(event, &mut kind),
        &[AGENT_OK],
        "agent_event_type",
    );
    let mut text: *const c_char = std::ptr::null();
    expect(
        agent_event_json(event, 1, &mut text),
        &[AGENT_OK],
        "agent_event_json lean",
    );
    expect(
        agent_call_complete(call, std::ptr::null()),
        &[AGENT_OK],
        "listener answer",
    );
}

pub unsafe fn new_options(json: &str) -> *mut CAgentOptions {
    let mut options = std::ptr::null_mut();
    let text = CString::new(json).unwrap();
    expect(
        agent_options_new(text.as_ptr(), &mut options),
        &[AGENT_OK],
        "agent_options_new",
    );
    options
}

pub unsafe fn new_agent(options: *mut CAgentOptions) -> *mut AgentHandle {
    let mut agent = std::ptr::null_mut();
    expect(agent_new(options, &mut agent), &[AGENT_OK], "agent_new");
    agent
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
pub unsafe fn settle(agent: *mut AgentHandle, done: &AtomicU32) {
    expect(
        agent_wait_for_idle(agent, SETTLE_MS),
        &[AGENT_OK],
        "agent_wait_for_idle (the run must settle)",
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
pub unsafe fn state(agent: *mut AgentHandle) -> String {
    let mut out: *mut c_char = std::ptr::null_mut();
    expect(
        agent_get_state(agent, &mut out),
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

pub unsafe fn free_agent(agent: *mut AgentHandle) {
    expect(agent_free(agent), &[AGENT_OK], "agent_free");
    expect(
        agent_free(agent),
        &[AGENT_ERR_INVALID_HANDLE],
        "agent_free twice",
    );
}

pub const FINAL_MESSAGE: &str = r#"{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"faux","provider":"test","model":"m1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}"#;

/// A stream function that answers every request at once with FINAL_MESSAGE.
pub unsafe extern "C" fn final_stream(
    _: *mut c_void,
    request: *const c_char,
    stream: *mut AgentStream,
) {
    assert!(::agent::json::parse(CStr::from_ptr(request).to_str().unwrap()).is_ok());
    let message = CString::new(FINAL_MESSAGE).unwrap();
    expect(
        agent_call_complete(stream, message.as_ptr()),
        &[AGENT_OK],
        "stream complete",
    );
}

/// A script that calls tool `t` once, then answers with text.
pub const TOOL_SCRIPT: &str = r#"[{"content":[{"type":"toolCall","id":"c1","name":"t","arguments":{"a":1,"b":"x"}}]},{"content":[{"type":"text","text":"done","chunks":2}]}]"#;

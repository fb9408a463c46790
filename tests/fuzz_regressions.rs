//! Regressions found by the fuzz targets in fuzz/ (see RELIABILITY.md), replayed through the C ABI.

use std::ffi::c_char;
use std::ptr::{null, null_mut};
use std::sync::{Arc, Barrier};

use agent::ffi::agent::{agent_free, agent_new, AgentHandle};
use agent::ffi::events::{
    agent_queue_close, agent_queue_next, agent_queue_open, AgentEvent, AgentNext, AgentQueue,
    AGENT_NEXT_CLOSED, AGENT_NEXT_EVENT, AGENT_NEXT_TIMEOUT,
};
use agent::ffi::options::{agent_options_new, agent_options_set_scripted_model, AgentOptions};
use agent::ffi::{
    agent_error_code, agent_error_free, AgentError, AgentErrorCode, AGENT_ERR_INVALID_HANDLE,
    AGENT_OK,
};

/// The code of a returned error (AGENT_OK for none); the error is freed.
unsafe fn code(error: *mut AgentError) -> AgentErrorCode {
    let code = agent_error_code(error);
    agent_error_free(error);
    code
}

/// Text arguments as (pointer, length).
fn text(s: &str) -> (*const c_char, usize) {
    (s.as_ptr().cast(), s.len())
}

/// # Safety
/// Calls the C ABI with valid pointers only.
unsafe fn new_agent() -> AgentHandle {
    let mut options = AgentOptions { id: 0 };
    assert_eq!(code(agent_options_new(null(), 0, &mut options)), AGENT_OK);
    let (script, len) = text(r#"[{"content":[{"type":"text","text":"x"}]}]"#);
    assert_eq!(
        code(agent_options_set_scripted_model(options, script, len)),
        AGENT_OK
    );
    let mut agent = AgentHandle { id: 0 };
    assert_eq!(code(agent_new(options, &mut agent)), AGENT_OK);
    agent
}

/// fuzz/regressions/api_sequences/events-open-racing-free-never-closes: opening a queue racing
/// `agent_free` on another thread could register it after the free closed the agent's queues,
/// returning a queue that never closes (`agent_queue_next` then answered TIMEOUT forever instead
/// of CLOSED). Whatever the interleaving, a queue that was opened must be closed once the free
/// returned; otherwise the open must fail.
#[test]
fn queue_open_racing_free_yields_a_closed_queue_or_an_error() {
    // SAFETY: every pointer passed below is valid (or a handle token the library checks).
    unsafe { queue_open_racing_free() }
}

unsafe fn queue_open_racing_free() {
    // Big option texts widen the window between the handle lookup and the registration.
    let options = format!(r#"{{"capacity":4{}}}"#, r#","capacity":4"#.repeat(2000));
    for _ in 0..200 {
        let agent = new_agent();
        let start = Arc::new(Barrier::new(3));
        let openers: Vec<_> = (0..2)
            .map(|_| {
                let start = start.clone();
                let options = options.clone();
                std::thread::spawn(move || unsafe {
                    start.wait();
                    let mut opened = Vec::new();
                    loop {
                        let mut queue = AgentQueue { id: 0 };
                        let (ptr, len) = text(&options);
                        match code(agent_queue_open(agent, ptr, len, &mut queue)) {
                            AGENT_OK => opened.push(queue.id),
                            status => {
                                assert_eq!(status, AGENT_ERR_INVALID_HANDLE);
                                return opened;
                            }
                        }
                    }
                })
            })
            .collect();
        start.wait();
        std::thread::yield_now();
        assert_eq!(code(agent_free(agent)), AGENT_OK);
        for opener in openers {
            for id in opener.join().unwrap() {
                let queue = AgentQueue { id };
                let mut event = std::mem::MaybeUninit::<AgentEvent>::zeroed().assume_init();
                let mut next: AgentNext = -1;
                assert_eq!(
                    code(agent_queue_next(queue, 0, &mut event, &mut next)),
                    AGENT_OK
                );
                assert_ne!(
                    next, AGENT_NEXT_TIMEOUT,
                    "a queue of a freed agent never closes"
                );
                assert!(next == AGENT_NEXT_EVENT || next == AGENT_NEXT_CLOSED);
                assert_eq!(code(agent_queue_close(queue)), AGENT_OK);
            }
        }
    }
}

/// F3 (fuzz/regressions/api_sequences/prompt-racing-free-returns-invalid-state): `agent_prompt`
/// racing `agent_free` answered AGENT_ERR_INVALID_STATE ("The agent was freed.") instead of the
/// documented AGENT_ERR_INVALID_HANDLE. The race is forced: the prompt's input is large enough
/// that parsing it takes milliseconds after the handle was looked up, and the free starts once
/// the prompting thread has spent 2 ms of CPU time inside `agent_prompt` (the lookup takes
/// microseconds; CPU time, unlike the wall clock, does not advance while a loaded machine runs
/// something else). Rounds where the free provably returned while the prompt was still inside
/// `agent_prompt` are counted; at least one is required, so the racy branch was exercised.
#[test]
fn prompt_racing_free_answers_invalid_handle() {
    // SAFETY: every pointer passed below is valid (or a handle token the library checks).
    unsafe { prompt_racing_free() }
}

/// The CPU-time clock of the calling thread (readable from any thread of the process).
fn thread_cpu_clock() -> libc::clockid_t {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self is the calling thread; `clock` is a valid out pointer.
    assert_eq!(
        unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) },
        0
    );
    clock
}

/// The CPU time spent so far by the thread whose clock this is.
fn cpu_time(clock: libc::clockid_t) -> std::time::Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid out pointer; the clock belongs to a live thread of this process.
    assert_eq!(unsafe { libc::clock_gettime(clock, &mut now) }, 0);
    std::time::Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

unsafe fn prompt_racing_free() {
    use agent::ffi::agent::agent_prompt;
    use agent::ffi::run::{agent_run_free, AgentRun};
    use agent::ffi::AGENT_ERR_INVALID_STATE;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    // About 2 MB of messages: parsing them keeps the prompt busy well past the free.
    let message = r#"{"role":"user","content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}],"timestamp":1}"#;
    let input = format!("[{}]", vec![message; 20_000].join(","));
    let prompting = thread_cpu_clock();
    let mut freed_during_prompt = 0;
    for _ in 0..10 {
        let agent = new_agent();
        let entering = Arc::new(Barrier::new(2));
        let freed = Arc::new(AtomicBool::new(false));
        let start = cpu_time(prompting);
        let freer = {
            let (entering, freed) = (entering.clone(), freed.clone());
            std::thread::spawn(move || {
                entering.wait();
                // Handshake: the prompting thread is 2 ms of work into agent_prompt.
                while cpu_time(prompting) < start + Duration::from_millis(2) {
                    std::thread::yield_now();
                }
                assert_eq!(unsafe { code(agent_free(agent)) }, AGENT_OK);
                freed.store(true, SeqCst);
            })
        };
        entering.wait();
        let mut run = AgentRun { id: 0 };
        let (ptr, len) = text(&input);
        let status = code(agent_prompt(agent, ptr, len, None, null_mut(), &mut run));
        let free_returned_first = freed.load(SeqCst);
        freer.join().unwrap();
        assert_ne!(
            status, AGENT_ERR_INVALID_STATE,
            "a prompt racing agent_free must answer AGENT_ERR_INVALID_HANDLE"
        );
        if free_returned_first {
            assert_eq!(status, AGENT_ERR_INVALID_HANDLE);
            freed_during_prompt += 1;
        } else {
            // The prompt won: it started a run, which the free then cancelled.
            assert_eq!(status, AGENT_OK);
            assert_eq!(code(agent_run_free(run)), AGENT_OK);
        }
    }
    assert!(
        freed_during_prompt > 0,
        "the free never completed while agent_prompt was running: the race was not exercised"
    );
}

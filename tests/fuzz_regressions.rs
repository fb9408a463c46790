//! Regressions found by the fuzz targets in fuzz/ (see RELIABILITY.md), replayed through the C ABI.

use std::ffi::{c_char, CString};
use std::ptr::null_mut;
use std::sync::{Arc, Barrier};

use agent::ffi::agent::{agent_free, agent_new, AgentHandle};
use agent::ffi::events::{
    agent_events_close, agent_events_next, agent_events_open, AgentEventQueue,
};
use agent::ffi::options::{agent_options_new, agent_options_set_scripted_model};
use agent::ffi::{
    agent_string_free, AGENT_ERR_CLOSED, AGENT_ERR_INVALID_HANDLE, AGENT_ERR_TIMEOUT, AGENT_OK,
};

/// # Safety
/// Calls the C ABI with valid pointers only.
unsafe fn new_agent() -> *mut AgentHandle {
    let mut options = null_mut();
    assert_eq!(agent_options_new(std::ptr::null(), &mut options), AGENT_OK);
    let script = CString::new(r#"[{"content":[{"type":"text","text":"x"}]}]"#).unwrap();
    assert_eq!(
        agent_options_set_scripted_model(options, script.as_ptr()),
        AGENT_OK
    );
    let mut agent = null_mut();
    assert_eq!(agent_new(options, &mut agent), AGENT_OK);
    agent
}

/// fuzz/regressions/api_sequences/events-open-racing-free-never-closes: `agent_events_open`
/// racing `agent_free` on another thread could register its queue after the free closed the
/// agent's queues, returning a queue that never closes (`agent_events_next` then answered
/// AGENT_ERR_TIMEOUT forever instead of AGENT_ERR_CLOSED). Whatever the interleaving, a queue
/// that was opened must be closed once the free returned; otherwise the open must fail.
#[test]
fn events_open_racing_free_yields_a_closed_queue_or_an_error() {
    // SAFETY: every pointer passed below is valid (or a handle token the library checks).
    unsafe { events_open_racing_free() }
}

unsafe fn events_open_racing_free() {
    // Big option texts widen the window between the handle lookup and the registration.
    let options = CString::new(format!(
        r#"{{"capacity":4,"shape":"lean"{}}}"#,
        r#","capacity":4"#.repeat(2000)
    ))
    .unwrap();
    for _ in 0..200 {
        let agent = new_agent() as usize;
        let start = Arc::new(Barrier::new(3));
        let openers: Vec<_> = (0..2)
            .map(|_| {
                let start = start.clone();
                let options = options.clone();
                std::thread::spawn(move || unsafe {
                    start.wait();
                    let mut opened = Vec::new();
                    loop {
                        let mut queue: *mut AgentEventQueue = null_mut();
                        match agent_events_open(
                            agent as *mut AgentHandle,
                            options.as_ptr(),
                            &mut queue,
                        ) {
                            AGENT_OK => opened.push(queue as usize),
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
        assert_eq!(agent_free(agent as *mut AgentHandle), AGENT_OK);
        for opener in openers {
            for queue in opener.join().unwrap() {
                let queue = queue as *mut AgentEventQueue;
                let mut event: *mut c_char = null_mut();
                let next = agent_events_next(queue, 0, &mut event);
                assert_ne!(
                    next, AGENT_ERR_TIMEOUT,
                    "a queue of a freed agent never closes"
                );
                if next == AGENT_OK {
                    agent_string_free(event);
                } else {
                    assert_eq!(next, AGENT_ERR_CLOSED);
                }
                assert_eq!(agent_events_close(queue), AGENT_OK);
            }
        }
    }
}

/// F3 (fuzz/regressions/api_sequences/prompt-racing-free-returns-invalid-state): `agent_prompt`
/// racing `agent_free` answered AGENT_ERR_INVALID_STATE ("The agent was freed.") instead of the
/// documented AGENT_ERR_INVALID_HANDLE. The race is forced: the prompt's input is large enough
/// that parsing it takes milliseconds after the handle was looked up, and the free runs in that
/// window. Rounds where the free provably returned while the prompt was still inside
/// `agent_prompt` are counted; at least one is required, so the racy branch was exercised.
#[test]
fn prompt_racing_free_answers_invalid_handle() {
    // SAFETY: every pointer passed below is valid (or a handle token the library checks).
    unsafe { prompt_racing_free() }
}

unsafe fn prompt_racing_free() {
    use agent::ffi::agent::agent_prompt;
    use agent::ffi::AGENT_ERR_INVALID_STATE;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    // About 2 MB of messages: parsing them keeps the prompt busy well past the free.
    let message = r#"{"role":"user","content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}],"timestamp":1}"#;
    let input = CString::new(format!("[{}]", vec![message; 20_000].join(","))).unwrap();
    let mut freed_during_prompt = 0;
    for _ in 0..10 {
        let agent = new_agent() as usize;
        let entering = Arc::new(Barrier::new(2));
        let freed = Arc::new(AtomicBool::new(false));
        let freer = {
            let (entering, freed) = (entering.clone(), freed.clone());
            std::thread::spawn(move || {
                entering.wait();
                std::thread::sleep(Duration::from_millis(2));
                assert_eq!(agent_free(agent as *mut AgentHandle), AGENT_OK);
                freed.store(true, SeqCst);
            })
        };
        entering.wait();
        let status = agent_prompt(agent as *mut AgentHandle, input.as_ptr(), None, null_mut());
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
        }
    }
    assert!(
        freed_during_prompt > 0,
        "the free never completed while agent_prompt was running: the race was not exercised"
    );
}

//! Every JSON entry point of the C ABI, driven through the real `extern "C"` functions with
//! arbitrary bytes (invalid UTF-8 included; a NUL ends the string as it would for a C caller).
//!
//! Input: one selector byte, then the payload; for two-string entry points the payload is split
//! at the first 0xFF byte. Each case builds a fresh agent, feeds the payload to one entry point
//! and, when it was accepted, runs the agent so that the accepted value is used.
//! Invariants: no panic crosses the boundary (AGENT_ERR_INTERNAL is a finding); every status is
//! one the entry point documents; a failure has a message; an accepted input never makes a run
//! hang (every run settles, `done` exactly once); the state stays JSON.
#![no_main]

mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, Ordering};

use common::*;
use libfuzzer_sys::fuzz_target;

fn split(payload: &[u8]) -> (&[u8], Option<&[u8]>) {
    match payload.iter().position(|&b| b == 0xFF) {
        Some(at) => (&payload[..at], Some(&payload[at + 1..])),
        None => (payload, None),
    }
}

/// An agent answering every request with a final message.
unsafe fn host_agent() -> AgentHandle {
    let options =
        new_options(r#"{"initialState":{"model":{"id":"m1","api":"faux","provider":"test"}}}"#);
    expect(
        st(agent_options_set_stream_fn(
            options,
            Some(final_stream),
            null_mut(),
            None,
        )),
        &[AGENT_OK],
        "set_stream_fn",
    );
    new_agent(options)
}

/// An agent running TOOL_SCRIPT (calls tool `t`, then answers).
unsafe fn scripted_agent() -> AgentHandle {
    let options = new_options("{}");
    let script = CString::new(TOOL_SCRIPT).unwrap();
    expect(
        st(agent_options_set_scripted_model(
            options,
            script.as_ptr(),
            NTS,
        )),
        &[AGENT_OK],
        "scripted",
    );
    new_agent(options)
}

/// Prompts "go" and waits for the run to settle.
unsafe fn run(agent: AgentHandle) {
    let done = AtomicU32::new(0);
    let go = CString::new("\"go\"").unwrap();
    let status = st(agent_prompt(
        agent,
        go.as_ptr(),
        NTS,
        Some(count_done),
        &done as *const _ as *mut c_void,
        null_mut(),
    ));
    expect(status, &[AGENT_OK], "agent_prompt");
    settle(agent, &done);
}

/// Like `run`, for scripts that may stall (`delayMs`): a run that does not finish in a while
/// is aborted, and then it must settle.
unsafe fn run_aborting_stalls(agent: AgentHandle) {
    let done = AtomicU32::new(0);
    let go = CString::new("\"go\"").unwrap();
    expect(
        st(agent_prompt(
            agent,
            go.as_ptr(),
            NTS,
            Some(count_done),
            &done as *const _ as *mut c_void,
            null_mut(),
        )),
        &[AGENT_OK],
        "prompt",
    );
    if !idle(agent, 2_000) {
        expect(st(agent_abort(agent)), &[AGENT_OK], "agent_abort");
    }
    settle(agent, &done);
}

/// The payload answered by the callbacks of the answer cases.
struct Answer {
    json: CString,
    kind: u8,
}

unsafe extern "C" fn answer_hook(
    user_data: *mut c_void,
    input: *const c_char,
    input_len: usize,
    call: AgentHookCall,
) {
    let answer = &*(user_data as *const Answer);
    assert_eq!(CStr::from_ptr(input).to_bytes().len(), input_len);
    assert!(
        ::agent::json::parse(CStr::from_ptr(input).to_str().unwrap()).is_ok(),
        "hook input is not JSON"
    );
    let status = st(agent_hook_call_complete(call, answer.json.as_ptr(), NTS));
    if expect(status, &JSON_ERRORS, "hook answer") != AGENT_OK {
        expect(
            st(agent_hook_call_complete(call, std::ptr::null(), 0)),
            &[AGENT_OK],
            "hook answer NULL",
        );
    }
    expect(
        st(agent_hook_call_complete(call, std::ptr::null(), 0)),
        &[AGENT_ERR_ALREADY_COMPLETED],
        "second answer",
    );
}

unsafe extern "C" fn answer_tool(
    user_data: *mut c_void,
    id: *const c_char,
    _id_len: usize,
    args: *const c_char,
    _args_len: usize,
    call: AgentToolCall,
) {
    let answer = &*(user_data as *const Answer);
    assert!(!id.is_null());
    assert!(
        ::agent::json::parse(CStr::from_ptr(args).to_str().unwrap()).is_ok(),
        "tool args are not JSON"
    );
    documented(
        st(agent_tool_call_update(call, answer.json.as_ptr(), NTS)),
        "agent_tool_call_update",
    );
    if answer.kind & 1 == 1 {
        expect(
            st(agent_tool_call_fail(call, answer.json.as_ptr(), NTS)),
            &[AGENT_OK, AGENT_ERR_INVALID_UTF8],
            "tool fail",
        );
    }
    let status = st(agent_tool_call_complete(call, answer.json.as_ptr(), NTS));
    if expect(
        status,
        &[
            AGENT_OK,
            AGENT_ERR_INVALID_JSON,
            AGENT_ERR_INVALID_UTF8,
            AGENT_ERR_ALREADY_COMPLETED,
        ],
        "tool answer",
    ) != AGENT_OK
        && status != AGENT_ERR_ALREADY_COMPLETED
    {
        let fallback =
            CString::new(r#"{"content":[{"type":"text","text":"r"}],"details":{}}"#).unwrap();
        expect(
            st(agent_tool_call_complete(call, fallback.as_ptr(), NTS)),
            &[AGENT_OK],
            "tool fallback answer",
        );
    }
    expect(
        st(agent_tool_call_update(call, answer.json.as_ptr(), NTS)),
        &[
            AGENT_ERR_ALREADY_COMPLETED,
            AGENT_ERR_INVALID_JSON,
            AGENT_ERR_INVALID_UTF8,
        ],
        "update after answer",
    );
}

unsafe extern "C" fn answer_prepare(
    user_data: *mut c_void,
    args: *const c_char,
    _args_len: usize,
    call: AgentHookCall,
) {
    let answer = &*(user_data as *const Answer);
    assert!(!args.is_null());
    if expect(
        st(agent_hook_call_complete(call, answer.json.as_ptr(), NTS)),
        &JSON_ERRORS,
        "prepare answer",
    ) != AGENT_OK
    {
        expect(
            st(agent_hook_call_complete(call, std::ptr::null(), 0)),
            &[AGENT_OK],
            "prepare NULL",
        );
    }
}

unsafe extern "C" fn plain_tool(
    _: *mut c_void,
    _: *const c_char,
    _: usize,
    _: *const c_char,
    _: usize,
    call: AgentToolCall,
) {
    let result = CString::new(r#"{"content":[{"type":"text","text":"r"}],"details":{}}"#).unwrap();
    expect(
        st(agent_tool_call_complete(call, result.as_ptr(), NTS)),
        &[AGENT_OK],
        "tool answer",
    );
}

/// Pushes each event, then ends with the final answer (a message, or NULL when rejected).
struct Pushes {
    events: Vec<CString>,
    end: Option<CString>,
}

unsafe extern "C" fn push_stream(
    user_data: *mut c_void,
    _: *const c_char,
    _: usize,
    stream: AgentStream,
) {
    let pushes = &*(user_data as *const Pushes);
    let mut terminal_pushed = false;
    for event in &pushes.events {
        let status = st(agent_stream_push(stream, event.as_ptr(), NTS));
        expect(
            status,
            &[
                AGENT_OK,
                AGENT_ERR_INVALID_JSON,
                AGENT_ERR_INVALID_UTF8,
                AGENT_ERR_STREAM_CLOSED,
            ],
            "agent_stream_push",
        );
        terminal_pushed |= status == AGENT_OK && is_terminal(event);
    }
    // A terminal event pushed before ended the stream: a completion is then a second answer
    // (ALREADY_COMPLETED, as the header says) unless its own text is refused first; without
    // one, the completion is the stream's first answer and never ALREADY_COMPLETED.
    let (allowed, after_refusal): (&[AgentStatus], &[AgentStatus]) = if terminal_pushed {
        (
            &[
                AGENT_ERR_ALREADY_COMPLETED,
                AGENT_ERR_INVALID_JSON,
                AGENT_ERR_INVALID_UTF8,
            ],
            &[AGENT_ERR_ALREADY_COMPLETED],
        )
    } else {
        (
            &[
                AGENT_OK,
                AGENT_ERR_INVALID_JSON,
                AGENT_ERR_INVALID_UTF8,
                AGENT_ERR_STREAM_CLOSED,
            ],
            &[AGENT_OK, AGENT_ERR_STREAM_CLOSED],
        )
    };
    let end = pushes.end.as_ref().map_or(std::ptr::null(), |e| e.as_ptr());
    let status = st(agent_stream_end(stream, end, NTS));
    if expect(status, allowed, "stream complete") == AGENT_ERR_INVALID_JSON
        || status == AGENT_ERR_INVALID_UTF8
    {
        expect(
            st(agent_stream_end(stream, std::ptr::null(), 0)),
            after_refusal,
            "stream complete NULL",
        );
    }
}

/// Whether a pushed event (accepted by the library, so valid JSON) ends the stream.
fn is_terminal(event: &CStr) -> bool {
    let parsed = ::agent::json::parse(event.to_str().unwrap_or(""));
    let kind = parsed
        .as_ref()
        .ok()
        .and_then(|e| e.get("type")?.as_str().map(str::to_string));
    matches!(kind.as_deref(), Some("done" | "error"))
}

unsafe fn tool_t(definition: &str, answer: *const Answer) -> AgentTool {
    let mut tool = AgentTool { id: 0 };
    let text = CString::new(definition).unwrap();
    let execute = if answer.is_null() {
        plain_tool as _
    } else {
        answer_tool as _
    };
    expect(
        st(agent_tool_new(
            text.as_ptr(),
            NTS,
            Some(execute),
            answer as *mut c_void,
            None,
            &mut tool,
        )),
        &[AGENT_OK],
        "tool_new",
    );
    tool
}

unsafe fn set_tool(agent: AgentHandle, tool: AgentTool) {
    expect(
        st(agent_set_tools(agent, &tool, 1)),
        &[AGENT_OK],
        "agent_set_tools",
    );
    expect(st(agent_tool_free(tool)), &[AGENT_OK], "agent_tool_free");
}

const T_DEF: &str = r#"{"name":"t","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}}}}"#;

fuzz_target!(|data: &[u8]| unsafe {
    let Some((&selector, payload)) = data.split_first() else {
        return;
    };
    let text = c(payload);
    let p = text.as_ptr();
    match selector % 16 {
        0 => {
            let mut options = AgentOptions { id: 0 };
            let status = st(agent_options_new(p, NTS, &mut options));
            if expect(
                status,
                &[
                    AGENT_OK,
                    AGENT_ERR_INVALID_JSON,
                    AGENT_ERR_INVALID_UTF8,
                    AGENT_ERR_INVALID_ARGUMENT,
                ],
                "agent_options_new",
            ) == AGENT_OK
            {
                expect(
                    st(agent_options_set_stream_fn(
                        options,
                        Some(final_stream),
                        null_mut(),
                        None,
                    )),
                    &[AGENT_OK],
                    "set_stream_fn",
                );
                let agent = new_agent(options);
                state(agent);
                run(agent);
                state(agent);
                free_agent(agent);
            }
        }
        1 => {
            let agent = host_agent();
            let done = AtomicU32::new(0);
            let status = st(agent_prompt(
                agent,
                p,
                NTS,
                Some(count_done),
                &done as *const _ as *mut c_void,
                null_mut(),
            ));
            if expect(status, &JSON_ERRORS, "agent_prompt") == AGENT_OK {
                settle(agent, &done);
            } else {
                assert!(idle(agent, 0), "a refused prompt starts no run");
                assert_eq!(
                    done.load(Ordering::SeqCst),
                    0,
                    "a refused prompt must not call done"
                );
            }
            state(agent);
            free_agent(agent);
        }
        2 => {
            let (first, second) = split(payload);
            let (prompt, images) = (c(first), second.map(c));
            let agent = host_agent();
            let done = AtomicU32::new(0);
            let images_ptr = images.as_ref().map_or(std::ptr::null(), |i| i.as_ptr());
            let status = st(agent_prompt_text(
                agent,
                prompt.as_ptr(),
                NTS,
                images_ptr,
                if images.is_some() { NTS } else { 0 },
                Some(count_done),
                &done as *const _ as *mut c_void,
                null_mut(),
            ));
            if expect(status, &JSON_ERRORS, "agent_prompt_text") == AGENT_OK {
                settle(agent, &done);
            }
            state(agent);
            free_agent(agent);
        }
        3 | 4 => {
            let agent = host_agent();
            let status = if selector % 16 == 3 {
                st(agent_steer(agent, p, NTS))
            } else {
                st(agent_follow_up(agent, p, NTS))
            };
            expect(status, &JSON_ERRORS, "agent_steer/follow_up");
            let mut queued: *mut c_char = null_mut();
            expect(
                st(agent_peek_queued_messages(agent, &mut queued, null_mut())),
                &[AGENT_OK],
                "peek",
            );
            agent_string_free(queued);
            run(agent);
            state(agent);
            expect(st(agent_clear_all_queues(agent)), &[AGENT_OK], "clear");
            free_agent(agent);
        }
        5 => {
            let agent = host_agent();
            if expect(
                st(agent_set_messages(agent, p, NTS)),
                &JSON_ERRORS,
                "agent_set_messages",
            ) == AGENT_OK
            {
                state(agent);
                let done = AtomicU32::new(0);
                let status = st(agent_continue(
                    agent,
                    Some(count_done),
                    &done as *const _ as *mut c_void,
                    null_mut(),
                ));
                if expect(
                    status,
                    &[AGENT_OK, AGENT_ERR_INVALID_STATE],
                    "agent_continue",
                ) == AGENT_OK
                {
                    settle(agent, &done);
                }
            }
            run(agent);
            state(agent);
            free_agent(agent);
        }
        6 => {
            let agent = host_agent();
            let status = st(agent_configure(agent, p, NTS));
            expect(
                status,
                &[
                    AGENT_OK,
                    AGENT_ERR_INVALID_JSON,
                    AGENT_ERR_INVALID_UTF8,
                    AGENT_ERR_INVALID_ARGUMENT,
                ],
                "agent_configure",
            );
            state(agent);
            run(agent);
            free_agent(agent);
        }
        7 => {
            let mut tool = AgentTool { id: 0 };
            let status = st(agent_tool_new(
                p,
                NTS,
                Some(plain_tool),
                null_mut(),
                None,
                &mut tool,
            ));
            if expect(
                status,
                &[
                    AGENT_OK,
                    AGENT_ERR_INVALID_JSON,
                    AGENT_ERR_INVALID_UTF8,
                    AGENT_ERR_INVALID_ARGUMENT,
                ],
                "agent_tool_new",
            ) == AGENT_OK
            {
                let agent = scripted_agent();
                set_tool(agent, tool);
                state(agent);
                run(agent);
                state(agent);
                free_agent(agent);
            }
        }
        8 | 9 => {
            let agent = if selector % 16 == 8 {
                let agent = host_agent();
                let status = st(agent_set_scripted_model(agent, p, NTS));
                if expect(
                    status,
                    &[
                        AGENT_OK,
                        AGENT_ERR_INVALID_JSON,
                        AGENT_ERR_INVALID_UTF8,
                        AGENT_ERR_INVALID_ARGUMENT,
                    ],
                    "agent_set_scripted_model",
                ) != AGENT_OK
                {
                    free_agent(agent);
                    return;
                }
                agent
            } else {
                let options = new_options("{}");
                let status = st(agent_options_set_scripted_model(options, p, NTS));
                if expect(
                    status,
                    &[
                        AGENT_OK,
                        AGENT_ERR_INVALID_JSON,
                        AGENT_ERR_INVALID_UTF8,
                        AGENT_ERR_INVALID_ARGUMENT,
                    ],
                    "agent_options_set_scripted_model",
                ) != AGENT_OK
                {
                    expect(st(agent_options_free(options)), &[AGENT_OK], "options_free");
                    return;
                }
                new_agent(options)
            };
            set_tool(agent, tool_t(T_DEF, std::ptr::null()));
            run_aborting_stalls(agent);
            state(agent);
            free_agent(agent);
        }
        10 => {
            let agent = host_agent();
            let mut queue = AgentQueue { id: 0 };
            let status = st(agent_queue_open(agent, p, NTS, &mut queue));
            if expect(
                status,
                &[
                    AGENT_OK,
                    AGENT_ERR_INVALID_JSON,
                    AGENT_ERR_INVALID_UTF8,
                    AGENT_ERR_INVALID_ARGUMENT,
                ],
                "agent_queue_open",
            ) == AGENT_OK
            {
                let done = AtomicU32::new(0);
                let go = CString::new("\"go\"").unwrap();
                expect(
                    st(agent_prompt(
                        agent,
                        go.as_ptr(),
                        NTS,
                        Some(count_done),
                        &done as *const _ as *mut c_void,
                        null_mut(),
                    )),
                    &[AGENT_OK],
                    "prompt",
                );
                // Drain while the run goes (a small capacity makes the loop wait for us).
                let mut seen = 0;
                loop {
                    let mut event = std::mem::MaybeUninit::<AgentEvent>::zeroed().assume_init();
                    let mut next: AgentNext = -1;
                    expect(
                        st(agent_queue_next(queue, 50, &mut event, &mut next)),
                        &[AGENT_OK],
                        "agent_queue_next",
                    );
                    if next == AGENT_NEXT_EVENT {
                        let mut json = AgentStr {
                            ptr: std::ptr::null(),
                            len: 0,
                        };
                        expect(
                            st(agent_event_json(&event, AGENT_EVENT_SHAPE_FULL, &mut json)),
                            &[AGENT_OK],
                            "agent_event_json",
                        );
                        let text = CStr::from_ptr(json.ptr).to_str().unwrap();
                        assert_eq!(text.len(), json.len);
                        assert!(::agent::json::parse(text).is_ok());
                        seen += 1;
                        if event.kind == AGENT_EVENT_AGENT_END {
                            break;
                        }
                    } else {
                        assert_eq!(next, AGENT_NEXT_TIMEOUT);
                        if idle(agent, 0) {
                            break;
                        }
                    }
                    assert!(seen < 10_000);
                }
                settle(agent, &done);
                expect(
                    st(agent_queue_close(queue)),
                    &[AGENT_OK],
                    "agent_queue_close",
                );
                expect(
                    st(agent_queue_close(queue)),
                    &[AGENT_ERR_INVALID_HANDLE],
                    "close twice",
                );
            }
            free_agent(agent);
        }
        11 => {
            let mut pieces: Vec<&[u8]> = payload.split(|&b| b == 0xFF).collect();
            let end = if pieces.len() > 1 {
                pieces.pop().map(c)
            } else {
                None
            };
            let pushes = Pushes {
                events: pieces.into_iter().map(c).collect(),
                end,
            };
            let options = new_options("{}");
            expect(
                st(agent_options_set_stream_fn(
                    options,
                    Some(push_stream),
                    &pushes as *const _ as *mut c_void,
                    None,
                )),
                &[AGENT_OK],
                "set_stream_fn",
            );
            let agent = new_agent(options);
            set_tool(agent, tool_t(T_DEF, std::ptr::null()));
            run(agent);
            state(agent);
            free_agent(agent);
        }
        12 => {
            let Some((&kind, rest)) = payload.split_first() else {
                return;
            };
            let answer = Answer {
                json: c(rest),
                kind,
            };
            let agent = scripted_agent();
            set_tool(agent, tool_t(T_DEF, std::ptr::null()));
            let status = st(agent_set_hook(
                agent,
                (kind % 9) as i32,
                Some(answer_hook),
                &answer as *const _ as *mut c_void,
                None,
            ));
            expect(status, &[AGENT_OK], "agent_set_hook");
            run(agent);
            state(agent);
            free_agent(agent);
        }
        13 | 14 => {
            let Some((&kind, rest)) = payload.split_first() else {
                return;
            };
            let answer = Answer {
                json: c(rest),
                kind,
            };
            let agent = scripted_agent();
            if selector % 16 == 13 {
                set_tool(agent, tool_t(T_DEF, &answer));
            } else {
                let tool = tool_t(T_DEF, std::ptr::null());
                let status = st(agent_tool_set_prepare_arguments(
                    tool,
                    Some(answer_prepare),
                    &answer as *const _ as *mut c_void,
                    None,
                ));
                expect(status, &[AGENT_OK], "set_prepare_arguments");
                set_tool(agent, tool);
            }
            run(agent);
            state(agent);
            free_agent(agent);
        }
        _ => {
            let status = st(agent_set_default_scripted_model(p, NTS));
            let allowed = [
                AGENT_OK,
                AGENT_ERR_INVALID_JSON,
                AGENT_ERR_INVALID_UTF8,
                AGENT_ERR_INVALID_ARGUMENT,
            ];
            if expect(status, &allowed, "agent_set_default_scripted_model") == AGENT_OK {
                let agent = new_agent(AgentOptions { id: 0 });
                expect(
                    st(agent_set_default_stream_fn(None, null_mut(), None)),
                    &[AGENT_OK],
                    "clear default",
                );
                run_aborting_stalls(agent);
                free_agent(agent);
            }
        }
    }
});

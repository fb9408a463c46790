//! Random sequences of assistant stream events (SPEC §3.2) pushed into a host stream function
//! of a real agent (through `agent_stream_push` / `agent_stream_end` / `agent_stream_fail`),
//! inside the callback or from another thread, one response per request, with tools that
//! succeed or fail, a listener that renders every event in both shapes, and streams left open
//! (the host ends them when the run aborts, as SPEC §3.1 asks of a stream function; a stream
//! that ignores the signal legitimately keeps a run going, so that is not generated).
//!
//! Invariants: no panic or AGENT_ERR_INTERNAL; pushes return only documented statuses; the run
//! always settles (`agent_wait_for_idle` returns AGENT_OK, aborting stalled streams), `done` is
//! called exactly once with AGENT_OK or AGENT_ERR_RUN_FAILED; the state stays JSON; every event
//! a listener sees renders as JSON.
#![no_main]

mod common;

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

use ::agent::json::{json, to_string, Json};
use common::*;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Reason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Other(String),
}

impl Reason {
    fn json(&self) -> Json {
        match self {
            Reason::Stop => "stop".into(),
            Reason::Length => "length".into(),
            Reason::ToolUse => "toolUse".into(),
            Reason::Error => "error".into(),
            Reason::Aborted => "aborted".into(),
            Reason::Other(s) => s.as_str().into(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Name {
    T,
    Failing,
    Missing,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Ev {
    Start,
    TextStart(u8),
    TextDelta(u8, String),
    TextEnd(u8, Option<String>),
    ThinkingStart(u8),
    ThinkingDelta(u8, String),
    ThinkingEnd(u8, Option<String>),
    ToolStart(u8, Name, Option<String>),
    ToolDelta(u8, String),
    ToolEnd(u8, Option<String>),
    Done(Reason),
    Error(Reason, String),
    /// Any text (mostly not an event at all).
    Raw(String),
    /// The event with a `partial` message attached.
    WithPartial(Box<Ev>, String),
}

fn index(i: u8) -> Json {
    // Mostly small indexes; the top values probe out-of-range and odd numbers.
    match i {
        250 => json!(-1),
        251 => json!(1.5),
        252 => json!("0"),
        253 => json!(null),
        254 => json!(1e300),
        _ => json!(i % 8),
    }
}

impl Ev {
    fn render(&self) -> String {
        to_string(&self.json())
    }

    fn json(&self) -> Json {
        match self {
            Ev::Start => json!({"type": "start"}),
            Ev::TextStart(i) => json!({"type": "text_start", "contentIndex": index(*i)}),
            Ev::TextDelta(i, d) => {
                json!({"type": "text_delta", "contentIndex": index(*i), "delta": d})
            }
            Ev::TextEnd(i, c) => match c {
                Some(c) => json!({"type": "text_end", "contentIndex": index(*i), "content": c}),
                None => json!({"type": "text_end", "contentIndex": index(*i)}),
            },
            Ev::ThinkingStart(i) => json!({"type": "thinking_start", "contentIndex": index(*i)}),
            Ev::ThinkingDelta(i, d) => {
                json!({"type": "thinking_delta", "contentIndex": index(*i), "delta": d})
            }
            Ev::ThinkingEnd(i, s) => match s {
                Some(s) => {
                    json!({"type": "thinking_end", "contentIndex": index(*i), "contentSignature": s})
                }
                None => json!({"type": "thinking_end", "contentIndex": index(*i)}),
            },
            Ev::ToolStart(i, name, id) => {
                let name = match name {
                    Name::T => "t",
                    Name::Failing => "f",
                    Name::Missing => "missing",
                    Name::Other(s) => s.as_str(),
                };
                let mut event =
                    json!({"type": "toolcall_start", "contentIndex": index(*i), "toolName": name});
                if let Some(id) = id {
                    event["id"] = id.as_str().into();
                }
                event
            }
            Ev::ToolDelta(i, d) => {
                json!({"type": "toolcall_delta", "contentIndex": index(*i), "delta": d})
            }
            Ev::ToolEnd(i, args) => match args.as_deref().map(::agent::json::parse) {
                Some(Ok(args)) => {
                    json!({"type": "toolcall_end", "contentIndex": index(*i), "toolCall": {"type": "toolCall", "id": "x", "name": "t", "arguments": args}})
                }
                _ => json!({"type": "toolcall_end", "contentIndex": index(*i)}),
            },
            Ev::Done(reason) => json!({"type": "done", "reason": reason.json()}),
            Ev::Error(reason, message) => {
                json!({"type": "error", "reason": reason.json(), "errorMessage": message})
            }
            Ev::Raw(text) => ::agent::json::parse(text).unwrap_or_else(|_| json!(text)),
            Ev::WithPartial(inner, text) => {
                let mut event = inner.json();
                if let Some(map) = event.as_object_mut() {
                    map.insert(
                        "partial".into(),
                        json!({"role": "assistant", "content": [{"type": "text", "text": text}], "api": "faux",
                               "provider": "test", "model": "m1", "stopReason": "stop", "timestamp": 1}),
                    );
                }
                event
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
enum End {
    /// `agent_stream_end(stream, NULL)`.
    CompleteNull,
    /// `agent_stream_end(stream, <final message>)`.
    CompleteFinal,
    /// `agent_stream_end(stream, <any text>)`, falling back to NULL when refused.
    CompleteWith(String),
    Fail(String),
    /// Nothing: the stream stays open until the run aborts; the host then fails it.
    OnAbort,
}

#[derive(Arbitrary, Debug)]
struct Response {
    events: Vec<Ev>,
    end: End,
    /// Push from a separate thread instead of inside the callback.
    threaded: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    responses: Vec<Response>,
    /// Steering messages queued before the run.
    steer: u8,
}

struct Shared {
    responses: Mutex<VecDeque<Response>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    parked: AtomicUsize,
}

const PUSH_ALLOWED: [AgentStatus; 3] = [AGENT_OK, AGENT_ERR_INVALID_JSON, AGENT_ERR_STREAM_CLOSED];

unsafe fn play(response: Response, stream: usize, shared: &Shared) {
    let stream = AgentStream { id: stream as u64 };
    for event in response.events.iter().take(256) {
        let text = CString::new(event.render()).unwrap();
        expect(
            st(agent_stream_push(stream, text.as_ptr(), NTS)),
            &PUSH_ALLOWED,
            "agent_stream_push",
        );
    }
    let end_allowed = [
        AGENT_OK,
        AGENT_ERR_STREAM_CLOSED,
        AGENT_ERR_ALREADY_COMPLETED,
    ];
    match response.end {
        End::CompleteNull => {
            expect(
                st(agent_stream_end(stream, std::ptr::null(), 0)),
                &end_allowed,
                "complete NULL",
            );
        }
        End::CompleteFinal => {
            let message = CString::new(FINAL_MESSAGE).unwrap();
            expect(
                st(agent_stream_end(stream, message.as_ptr(), NTS)),
                &end_allowed,
                "complete final",
            );
        }
        End::CompleteWith(text) => {
            let text = c(text.as_bytes());
            let mut allowed = end_allowed.to_vec();
            allowed.push(AGENT_ERR_INVALID_JSON);
            if expect(
                st(agent_stream_end(stream, text.as_ptr(), NTS)),
                &allowed,
                "complete with",
            ) == AGENT_ERR_INVALID_JSON
            {
                expect(
                    st(agent_stream_end(stream, std::ptr::null(), 0)),
                    &end_allowed,
                    "complete NULL",
                );
            }
        }
        End::Fail(message) => {
            let message = c(message.as_bytes());
            expect(
                st(agent_stream_fail(stream, message.as_ptr(), NTS)),
                &end_allowed,
                "agent_stream_fail",
            );
        }
        End::OnAbort => {
            let status = st(agent_stream_on_abort(
                stream,
                Some(fail_on_abort),
                stream.id as usize as *mut c_void,
                None,
            ));
            // A stream the agent stopped consuming (a terminal event among the pushes, or the
            // run already ended) refuses the registration as closed.
            expect(
                status,
                &[
                    AGENT_OK,
                    AGENT_ERR_STREAM_CLOSED,
                    AGENT_ERR_ALREADY_COMPLETED,
                ],
                "agent_stream_on_abort",
            );
            shared.parked.fetch_add(1, Ordering::SeqCst);
        }
    }
}

unsafe extern "C" fn fail_on_abort(stream: *mut c_void) {
    let message = CString::new("aborted by the host").unwrap();
    let stream = AgentStream {
        id: stream as usize as u64,
    };
    let status = st(agent_stream_fail(stream, message.as_ptr(), NTS));
    expect(
        status,
        &[
            AGENT_OK,
            AGENT_ERR_STREAM_CLOSED,
            AGENT_ERR_ALREADY_COMPLETED,
        ],
        "fail on abort",
    );
}

unsafe extern "C" fn stream_fn(
    user_data: *mut c_void,
    request: *const c_char,
    _request_len: usize,
    stream: AgentStream,
) {
    let shared = &*(user_data as *const Shared);
    assert!(::agent::json::parse(CStr::from_ptr(request).to_str().unwrap()).is_ok());
    let next = shared.responses.lock().unwrap().pop_front();
    let Some(response) = next else {
        let message = CString::new(FINAL_MESSAGE).unwrap();
        expect(
            st(agent_stream_end(stream, message.as_ptr(), NTS)),
            &[AGENT_OK],
            "final answer",
        );
        return;
    };
    if response.threaded {
        let token = stream.id as usize;
        let shared_ptr = user_data as usize;
        let handle = std::thread::spawn(move || unsafe {
            play(response, token, &*(shared_ptr as *const Shared))
        });
        shared.threads.lock().unwrap().push(handle);
    } else {
        play(response, stream.id as usize, shared);
    }
}

unsafe extern "C" fn tool_fn(
    user_data: *mut c_void,
    _: *const c_char,
    _: usize,
    args: *const c_char,
    _: usize,
    call: AgentToolCall,
) {
    assert!(::agent::json::parse(CStr::from_ptr(args).to_str().unwrap()).is_ok());
    if user_data.is_null() {
        let result =
            CString::new(r#"{"content":[{"type":"text","text":"r"}],"details":{"n":1}}"#).unwrap();
        expect(
            st(agent_tool_call_complete(call, result.as_ptr(), NTS)),
            &[AGENT_OK],
            "tool answer",
        );
    } else {
        let message = CString::new("tool failed").unwrap();
        expect(
            st(agent_tool_call_fail(call, message.as_ptr(), NTS)),
            &[AGENT_OK],
            "tool fail",
        );
    }
}

unsafe extern "C" fn render_listener(
    _: *mut c_void,
    event: *const AgentEvent,
) -> AgentListenerAnswer {
    for shape in [AGENT_EVENT_SHAPE_FULL, AGENT_EVENT_SHAPE_LEAN] {
        let mut text = AgentStr {
            ptr: std::ptr::null(),
            len: 0,
        };
        expect(
            st(agent_event_json(event, shape, &mut text)),
            &[AGENT_OK],
            "agent_event_json",
        );
        assert!(
            ::agent::json::parse(CStr::from_ptr(text.ptr).to_str().unwrap()).is_ok(),
            "event JSON is not JSON"
        );
    }
    let event = &*event;
    if event.kind != AGENT_EVENT_MESSAGE_UPDATE {
        assert_eq!(event.update, AGENT_UPDATE_NONE);
    }
    if event.delta.len > 0 {
        let bytes = std::slice::from_raw_parts(event.delta.ptr as *const u8, event.delta.len);
        assert!(std::str::from_utf8(bytes).is_ok(), "delta is not UTF-8");
    }
    AGENT_LISTENER_CONTINUE
}

unsafe fn tool(name: &str, failing: bool) -> AgentTool {
    let definition = CString::new(format!(
        r#"{{"name":"{name}","parameters":{{"type":"object","properties":{{"a":{{"type":"number"}}}}}}}}"#
    ))
    .unwrap();
    let mut tool = AgentTool { id: 0 };
    let data = if failing {
        std::ptr::dangling_mut::<c_void>()
    } else {
        null_mut()
    };
    expect(
        st(agent_tool_new(
            definition.as_ptr(),
            NTS,
            Some(tool_fn),
            data,
            None,
            &mut tool,
        )),
        &[AGENT_OK],
        "tool_new",
    );
    tool
}

fuzz_target!(|input: Input| unsafe {
    let mut responses: VecDeque<Response> = input.responses.into_iter().take(6).collect();
    responses.iter_mut().for_each(|r| r.events.truncate(64));
    let shared = Shared {
        responses: Mutex::new(responses),
        threads: Mutex::new(Vec::new()),
        parked: AtomicUsize::new(0),
    };

    let options =
        new_options(r#"{"initialState":{"model":{"id":"m1","api":"faux","provider":"test"}}}"#);
    let status = st(agent_options_set_stream_fn(
        options,
        Some(stream_fn),
        &shared as *const _ as *mut c_void,
        None,
    ));
    expect(status, &[AGENT_OK], "set_stream_fn");
    let agent = new_agent(options);
    let tools = [tool("t", false), tool("f", true)];
    expect(
        st(agent_set_tools(agent, tools.as_ptr(), 2)),
        &[AGENT_OK],
        "set_tools",
    );
    tools.iter().for_each(|&t| {
        expect(st(agent_tool_free(t)), &[AGENT_OK], "tool_free");
    });
    let mut id = 0u64;
    expect(
        st(agent_subscribe(
            agent,
            Some(render_listener),
            null_mut(),
            None,
            &mut id,
        )),
        &[AGENT_OK],
        "subscribe",
    );
    for i in 0..input.steer % 3 {
        let message = CString::new(format!(
            r#"{{"role":"user","content":"steer {i}","timestamp":1}}"#
        ))
        .unwrap();
        expect(
            st(agent_steer(agent, message.as_ptr(), NTS)),
            &[AGENT_OK],
            "steer",
        );
    }

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
    // Streams the host left open are ended by aborting the run, as a host's cancel would.
    let mut rounds = 0;
    while !idle(agent, 20) {
        if shared.parked.load(Ordering::SeqCst) > 0 {
            expect(st(agent_abort(agent)), &[AGENT_OK], "agent_abort");
        }
        rounds += 1;
        assert!(rounds < 1500, "the run did not settle (30 s)");
    }
    settle(agent, &done);
    state(agent);
    for handle in shared.threads.lock().unwrap().drain(..) {
        handle.join().unwrap();
    }
    free_agent(agent);
});

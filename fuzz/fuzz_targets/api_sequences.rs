//! Random C-API call sequences on 2–4 threads over up to three agents: prompt, continue, steer,
//! follow-up, abort, wait_for_idle with small timeouts, reset, state reads, subscribe and
//! unsubscribe (listeners that continue, defer, fail, free or abort their agent), set_tools,
//! set_stream_fn / set_scripted_model, hooks, configure, event queues (open/next/close),
//! free, and answers of deferred calls given from other threads, each answered twice.
//!
//! Invariants (what the header promises; all checked against the real `extern "C"` functions):
//! - no panic and no AGENT_ERR_INTERNAL; every status is one the function documents;
//! - every `done` of an accepted prompt/continue is called exactly once, a refused one never;
//!   it has been called when `agent_free` returns and when `agent_wait_for_idle` returns
//!   AGENT_OK (checked when no prompt/continue raced with the wait);
//! - after `agent_free` returned the handle is dead (AGENT_ERR_INVALID_HANDLE) and at most the
//!   callback already in flight may still start (per worker thread);
//! - a second answer of a call returns AGENT_ERR_ALREADY_COMPLETED;
//! - every finalizer runs exactly once (a Box is freed by it: twice is a double free under ASan),
//!   also when it calls back into its agent (`FUZZ_REENTRANT_FINALIZERS=0` turns that off);
//! - everything settles: when the threads are done, freeing the agents and answering what is
//!   pending ends all activity (bounded waits; a hang is reported by libFuzzer's -timeout).
//!
//! `FUZZ_STRICT_DONE=0` relaxes the done-before-return checks to "exactly once, eventually".
//! `FUZZ_WORKERS=N` runs the library on a multi-thread runtime (`st(agent_runtime_configure(N))`).
#![no_main]

mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use common::*;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

const SLOTS: usize = 3;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum StreamKind {
    Scripted(u8),
    HostImmediate,
    HostToolCalls(u8),
    HostDeferred,
    HostThread,
    HostFail,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ListenerKind {
    Continue,
    Defer,
    Fail,
    FreeAgent,
    AbortAgent,
    SubscribeAnother,
    Steer,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum HookKindSel {
    Null,
    Defer,
    Fail,
    Remove,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum AnswerMode {
    Ok,
    Fail,
    Null,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    New(u8, StreamKind),
    Free(u8),
    Prompt(u8, u8),
    Continue(u8),
    Steer(u8),
    FollowUp(u8),
    Abort(u8),
    Wait(u8, u8),
    Reset(u8),
    GetState(u8),
    ClearQueues(u8),
    Subscribe(u8, ListenerKind),
    Unsubscribe(u8, u8),
    SetTools(u8, u8),
    SetStreamFn(u8, StreamKind),
    SetHook(u8, u8, HookKindSel),
    Configure(u8, u8),
    EventsOpen(u8, u8),
    EventsNext(u8, u8),
    EventsClose(u8),
    Answer(u8, AnswerMode),
    Yield,
}

#[derive(Arbitrary, Debug)]
struct Input {
    initial: [Option<StreamKind>; 2],
    threads: Vec<Vec<Op>>,
}

/// One agent's bookkeeping.
struct AgentRec {
    handle: usize,
    freed: AtomicBool,
    late_callbacks: AtomicU32,
    dones: Mutex<Vec<(Arc<AtomicU32>, u32)>>,
    starts_begun: AtomicU64,
    starts_ended: AtomicU64,
    subscriptions: Mutex<Vec<u64>>,
}

impl AgentRec {
    fn ptr(&self) -> AgentHandle {
        AgentHandle {
            id: self.handle as u64,
        }
    }
    /// A callback of this agent starts: count it if the agent was already freed.
    fn callback(&self) {
        if self.freed.load(SeqCst) {
            self.late_callbacks.fetch_add(1, SeqCst);
        }
    }
}

/// user_data of every callback registered with a finalizer.
struct Ctx {
    rec: Option<Arc<AgentRec>>,
    listener: ListenerKind,
    hook: HookKindSel,
    tool: u8,
    requests: AtomicU32,
}

impl Ctx {
    fn new(rec: Option<Arc<AgentRec>>) -> Ctx {
        Ctx {
            rec,
            listener: ListenerKind::Continue,
            hook: HookKindSel::Null,
            tool: 0,
            requests: AtomicU32::new(0),
        }
    }
}

#[derive(Clone, Copy)]
enum PendingKind {
    Hook,
    Reply,
    Tool,
    Stream,
}

struct World {
    slots: Mutex<[Option<Arc<AgentRec>>; SLOTS]>,
    all: Mutex<Vec<Arc<AgentRec>>>,
    pending: Mutex<Vec<(usize, PendingKind)>>,
    helpers: Mutex<Vec<JoinHandle<()>>>,
    queues: Mutex<Vec<usize>>,
    tools: Mutex<Vec<usize>>,
}

static WORLD: OnceLock<World> = OnceLock::new();
static REGISTERED: AtomicUsize = AtomicUsize::new(0);
static FINALIZED: AtomicUsize = AtomicUsize::new(0);
static WORKERS: OnceLock<usize> = OnceLock::new();
static REENTRANT: OnceLock<bool> = OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(|| World {
        slots: Mutex::new([None, None, None]),
        all: Mutex::new(Vec::new()),
        pending: Mutex::new(Vec::new()),
        helpers: Mutex::new(Vec::new()),
        queues: Mutex::new(Vec::new()),
        tools: Mutex::new(Vec::new()),
    })
}

fn slot(i: u8) -> Option<Arc<AgentRec>> {
    world().slots.lock().unwrap()[i as usize % SLOTS].clone()
}

fn cs(s: &str) -> CString {
    CString::new(s).unwrap()
}

// ---- finalizers and registration -----------------------------------------------------------

unsafe extern "C" fn finalize(user_data: *mut c_void) {
    let ctx = Box::from_raw(user_data as *mut Ctx);
    if *REENTRANT.get().unwrap() {
        if let Some(rec) = &ctx.rec {
            // A finalizer may call back into its agent (dead or alive).
            documented(st(agent_abort(rec.ptr())), "agent_abort in a finalizer");
            let mut has = false;
            documented(
                st(agent_has_queued_messages(rec.ptr(), &mut has)),
                "has_queued in a finalizer",
            );
        }
    }
    drop(ctx);
    FINALIZED.fetch_add(1, SeqCst);
}

/// Registers a Ctx through `register`; on success the library owns it (its finalizer frees it).
unsafe fn with_ctx(ctx: Ctx, register: impl FnOnce(*mut c_void) -> AgentStatus) -> AgentStatus {
    let raw = Box::into_raw(Box::new(ctx)) as *mut c_void;
    REGISTERED.fetch_add(1, SeqCst);
    let status = register(raw);
    if status != AGENT_OK {
        // Not taken: the finalizer will not run.
        REGISTERED.fetch_sub(1, SeqCst);
        drop(unsafe { Box::from_raw(raw as *mut Ctx) });
    }
    status
}

// ---- stream functions ----------------------------------------------------------------------

const SCRIPTS: [&str; 6] = [
    r#"[{"content":[{"type":"text","text":"hello there","chunks":3}]}]"#,
    r#"[{"content":[{"type":"toolCall","id":"a","name":"t_ok","arguments":{"n":1}},{"type":"toolCall","id":"b","name":"t_defer","arguments":{}}]},{"content":[{"type":"text","text":"done"}]}]"#,
    r#"[{"content":[{"type":"toolCall","id":"a","name":"t_thread","arguments":{}},{"type":"toolCall","id":"b","name":"t_fail","arguments":{}},{"type":"toolCall","id":"c","name":"t_update","arguments":{}}]},{"content":[{"type":"text","text":"ok"}]}]"#,
    r#"[{"content":[{"type":"text","text":"waiting"}],"waitForAbort":true}]"#,
    r#"[{"content":[{"type":"thinking","thinking":"hmm","chunks":2},{"type":"text","text":"x"}],"delayMs":1}]"#,
    r#"[{"content":[],"throw":"model exploded"}]"#,
];

const TEXT_EVENTS: [&str; 5] = [
    r#"{"type":"start"}"#,
    r#"{"type":"text_start","contentIndex":0}"#,
    r#"{"type":"text_delta","contentIndex":0,"delta":"hi"}"#,
    r#"{"type":"text_end","contentIndex":0}"#,
    r#"{"type":"done","reason":"stop"}"#,
];

fn tool_events(tool: u8) -> Vec<String> {
    let name = TOOL_NAMES[tool as usize % TOOL_NAMES.len()];
    vec![
        r#"{"type":"start"}"#.into(),
        format!(r#"{{"type":"toolcall_start","contentIndex":0,"id":"h1","toolName":"{name}"}}"#),
        r#"{"type":"toolcall_delta","contentIndex":0,"delta":"{\"n\":"}"#.into(),
        r#"{"type":"toolcall_delta","contentIndex":0,"delta":"2}"}"#.into(),
        r#"{"type":"toolcall_end","contentIndex":0}"#.into(),
        r#"{"type":"done","reason":"toolUse"}"#.into(),
    ]
}

const PUSH_OK: [AgentStatus; 2] = [AGENT_OK, AGENT_ERR_STREAM_CLOSED];

unsafe fn push_all(stream: AgentStream, events: &[String]) {
    for event in events {
        let text = cs(event);
        if expect(
            st(agent_stream_push(stream, text.as_ptr(), NTS)),
            &PUSH_OK,
            "agent_stream_push",
        ) != AGENT_OK
        {
            return;
        }
    }
}

fn text_events() -> Vec<String> {
    TEXT_EVENTS.iter().map(|s| s.to_string()).collect()
}

unsafe extern "C" fn host_stream(
    user_data: *mut c_void,
    request: *const c_char,
    _request_len: usize,
    stream: AgentStream,
) {
    let ctx = &*(user_data as *const Ctx);
    if let Some(rec) = &ctx.rec {
        rec.callback();
    }
    assert!(!request.is_null());
    let n = ctx.requests.fetch_add(1, SeqCst);
    match ctx.tool {
        // HostImmediate
        0 => push_all(stream, &text_events()),
        // HostToolCalls: a tool call every other request.
        t @ 1..=15 => {
            let events = if n.is_multiple_of(2) {
                tool_events(t)
            } else {
                text_events()
            };
            push_all(stream, &events)
        }
        // HostDeferred
        16 => world()
            .pending
            .lock()
            .unwrap()
            .push((stream.id as usize, PendingKind::Stream)),
        // HostThread
        17 => {
            let token = stream.id;
            let handle = std::thread::spawn(move || unsafe {
                push_all(AgentStream { id: token }, &text_events())
            });
            world().helpers.lock().unwrap().push(handle);
        }
        // HostFail
        _ => {
            let message = cs("provider down");
            expect(
                st(agent_stream_fail(stream, message.as_ptr(), NTS)),
                &[AGENT_OK, AGENT_ERR_ALREADY_COMPLETED],
                "fail",
            );
        }
    }
}

fn stream_code(kind: StreamKind) -> Option<u8> {
    match kind {
        StreamKind::Scripted(_) => None,
        StreamKind::HostImmediate => Some(0),
        StreamKind::HostToolCalls(t) => Some(1 + t % 15),
        StreamKind::HostDeferred => Some(16),
        StreamKind::HostThread => Some(17),
        StreamKind::HostFail => Some(18),
    }
}

// ---- tools, listeners, hooks ---------------------------------------------------------------

const TOOL_NAMES: [&str; 5] = ["t_ok", "t_fail", "t_defer", "t_thread", "t_update"];
const RESULT: &str = r#"{"content":[{"type":"text","text":"r"}],"details":{}}"#;

unsafe extern "C" fn tool_exec(
    user_data: *mut c_void,
    _: *const c_char,
    _: usize,
    args: *const c_char,
    _: usize,
    call: AgentToolCall,
) {
    let ctx = &*(user_data as *const Ctx);
    assert!(!args.is_null());
    let result = cs(RESULT);
    let answered = [AGENT_OK, AGENT_ERR_ALREADY_COMPLETED];
    match ctx.tool {
        0 => {
            expect(
                st(agent_tool_call_complete(call, result.as_ptr(), NTS)),
                &answered,
                "tool answer",
            );
        }
        1 => {
            let message = cs("tool failed");
            expect(
                st(agent_tool_call_fail(call, message.as_ptr(), NTS)),
                &answered,
                "tool fail",
            );
        }
        2 => world()
            .pending
            .lock()
            .unwrap()
            .push((call.id as usize, PendingKind::Tool)),
        3 => {
            let token = call.id;
            let handle = std::thread::spawn(move || unsafe {
                let result = cs(RESULT);
                expect(
                    st(agent_tool_call_complete(
                        AgentToolCall { id: token },
                        result.as_ptr(),
                        NTS,
                    )),
                    &answered,
                    "late tool answer",
                );
            });
            world().helpers.lock().unwrap().push(handle);
        }
        _ => {
            let update = cs(r#"{"content":[{"type":"text","text":"50%"}],"details":{}}"#);
            expect(
                st(agent_tool_call_update(call, update.as_ptr(), NTS)),
                &answered,
                "tool update",
            );
            expect(
                st(agent_tool_call_complete(call, result.as_ptr(), NTS)),
                &answered,
                "tool answer",
            );
            expect(
                st(agent_tool_call_update(call, update.as_ptr(), NTS)),
                &[AGENT_ERR_ALREADY_COMPLETED],
                "update after answer",
            );
        }
    }
}

unsafe extern "C" fn listener(
    user_data: *mut c_void,
    event: *const AgentEvent,
) -> AgentListenerAnswer {
    let ctx = &*(user_data as *const Ctx);
    let rec = ctx.rec.as_ref().unwrap();
    rec.callback();
    let kind = (*event).kind;
    assert!((AGENT_EVENT_AGENT_START..=AGENT_EVENT_AUTO_RETRY_END).contains(&kind));
    let mut json = AgentStr {
        ptr: std::ptr::null(),
        len: 0,
    };
    expect(
        st(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &mut json)),
        &[AGENT_OK],
        "agent_event_json",
    );
    match ctx.listener {
        ListenerKind::Continue => {}
        ListenerKind::Defer => {
            let mut reply = AgentReply { id: 0 };
            expect(
                st(agent_event_defer(event, &mut reply)),
                &[AGENT_OK],
                "agent_event_defer",
            );
            world()
                .pending
                .lock()
                .unwrap()
                .push((reply.id as usize, PendingKind::Reply));
            return AGENT_LISTENER_LATER;
        }
        ListenerKind::Fail => {
            if kind == AGENT_EVENT_MESSAGE_END {
                let mut reply = AgentReply { id: 0 };
                expect(
                    st(agent_event_defer(event, &mut reply)),
                    &[AGENT_OK],
                    "agent_event_defer",
                );
                let message = cs("listener failed");
                expect(
                    st(agent_reply_fail(reply, message.as_ptr(), NTS)),
                    &[AGENT_OK],
                    "listener fail",
                );
                return AGENT_LISTENER_LATER;
            }
        }
        ListenerKind::FreeAgent => {
            if kind == AGENT_EVENT_TURN_START {
                free_slot_of(rec);
            }
        }
        ListenerKind::AbortAgent => {
            documented(st(agent_abort(rec.ptr())), "abort inside a listener");
        }
        ListenerKind::SubscribeAnother => {
            if kind == AGENT_EVENT_AGENT_START {
                subscribe(rec, ListenerKind::Continue);
            }
        }
        ListenerKind::Steer => {
            let message = cs(r#"{"role":"user","content":"more","timestamp":1}"#);
            expect(
                st(agent_steer(rec.ptr(), message.as_ptr(), NTS)),
                &[AGENT_OK, AGENT_ERR_INVALID_HANDLE],
                "steer inside",
            );
        }
    }
    AGENT_LISTENER_CONTINUE
}

unsafe extern "C" fn hook(
    user_data: *mut c_void,
    input: *const c_char,
    _input_len: usize,
    call: AgentHookCall,
) {
    let ctx = &*(user_data as *const Ctx);
    if let Some(rec) = &ctx.rec {
        rec.callback();
    }
    assert!(!input.is_null());
    match ctx.hook {
        HookKindSel::Defer => world()
            .pending
            .lock()
            .unwrap()
            .push((call.id as usize, PendingKind::Hook)),
        HookKindSel::Fail => {
            let message = cs("hook failed");
            expect(
                st(agent_hook_call_fail(call, message.as_ptr(), NTS)),
                &[AGENT_OK],
                "hook fail",
            );
        }
        _ => {
            expect(
                st(agent_hook_call_complete(call, std::ptr::null(), 0)),
                &[AGENT_OK],
                "hook answer",
            );
        }
    }
}

unsafe fn subscribe(rec: &Arc<AgentRec>, kind: ListenerKind) {
    let mut ctx = Ctx::new(Some(rec.clone()));
    ctx.listener = kind;
    let mut id = 0u64;
    let status = with_ctx(ctx, |ud| {
        st(agent_subscribe(
            rec.ptr(),
            Some(listener),
            ud,
            Some(finalize),
            &mut id,
        ))
    });
    if expect(
        status,
        &[AGENT_OK, AGENT_ERR_INVALID_HANDLE],
        "agent_subscribe",
    ) == AGENT_OK
    {
        rec.subscriptions.lock().unwrap().push(id);
    }
}

// ---- agents ----------------------------------------------------------------------------------

unsafe fn install_stream(rec: &Arc<AgentRec>, options: Option<AgentOptions>, kind: StreamKind) {
    let status = match stream_code(kind) {
        None => {
            let script = cs(SCRIPTS[match kind {
                StreamKind::Scripted(i) => i as usize,
                _ => 0,
            } % SCRIPTS.len()]);
            match options {
                None => st(agent_set_scripted_model(rec.ptr(), script.as_ptr(), NTS)),
                Some(options) => st(agent_options_set_scripted_model(
                    options,
                    script.as_ptr(),
                    NTS,
                )),
            }
        }
        Some(code) => {
            let mut ctx = Ctx::new(Some(rec.clone()));
            ctx.tool = code;
            with_ctx(ctx, |ud| match options {
                None => st(agent_set_stream_fn(
                    rec.ptr(),
                    Some(host_stream),
                    ud,
                    Some(finalize),
                )),
                Some(options) => st(agent_options_set_stream_fn(
                    options,
                    Some(host_stream),
                    ud,
                    Some(finalize),
                )),
            })
        }
    };
    expect(
        status,
        &[AGENT_OK, AGENT_ERR_INVALID_HANDLE],
        "install stream",
    );
}

unsafe fn new_agent_in(index: usize, kind: StreamKind) {
    let mut slots = world().slots.lock().unwrap();
    if slots[index].is_some() {
        return;
    }
    let options = new_options(
        r#"{"initialState":{"model":{"id":"m1","api":"faux","provider":"test"}},"toolExecution":"parallel"}"#,
    );
    // The record needs the handle, which needs the options: build the stream after the agent
    // for host kinds (set_stream_fn), before it for scripts.
    let script = match kind {
        StreamKind::Scripted(i) => Some(cs(SCRIPTS[i as usize % SCRIPTS.len()])),
        _ => None,
    };
    if let Some(script) = &script {
        expect(
            st(agent_options_set_scripted_model(
                options,
                script.as_ptr(),
                NTS,
            )),
            &[AGENT_OK],
            "options scripted",
        );
    } else {
        expect(
            st(agent_options_set_scripted_model(
                options,
                cs(SCRIPTS[0]).as_ptr(),
                NTS,
            )),
            &[AGENT_OK],
            "options scripted",
        );
    }
    let handle = common::new_agent(options).id as usize;
    let rec = Arc::new(AgentRec {
        handle,
        freed: AtomicBool::new(false),
        late_callbacks: AtomicU32::new(0),
        dones: Mutex::new(Vec::new()),
        starts_begun: AtomicU64::new(0),
        starts_ended: AtomicU64::new(0),
        subscriptions: Mutex::new(Vec::new()),
    });
    if script.is_none() {
        install_stream(&rec, None, kind);
    }
    slots[index] = Some(rec.clone());
    drop(slots);
    world().all.lock().unwrap().push(rec);
}

/// Frees the agent of `rec` if it is still in its slot (whoever takes it from the slot frees it).
unsafe fn free_slot_of(rec: &Arc<AgentRec>) {
    let taken = {
        let mut slots = world().slots.lock().unwrap();
        slots
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|r| Arc::ptr_eq(r, rec)))
            .and_then(|s| s.take())
    };
    if let Some(rec) = taken {
        free_rec(&rec);
    }
}

unsafe fn free_rec(rec: &Arc<AgentRec>) {
    // Runs whose prompt returned before the free started must have had their `done` when it returns.
    let settled_before = rec.dones.lock().unwrap().len();
    expect(st(agent_free(rec.ptr())), &[AGENT_OK], "agent_free");
    rec.freed.store(true, SeqCst);
    if strict_done() {
        for (i, (count, expected)) in rec
            .dones
            .lock()
            .unwrap()
            .iter()
            .take(settled_before)
            .enumerate()
        {
            let n = count.load(SeqCst);
            assert_eq!(
                n, *expected,
                "run {i}: done called {n} times when agent_free returned (expected {expected})"
            );
        }
    }
    expect(
        st(agent_free(rec.ptr())),
        &[AGENT_ERR_INVALID_HANDLE],
        "agent_free twice",
    );
    let mut out: *mut c_char = null_mut();
    expect(
        st(agent_get_state(rec.ptr(), &mut out, null_mut())),
        &[AGENT_ERR_INVALID_HANDLE],
        "state after free",
    );
    let go = cs("\"go\"");
    expect(
        st(agent_prompt(
            rec.ptr(),
            go.as_ptr(),
            NTS,
            None,
            null_mut(),
            null_mut(),
        )),
        &[AGENT_ERR_INVALID_HANDLE],
        "prompt after free",
    );
}

unsafe extern "C" fn on_done(
    user_data: *mut c_void,
    _run: AgentRun,
    outcome: *const AgentRunOutcome,
) {
    let outcome = &*outcome;
    assert!(!outcome.error_message.ptr.is_null());
    assert!(
        outcome.status != AGENT_RUN_RUNNING,
        "done status {}",
        outcome.status
    );
    (*(user_data as *const AtomicU32)).fetch_add(1, SeqCst);
}

unsafe fn start_run(rec: &Arc<AgentRec>, how: u8) {
    let count = Arc::new(AtomicU32::new(0));
    let ud = Arc::into_raw(count.clone()) as *mut c_void;
    rec.starts_begun.fetch_add(1, SeqCst);
    let status = match how % 5 {
        0 => st(agent_prompt(rec.ptr(), cs("\"go\"").as_ptr(), NTS, Some(on_done), ud, null_mut())),
        1 => st(agent_prompt(rec.ptr(), cs(r#"{"role":"user","content":"hi","timestamp":1}"#).as_ptr(), NTS, Some(on_done), ud, null_mut())),
        2 => st(agent_prompt(rec.ptr(), cs(r#"[{"role":"user","content":[{"type":"text","text":"a"}],"timestamp":1},{"role":"user","content":"b","timestamp":2}]"#).as_ptr(), NTS, Some(on_done), ud, null_mut())),
        3 => st(agent_prompt_text(rec.ptr(), cs("look").as_ptr(), NTS, cs(r#"[{"type":"image","data":"AAAA","mimeType":"image/png"}]"#).as_ptr(), NTS, Some(on_done), ud, null_mut())),
        _ => st(agent_continue(rec.ptr(), Some(on_done), ud, null_mut())),
    };
    // A prompt racing agent_free answers AGENT_ERR_INVALID_HANDLE (F3, fixed); only continue
    // has an INVALID_STATE of its own (nothing to continue from).
    if how % 5 == 4 {
        let allowed = [
            AGENT_OK,
            AGENT_ERR_BUSY,
            AGENT_ERR_INVALID_HANDLE,
            AGENT_ERR_INVALID_STATE,
        ];
        expect(status, &allowed, "agent_continue");
    } else {
        let allowed = [AGENT_OK, AGENT_ERR_BUSY, AGENT_ERR_INVALID_HANDLE];
        expect(status, &allowed, "agent_prompt");
    }
    // The Arc handed to `done` is reclaimed at the end of the iteration.
    rec.dones
        .lock()
        .unwrap()
        .push((count, u32::from(status == AGENT_OK)));
    rec.starts_ended.fetch_add(1, SeqCst);
}

unsafe fn answer_pending(index: u8, mode: AnswerMode) {
    let item = {
        let mut pending = world().pending.lock().unwrap();
        if pending.is_empty() {
            return;
        }
        let at = index as usize % pending.len();
        pending.swap_remove(at)
    };
    answer(item, mode);
}

/// Answers a pending call of its kind: `mode` Ok / Null complete it, Fail fails it.
unsafe fn answer_with(
    token: u64,
    kind: PendingKind,
    fail: bool,
    result: Option<&CString>,
) -> AgentStatus {
    let message = cs("host failure");
    let (json, len) = result.map_or((std::ptr::null(), 0), |r| (r.as_ptr(), NTS));
    match (kind, fail) {
        (PendingKind::Hook, false) => st(agent_hook_call_complete(
            AgentHookCall { id: token },
            json,
            len,
        )),
        (PendingKind::Hook, true) => st(agent_hook_call_fail(
            AgentHookCall { id: token },
            message.as_ptr(),
            NTS,
        )),
        (PendingKind::Reply, false) => st(agent_reply_continue(AgentReply { id: token })),
        (PendingKind::Reply, true) => st(agent_reply_fail(
            AgentReply { id: token },
            message.as_ptr(),
            NTS,
        )),
        (PendingKind::Tool, false) => st(agent_tool_call_complete(
            AgentToolCall { id: token },
            json,
            len,
        )),
        (PendingKind::Tool, true) => st(agent_tool_call_fail(
            AgentToolCall { id: token },
            message.as_ptr(),
            NTS,
        )),
        (PendingKind::Stream, false) => st(agent_stream_end(AgentStream { id: token }, json, len)),
        (PendingKind::Stream, true) => st(agent_stream_fail(
            AgentStream { id: token },
            message.as_ptr(),
            NTS,
        )),
    }
}

unsafe fn answer((token, kind): (usize, PendingKind), mode: AnswerMode) {
    let token = token as u64;
    let first_allowed = [
        AGENT_OK,
        AGENT_ERR_ALREADY_COMPLETED,
        AGENT_ERR_STREAM_CLOSED,
    ];
    match (kind, mode) {
        (PendingKind::Stream, AnswerMode::Ok) => {
            push_all(AgentStream { id: token }, &text_events());
            // The done event ended the stream; ending it again is refused.
            expect(
                answer_with(token, kind, false, None),
                &first_allowed[1..],
                "end after done",
            );
        }
        (_, AnswerMode::Fail) => {
            expect(answer_with(token, kind, true, None), &first_allowed, "fail");
        }
        (PendingKind::Tool, _) => {
            let result = cs(RESULT);
            expect(
                answer_with(token, kind, false, Some(&result)),
                &first_allowed,
                "tool answer",
            );
        }
        _ => {
            expect(
                answer_with(token, kind, false, None),
                &first_allowed,
                "answer",
            );
        }
    }
    // Answering twice is refused.
    expect(
        answer_with(token, kind, false, None),
        &[AGENT_ERR_ALREADY_COMPLETED, AGENT_ERR_STREAM_CLOSED],
        "second answer",
    );
    expect(
        answer_with(token, kind, true, None),
        &[AGENT_ERR_ALREADY_COMPLETED, AGENT_ERR_STREAM_CLOSED],
        "second fail",
    );
}

const CONFIGS: [&str; 7] = [
    r#"{"toolExecution":"sequential"}"#,
    r#"{"toolExecution":"parallel","steeringMode":"all"}"#,
    r#"{"followUpMode":"one-at-a-time"}"#,
    r#"{"thinkingLevel":"high"}"#,
    r#"{"model":{"id":"m2","api":"faux","provider":"test"}}"#,
    r#"{"sessionId":"s1","transport":null}"#,
    r#"{"bogus":1}"#,
];

unsafe fn run_op(op: Op) {
    let handle_ok = [AGENT_OK, AGENT_ERR_INVALID_HANDLE];
    match op {
        Op::New(i, kind) => new_agent_in(i as usize % SLOTS, kind),
        Op::Free(i) => {
            let taken = world().slots.lock().unwrap()[i as usize % SLOTS].take();
            if let Some(rec) = taken {
                free_rec(&rec);
            }
        }
        Op::Yield => std::thread::yield_now(),
        Op::Answer(i, mode) => answer_pending(i, mode),
        Op::EventsNext(q, ms) => {
            let queue = {
                let queues = world().queues.lock().unwrap();
                if queues.is_empty() {
                    return;
                }
                queues[q as usize % queues.len()]
            };
            let queue = AgentQueue { id: queue as u64 };
            let mut event = std::mem::MaybeUninit::<AgentEvent>::zeroed().assume_init();
            let mut next: AgentNext = -1;
            let status = st(agent_queue_next(
                queue,
                (ms % 8) as i64,
                &mut event,
                &mut next,
            ));
            // Another thread may close the queue meanwhile: a freed queue.
            if expect(
                status,
                &[AGENT_OK, AGENT_ERR_INVALID_HANDLE],
                "agent_queue_next",
            ) == AGENT_OK
                && next == AGENT_NEXT_EVENT
            {
                let mut json = AgentStr {
                    ptr: std::ptr::null(),
                    len: 0,
                };
                let status = st(agent_event_json(&event, AGENT_EVENT_SHAPE_FULL, &mut json));
                // Another thread's next on the same queue replaces the event: no longer valid.
                if expect(
                    status,
                    &[AGENT_OK, AGENT_ERR_INVALID_ARGUMENT],
                    "agent_event_json",
                ) == AGENT_OK
                {
                    let text = unsafe { CStr::from_ptr(json.ptr) }.to_str().unwrap();
                    assert!(::agent::json::parse(text).is_ok());
                }
            }
        }
        Op::EventsClose(q) => {
            let queue = {
                let mut queues = world().queues.lock().unwrap();
                if queues.is_empty() {
                    return;
                }
                let at = q as usize % queues.len();
                queues.swap_remove(at)
            };
            let queue = AgentQueue { id: queue as u64 };
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
        op => {
            let i = match op {
                Op::Prompt(i, _)
                | Op::Continue(i)
                | Op::Steer(i)
                | Op::FollowUp(i)
                | Op::Abort(i)
                | Op::Wait(i, _) => i,
                Op::Reset(i)
                | Op::GetState(i)
                | Op::ClearQueues(i)
                | Op::Subscribe(i, _)
                | Op::Unsubscribe(i, _) => i,
                Op::SetTools(i, _)
                | Op::SetStreamFn(i, _)
                | Op::SetHook(i, _, _)
                | Op::Configure(i, _) => i,
                Op::EventsOpen(i, _) => i,
                _ => unreachable!(),
            };
            let Some(rec) = slot(i) else { return };
            let agent = rec.ptr();
            match op {
                Op::Prompt(_, how) => start_run(&rec, how % 4),
                Op::Continue(_) => start_run(&rec, 4),
                Op::Steer(_) | Op::FollowUp(_) => {
                    let message = cs(r#"{"role":"user","content":"queued","timestamp":1}"#);
                    let status = if matches!(op, Op::Steer(_)) {
                        st(agent_steer(agent, message.as_ptr(), NTS))
                    } else {
                        st(agent_follow_up(agent, message.as_ptr(), NTS))
                    };
                    expect(status, &handle_ok, "steer/follow_up");
                }
                Op::Abort(_) => {
                    expect(st(agent_abort(agent)), &handle_ok, "agent_abort");
                }
                Op::Wait(_, ms) => {
                    let (begun, ended, len) = (
                        rec.starts_begun.load(SeqCst),
                        rec.starts_ended.load(SeqCst),
                        rec.dones.lock().unwrap().len(),
                    );
                    let mut waited: AgentWaitResult = -1;
                    let status = st(agent_wait_for_idle(agent, (ms % 16) as i64, &mut waited));
                    expect(
                        status,
                        &[AGENT_OK, AGENT_ERR_INVALID_HANDLE],
                        "agent_wait_for_idle",
                    );
                    let quiet = begun == ended && rec.starts_begun.load(SeqCst) == begun;
                    if status == AGENT_OK && waited == AGENT_WAIT_DONE && quiet && strict_done() {
                        for (k, (count, expected)) in
                            rec.dones.lock().unwrap().iter().take(len).enumerate()
                        {
                            let n = count.load(SeqCst);
                            assert_eq!(n, *expected, "run {k}: done called {n} times when agent_wait_for_idle returned OK");
                        }
                    }
                }
                Op::Reset(_) => {
                    expect(
                        st(agent_reset(agent)),
                        &[AGENT_OK, AGENT_ERR_BUSY, AGENT_ERR_INVALID_HANDLE],
                        "agent_reset",
                    );
                }
                Op::GetState(_) => {
                    let mut out: *mut c_char = null_mut();
                    if expect(
                        st(agent_get_state(agent, &mut out, null_mut())),
                        &handle_ok,
                        "agent_get_state",
                    ) == AGENT_OK
                    {
                        let text = unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_owned();
                        unsafe { agent_string_free(out) };
                        assert!(::agent::json::parse(&text).is_ok(), "state is not JSON");
                    }
                    let mut has = false;
                    expect(
                        st(agent_has_queued_messages(agent, &mut has)),
                        &handle_ok,
                        "has_queued",
                    );
                }
                Op::ClearQueues(_) => {
                    expect(
                        st(agent_clear_steering_queue(agent)),
                        &handle_ok,
                        "clear steering",
                    );
                    expect(st(agent_clear_all_queues(agent)), &handle_ok, "clear all");
                }
                Op::Subscribe(_, kind) => subscribe(&rec, kind),
                Op::Unsubscribe(_, k) => {
                    let id = {
                        let mut ids = rec.subscriptions.lock().unwrap();
                        if ids.is_empty() {
                            return;
                        }
                        let at = k as usize % ids.len();
                        ids.swap_remove(at)
                    };
                    expect(
                        st(agent_unsubscribe(agent, id)),
                        &handle_ok,
                        "agent_unsubscribe",
                    );
                    expect(
                        st(agent_unsubscribe(agent, id)),
                        &[AGENT_ERR_INVALID_ARGUMENT, AGENT_ERR_INVALID_HANDLE],
                        "unsubscribe twice",
                    );
                }
                Op::SetTools(_, mask) => {
                    let tools = world().tools.lock().unwrap();
                    let chosen: Vec<AgentTool> = tools
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| mask & (1 << k) != 0)
                        .map(|(_, &t)| AgentTool { id: t as u64 })
                        .collect();
                    drop(tools);
                    let status = st(agent_set_tools(agent, chosen.as_ptr(), chosen.len()));
                    expect(status, &handle_ok, "agent_set_tools");
                }
                Op::SetStreamFn(_, kind) => install_stream(&rec, None, kind),
                Op::SetHook(_, kind, sel) => {
                    let kind = (kind % 9) as i32;
                    let status = if let HookKindSel::Remove = sel {
                        st(agent_set_hook(agent, kind, None, null_mut(), None))
                    } else {
                        let mut ctx = Ctx::new(Some(rec.clone()));
                        ctx.hook = sel;
                        with_ctx(ctx, |ud| {
                            st(agent_set_hook(agent, kind, Some(hook), ud, Some(finalize)))
                        })
                    };
                    expect(status, &handle_ok, "agent_set_hook");
                }
                Op::Configure(_, c) => {
                    let patch = CONFIGS[c as usize % CONFIGS.len()];
                    let allowed: &[AgentStatus] = if patch.contains("bogus") {
                        &[AGENT_ERR_INVALID_JSON, AGENT_ERR_INVALID_HANDLE]
                    } else {
                        &handle_ok
                    };
                    expect(
                        st(agent_configure(agent, cs(patch).as_ptr(), NTS)),
                        allowed,
                        "agent_configure",
                    );
                }
                Op::EventsOpen(_, cap) => {
                    let options = cs(&format!(r#"{{"capacity":{}}}"#, 1 + cap % 4));
                    let mut queue = AgentQueue { id: 0 };
                    if expect(
                        st(agent_queue_open(agent, options.as_ptr(), NTS, &mut queue)),
                        &handle_ok,
                        "agent_queue_open",
                    ) == AGENT_OK
                    {
                        world().queues.lock().unwrap().push(queue.id as usize);
                    }
                }
                _ => unreachable!(),
            }
        }
    }
}

unsafe fn drain_pending() {
    loop {
        let batch: Vec<_> = world().pending.lock().unwrap().drain(..).collect();
        let helpers: Vec<_> = world().helpers.lock().unwrap().drain(..).collect();
        if batch.is_empty() && helpers.is_empty() {
            return;
        }
        for item in batch {
            answer(item, AnswerMode::Null);
        }
        for handle in helpers {
            handle.join().unwrap();
        }
    }
}

unsafe fn make_tools() {
    let mut tools = world().tools.lock().unwrap();
    for (code, name) in TOOL_NAMES.iter().enumerate() {
        let definition = cs(&format!(
            r#"{{"name":"{name}","parameters":{{"type":"object","properties":{{"n":{{"type":"number"}}}}}}}}"#
        ));
        let mut ctx = Ctx::new(None);
        ctx.tool = code as u8;
        let mut tool = AgentTool { id: 0 };
        let status = with_ctx(ctx, |ud| {
            st(agent_tool_new(
                definition.as_ptr(),
                NTS,
                Some(tool_exec),
                ud,
                Some(finalize),
                &mut tool,
            ))
        });
        expect(status, &[AGENT_OK], "agent_tool_new");
        tools.push(tool.id as usize);
    }
}

fuzz_target!(|input: Input| unsafe {
    let workers = *WORKERS.get_or_init(|| {
        let n = std::env::var("FUZZ_WORKERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1usize);
        expect(
            st(agent_runtime_configure(n as u32)),
            &[AGENT_OK],
            "agent_runtime_configure",
        );
        n
    });
    REENTRANT.get_or_init(|| std::env::var("FUZZ_REENTRANT_FINALIZERS").map_or(true, |v| v != "0"));
    assert_eq!(REGISTERED.load(SeqCst), FINALIZED.load(SeqCst));

    make_tools();
    for (index, kind) in input.initial.iter().enumerate() {
        if let Some(kind) = kind {
            new_agent_in(index, *kind);
        }
    }
    let mut plans: Vec<Vec<Op>> = input
        .threads
        .into_iter()
        .take(4)
        .map(|mut ops| {
            ops.truncate(24);
            ops
        })
        .collect();
    while plans.len() < 2 {
        plans.push(Vec::new());
    }
    let threads: Vec<_> = plans
        .into_iter()
        .map(|ops| std::thread::spawn(move || ops.into_iter().for_each(|op| run_op(op))))
        .collect();
    for thread in threads {
        if let Err(panic) = thread.join() {
            std::panic::resume_unwind(panic);
        }
    }

    // Wind down: free every agent, answer what is pending, close queues, drop the tools.
    let remaining: Vec<_> = world()
        .slots
        .lock()
        .unwrap()
        .iter_mut()
        .filter_map(|s| s.take())
        .collect();
    for rec in &remaining {
        free_rec(rec);
    }
    drain_pending();
    for queue in world().queues.lock().unwrap().drain(..) {
        let queue = AgentQueue { id: queue as u64 };
        // A freed agent's queue is closed: what is left drains, then AGENT_NEXT_CLOSED.
        let mut drained = 0;
        loop {
            let mut event = std::mem::MaybeUninit::<AgentEvent>::zeroed().assume_init();
            let mut next: AgentNext = -1;
            expect(
                st(agent_queue_next(queue, 0, &mut event, &mut next)),
                &[AGENT_OK],
                "next after free",
            );
            if next != AGENT_NEXT_EVENT {
                assert_eq!(next, AGENT_NEXT_CLOSED, "a freed agent's queue closes");
                break;
            }
            drained += 1;
            assert!(drained < 100_000);
        }
        expect(
            st(agent_queue_close(queue)),
            &[AGENT_OK],
            "agent_queue_close",
        );
    }
    for tool in world().tools.lock().unwrap().drain(..) {
        expect(
            st(agent_tool_free(AgentTool { id: tool as u64 })),
            &[AGENT_OK],
            "agent_tool_free",
        );
    }
    drain_pending();

    // Every finalizer ran exactly once (a second run would free its Box twice).
    wait_until("every finalizer", || {
        FINALIZED.load(SeqCst) == REGISTERED.load(SeqCst)
    });
    let all: Vec<_> = world().all.lock().unwrap().drain(..).collect();
    if !strict_done() {
        for rec in &all {
            wait_until("every done", || {
                rec.dones
                    .lock()
                    .unwrap()
                    .iter()
                    .all(|(count, expected)| count.load(SeqCst) >= *expected)
            });
        }
    }
    for rec in all {
        for (k, (count, expected)) in rec.dones.lock().unwrap().drain(..).enumerate() {
            let n = count.load(SeqCst);
            assert_eq!(
                n, expected,
                "run {k}: done called {n} times (expected {expected})"
            );
            // Reclaim the reference handed to `done`.
            drop(Arc::from_raw(Arc::as_ptr(&count)));
        }
        let late = rec.late_callbacks.load(SeqCst);
        assert!(
            late as usize <= workers.max(1),
            "{late} callbacks started after agent_free returned"
        );
    }
    assert_eq!(REGISTERED.load(SeqCst), FINALIZED.load(SeqCst));
});

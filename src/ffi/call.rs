//! The deferred-reply rule: a tool, hook or stream function receives a call (`AgentToolCall`,
//! `AgentHookCall`, `AgentStream`: distinct types, one registry) that the host answers exactly
//! once, at once or later, from any thread.

use crate::json::Field;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::handles::{Lookup, Registry};
use super::*;
use crate::host::{AbortSignal, HookResult, HostFuture, UpdateFn};
use crate::json::Json;
use crate::stream::StreamSender;
use crate::sync::lock;

/// A tool execution's call: answer it with `agent_tool_call_complete` or `agent_tool_call_fail`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentToolCall {
    pub id: u64,
}

/// A hook's call (also `prepareArguments` and the coding pack's consent): answer it with
/// `agent_hook_call_complete` or `agent_hook_call_fail`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentHookCall {
    pub id: u64,
}

/// A stream function's call: push stream events into it, end it with a terminal event,
/// `agent_stream_end` or `agent_stream_fail`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentStream {
    pub id: u64,
}

/// Called once when a run's signal aborts (on the runtime thread, or inside `agent_dispatch` for
/// an agent built with a dispatcher).
pub type AgentAbortFn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// What a JSON answer must look like.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Shape {
    /// A deferred listener's reply (answered without JSON; not a hook call).
    Reply,
    Any,
    Object,
    Messages,
    StringOrNull,
}

impl Shape {
    fn check(self, value: &Json) -> FfiResult {
        let ok = match self {
            Shape::Any => true,
            Shape::Object => value.is_object(),
            Shape::Reply => value.is_null(),
            Shape::StringOrNull => value.is_string() || value.is_null(),
            Shape::Messages => {
                return messages_arg(value.clone(), "The answer").map(|_| ());
            }
        };
        if ok {
            Ok(())
        } else {
            let expected = match self {
                Shape::Object => "a JSON object",
                _ => "a JSON string",
            };
            err(
                AGENT_ERR_INVALID_JSON,
                format!("The answer must be {expected} or NULL."),
            )
        }
    }
}

/// A value or tool call's answer, from the call until its caller took it.
pub(crate) enum AnswerSlot {
    /// Not answered, and the callback has not returned yet.
    Open,
    /// Answered before the callback returned: the caller takes it without a channel (the
    /// common case, e.g. a listener answering `agent_call_complete(call, NULL)` at once).
    Answered(HookResult),
    /// The callback returned unanswered: the answer goes through this channel.
    Waiting(oneshot::Sender<HookResult>),
    /// The answer was given.
    Settled,
}

impl AnswerSlot {
    fn is_answered(&self) -> bool {
        matches!(self, AnswerSlot::Answered(_) | AnswerSlot::Settled)
    }
}

pub(crate) enum Reply {
    /// A hook or listener: the JSON answer (`None` = "returns nothing") or a failure.
    Value {
        slot: Mutex<AnswerSlot>,
        shape: Shape,
    },
    /// A tool execution, which also takes progress updates.
    Tool {
        slot: Mutex<AnswerSlot>,
        on_update: UpdateFn,
    },
    /// A stream: events are pushed; complete/fail end it.
    Stream {
        sender: StreamSender,
        pushed: AtomicBool,
        /// A terminal event was pushed or the stream was completed/failed: later answers are
        /// second answers.
        ended: AtomicBool,
    },
}

pub(crate) struct CallState {
    reply: Reply,
    signal: AbortSignal,
}

impl CallState {
    fn kind(&self) -> Kind {
        match self.reply {
            Reply::Value {
                shape: Shape::Reply,
                ..
            } => Kind::Reply,
            Reply::Value { .. } => Kind::Hook,
            Reply::Tool { .. } => Kind::Tool,
            Reply::Stream { .. } => Kind::Stream,
        }
    }
}

/// The four kinds of calls share one table; each token carries its kind (see `Kind`), so a
/// retired call of one kind is not answered as another.
pub(crate) static CALLS: Registry<Arc<CallState>> = Registry::new("call", 0x5a17_c0de_0000_0000);

/// A value or tool call handed to a callback: its token and, once the callback returned, its
/// answer.
pub(crate) struct PendingCall {
    pub token: u64,
    state: Arc<CallState>,
}

/// A call's answer as its caller sees it once the callback returned.
pub(crate) enum Answer {
    /// Given before the callback returned.
    Now(HookResult),
    /// Not given yet: it comes through this channel.
    Later(oneshot::Receiver<HookResult>),
}

impl PendingCall {
    fn new(reply: Reply, signal: &AbortSignal) -> Self {
        let state = Arc::new(CallState {
            reply,
            signal: signal.clone(),
        });
        let token = CALLS.insert_of_kind(state.clone(), state.kind() as u8);
        PendingCall { token, state }
    }

    /// The answer if it came, otherwise the channel it will come through. Call once, after
    /// the callback returned.
    pub fn answer(&self) -> Answer {
        let (Reply::Value { slot, .. } | Reply::Tool { slot, .. }) = &self.state.reply else {
            unreachable!("a pending call is a value or tool call");
        };
        let mut slot = lock(slot);
        match std::mem::replace(&mut *slot, AnswerSlot::Settled) {
            AnswerSlot::Answered(result) => Answer::Now(result),
            _ => {
                let (tx, rx) = oneshot::channel();
                *slot = AnswerSlot::Waiting(tx);
                Answer::Later(rx)
            }
        }
    }

    /// Retires the call unanswered: a later answer is refused as a second answer.
    pub fn retire(self) {
        CALLS.remove(self.token);
    }

    /// The answer as a future (a call never answered waits forever, like a promise that never
    /// settles).
    pub fn into_future(self) -> HostFuture<HookResult> {
        match self.answer() {
            Answer::Now(result) => Box::pin(std::future::ready(result)),
            Answer::Later(rx) => answer(rx),
        }
    }
}

/// Registers a hook or listener call.
pub(crate) fn new_value_call(shape: Shape, signal: &AbortSignal) -> PendingCall {
    let slot = Mutex::new(AnswerSlot::Open);
    PendingCall::new(Reply::Value { slot, shape }, signal)
}

pub(crate) fn new_tool_call(on_update: UpdateFn, signal: &AbortSignal) -> PendingCall {
    let slot = Mutex::new(AnswerSlot::Open);
    PendingCall::new(Reply::Tool { slot, on_update }, signal)
}

pub(crate) fn new_stream_call(sender: StreamSender, signal: &AbortSignal) -> AgentStream {
    let state = CallState {
        reply: Reply::Stream {
            sender: sender.clone(),
            pushed: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        },
        signal: signal.clone(),
    };
    let token = CALLS.insert_of_kind(Arc::new(state), Kind::Stream as u8);
    // The call retires when the loop stops consuming the stream.
    sender.on_close(move || {
        CALLS.remove(token);
    });
    AgentStream { id: token }
}

/// Waits for a call's answer. A call whose answer can never come (its registry entry was
/// dropped) waits forever, like a promise that never settles.
pub(crate) fn answer(rx: oneshot::Receiver<HookResult>) -> HostFuture<HookResult> {
    Box::pin(async move {
        match rx.await {
            Ok(result) => result,
            Err(_) => std::future::pending().await,
        }
    })
}

/// True when `call` names a call of `kind` that was retired (answered, or its stream closed).
fn is_retired(call: u64, kind: Kind) -> bool {
    matches!(CALLS.lookup(call), Lookup::Retired) && CALLS.kind_of(call) == kind as u8
}

/// Gives a value answer, retiring the call; `ALREADY_COMPLETED` if another answer won.
fn settle(call: u64, slot: &Mutex<AnswerSlot>, result: HookResult) -> FfiResult {
    let mut guard = lock(slot);
    let waiting = match std::mem::replace(&mut *guard, AnswerSlot::Settled) {
        AnswerSlot::Open => {
            *guard = AnswerSlot::Answered(result);
            None
        }
        AnswerSlot::Waiting(tx) => Some((tx, result)),
        answered => {
            *guard = answered;
            return err(
                AGENT_ERR_ALREADY_COMPLETED,
                "The call was already answered.",
            );
        }
    };
    drop(guard);
    CALLS.remove(call);
    if let Some((tx, result)) = waiting {
        // A closed receiver means the agent is gone: the answer is accepted and discarded.
        let _ = tx.send(result);
    }
    Ok(())
}

/// The live stream behind `call` (`STREAM_CLOSED` once nothing consumes it).
pub(crate) fn stream_state(call: u64) -> FfiResult<Arc<CallState>> {
    call_of(call, Kind::Stream)
}

/// `STREAM_CLOSED` when the agent was freed (possibly during this very callback).
fn check_consumed(state: &CallState) -> FfiResult {
    if state.signal.is_cancelled() {
        return err(
            AGENT_ERR_STREAM_CLOSED,
            "The stream is closed: the agent no longer consumes it.",
        );
    }
    Ok(())
}

/// Sends one pushed item into a stream from [`stream_state`], unless the stream is closed
/// or its terminal event was pushed already (`terminal`: this item is that event).
pub(crate) fn push_into(
    state: &CallState,
    terminal: bool,
    send: impl FnOnce(&StreamSender) -> Result<(), crate::stream::StreamClosed>,
) -> FfiResult {
    let Reply::Stream {
        sender,
        pushed,
        ended,
    } = &state.reply
    else {
        return err(AGENT_ERR_INVALID_HANDLE, "call is not a stream.");
    };
    check_consumed(state)?;
    if ended.load(Ordering::SeqCst) || (terminal && ended.swap(true, Ordering::SeqCst)) {
        return err(
            AGENT_ERR_STREAM_CLOSED,
            "The stream is closed: its terminal event was already pushed.",
        );
    }
    send(sender)?;
    // Written once: a store per push would be a locked instruction per delta.
    if !pushed.load(Ordering::Relaxed) {
        pushed.store(true, Ordering::SeqCst);
    }
    Ok(())
}

pub(crate) fn push_event(call: u64, event_json: *const c_char, len: usize) -> FfiResult {
    let state = stream_state(call)?;
    let text = str_arg(event_json, len, "event_json")?;
    // The most frequent event, in the compact form most hosts write, without building JSON.
    if let Some(delta) = crate::stream::typed::compact_delta_op(text) {
        return push_into(&state, false, |sender| sender.push_op(delta));
    }
    let event = crate::json::parse(text).map_err(|e| FfiError {
        status: AGENT_ERR_INVALID_JSON,
        message: format!("event_json is not valid JSON: {e}."),
    })?;
    check_consumed(&state)?;
    let Some(kind) = event.field("type").and_then(Json::as_str) else {
        return err(
            AGENT_ERR_INVALID_JSON,
            "event_json must be a JSON object with a string \"type\".",
        );
    };
    let terminal = matches!(kind, "done" | "error");
    push_into(&state, terminal, |sender| sender.push(event))
}

/// Marks a stream as answered; `ALREADY_COMPLETED` when it ended before (a terminal event was
/// pushed, or it was completed or failed).
fn end_stream(ended: &AtomicBool) -> FfiResult {
    if ended.swap(true, Ordering::SeqCst) {
        return err(
            AGENT_ERR_ALREADY_COMPLETED,
            "The stream already ended: its terminal event was pushed or it was answered.",
        );
    }
    Ok(())
}

/// Which kind of call an answer is for (each C type reaches only its own kind).
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Hook,
    Reply,
    Tool,
    Stream,
}

/// The call behind a token of `kind`: a retired one fails with `STREAM_CLOSED` (a stream) or
/// `ALREADY_COMPLETED`, a call of another kind (live or retired) with `INVALID_HANDLE`.
fn call_of(call: u64, kind: Kind) -> FfiResult<Arc<CallState>> {
    let not_of_kind = || {
        let name = match kind {
            Kind::Hook => "a hook call",
            Kind::Reply => "a listener's reply",
            Kind::Tool => "a tool call",
            Kind::Stream => "a stream",
        };
        err(AGENT_ERR_INVALID_HANDLE, format!("call is not {name}."))
    };
    match CALLS.lookup(call) {
        Lookup::Live(state) if state.kind() == kind => Ok(state),
        Lookup::Live(_) => not_of_kind(),
        Lookup::Retired if CALLS.kind_of(call) != kind as u8 => not_of_kind(),
        Lookup::Retired if kind == Kind::Stream => err(
            AGENT_ERR_STREAM_CLOSED,
            "The stream is closed: the agent no longer consumes it.",
        ),
        Lookup::Retired => err(
            AGENT_ERR_ALREADY_COMPLETED,
            "The call was already answered.",
        ),
        Lookup::Invalid if call == 0 => err(AGENT_ERR_INVALID_HANDLE, "call is the null handle."),
        Lookup::Invalid => err(AGENT_ERR_INVALID_HANDLE, "call is not a valid call object."),
    }
}

/// The call to answer: a stream already ended (or failed) refuses a second end or failure as a
/// second answer, as the header says, not as a push into a closed stream.
fn answerable(call: u64, kind: Kind) -> FfiResult<Arc<CallState>> {
    if kind == Kind::Stream && is_retired(call, Kind::Stream) {
        return err(
            AGENT_ERR_ALREADY_COMPLETED,
            "The call was already answered.",
        );
    }
    call_of(call, kind)
}

fn complete(call: u64, kind: Kind, json: *const c_char, len: usize, name: &str) -> FfiResult {
    let state = answerable(call, kind)?;
    let value = opt_json_arg(json, len, name)?;
    match &state.reply {
        Reply::Value { slot, shape } => {
            if let Some(value) = &value {
                shape.check(value)?;
            }
            settle(call, slot, Ok(value.filter(|v| !v.is_null())))
        }
        Reply::Tool { slot, .. } => {
            if let Some(value) = &value {
                Shape::Object.check(value)?;
            }
            settle(call, slot, Ok(value))
        }
        Reply::Stream { sender, ended, .. } => {
            if let Some(value) = &value {
                check_message(value, name)?;
            }
            end_stream(ended)?;
            sender.end(value)?;
            CALLS.remove(call);
            Ok(())
        }
    }
}

fn fail(call: u64, kind: Kind, message: *const c_char, len: usize) -> FfiResult {
    let state = answerable(call, kind)?;
    let message = str_arg(message, len, "message")?.to_string();
    match &state.reply {
        Reply::Value { slot, .. } | Reply::Tool { slot, .. } => settle(call, slot, Err(message)),
        Reply::Stream { sender, ended, .. } => {
            end_stream(ended)?;
            sender.fail(&message)?;
            CALLS.remove(call);
            Ok(())
        }
    }
}

fn is_aborted(call: u64, kind: Kind, out_aborted: *mut bool) -> FfiResult {
    check_out(out_aborted, "out_aborted")?;
    let state = call_of(call, kind)?;
    write_out(out_aborted, state.signal.is_aborted());
    Ok(())
}

fn on_abort(
    call: u64,
    kind: Kind,
    on_abort: AgentAbortFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> FfiResult {
    let Some(callback) = on_abort else {
        return err(AGENT_ERR_NULL, "on_abort is NULL.");
    };
    let state = call_of(call, kind)?;
    let data = HostData::new(user_data, finalizer);
    home_to_run(&data, &state.signal);
    state.signal.on_abort(move || {
        // SAFETY: the host registered this callback for this user_data.
        guard_callback(|| unsafe { callback(data.user_data) });
    });
    Ok(())
}

/// Host data given to a call of a host-pumped run: its finalizer is confined to the dispatcher.
fn home_to_run(data: &HostData, signal: &AbortSignal) {
    if let crate::dispatch::Executor::Dispatcher(dispatcher) = signal.executor() {
        data.home_to(&dispatcher.downgrade());
    }
}

/// Answers a deferred listener (`AgentReply`).
pub(crate) fn answer_reply(reply: u64, result: Result<(), String>) -> FfiResult {
    let state = call_of(reply, Kind::Reply)?;
    let Reply::Value { slot, .. } = &state.reply else {
        return err(AGENT_ERR_INVALID_HANDLE, "reply is not a listener's reply.");
    };
    settle(reply, slot, result.map(|()| None))
}

/// Answers a hook call with a JSON result (NULL, or length 0: "returns nothing"). Malformed or
/// wrongly shaped JSON fails with `AGENT_ERR_INVALID_JSON` and leaves the call unanswered; a
/// second answer fails with `AGENT_ERR_ALREADY_COMPLETED`. An answer after the agent was freed is
/// accepted and discarded. Callable from any thread, inside or after the callback.
#[no_mangle]
pub unsafe extern "C" fn agent_hook_call_complete(
    call: AgentHookCall,
    result_json: *const c_char,
    result_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        complete(
            call.id,
            Kind::Hook,
            result_json,
            result_json_len,
            "result_json",
        )
    })
}

/// Answers a hook call with a failure (the equivalent of a JavaScript throw); `message` is the
/// error text.
#[no_mangle]
pub unsafe extern "C" fn agent_hook_call_fail(
    call: AgentHookCall,
    message: *const c_char,
    message_len: usize,
) -> *mut AgentError {
    boundary(|| fail(call.id, Kind::Hook, message, message_len))
}

/// Writes whether the run that made this hook call is aborted.
#[no_mangle]
pub unsafe extern "C" fn agent_hook_call_is_aborted(
    call: AgentHookCall,
    out_aborted: *mut bool,
) -> *mut AgentError {
    boundary(|| is_aborted(call.id, Kind::Hook, out_aborted))
}

/// Registers `on_abort(user_data)` for the hook call's run (see `agent_tool_call_on_abort`).
#[no_mangle]
pub unsafe extern "C" fn agent_hook_call_on_abort(
    call: AgentHookCall,
    on_abort_fn: AgentAbortFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| on_abort(call.id, Kind::Hook, on_abort_fn, user_data, finalizer))
}

/// Answers a tool call with its result, an AgentToolResult object
/// (`{"content":[...],"details":...}`; NULL: the tool returned nothing, which fails the call with
/// `Tool <name> returned no result`). Otherwise as `agent_hook_call_complete`.
#[no_mangle]
pub unsafe extern "C" fn agent_tool_call_complete(
    call: AgentToolCall,
    result_json: *const c_char,
    result_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        complete(
            call.id,
            Kind::Tool,
            result_json,
            result_json_len,
            "result_json",
        )
    })
}

/// Answers a tool call with a failure (the tool threw `message`).
#[no_mangle]
pub unsafe extern "C" fn agent_tool_call_fail(
    call: AgentToolCall,
    message: *const c_char,
    message_len: usize,
) -> *mut AgentError {
    boundary(|| fail(call.id, Kind::Tool, message, message_len))
}

/// Writes whether the run that made this tool call is aborted.
#[no_mangle]
pub unsafe extern "C" fn agent_tool_call_is_aborted(
    call: AgentToolCall,
    out_aborted: *mut bool,
) -> *mut AgentError {
    boundary(|| is_aborted(call.id, Kind::Tool, out_aborted))
}

/// Registers `on_abort(user_data)`, called once when the tool call's run aborts (never inside
/// `agent_abort`/`agent_run_abort` itself; at once, later, if already aborted). `finalizer`
/// runs when the registration is dropped.
#[no_mangle]
pub unsafe extern "C" fn agent_tool_call_on_abort(
    call: AgentToolCall,
    on_abort_fn: AgentAbortFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| on_abort(call.id, Kind::Tool, on_abort_fn, user_data, finalizer))
}

/// Reports a tool's progress (`onUpdate(partialResult)`, SPEC §6.8). Never blocks. Updates are
/// emitted in call order; after the tool answered, fails with `AGENT_ERR_ALREADY_COMPLETED` and
/// emits nothing.
#[no_mangle]
pub unsafe extern "C" fn agent_tool_call_update(
    call: AgentToolCall,
    partial_result_json: *const c_char,
    partial_result_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let state = call_of(call.id, Kind::Tool)?;
        let Reply::Tool { slot, on_update } = &state.reply else {
            return err(AGENT_ERR_INVALID_HANDLE, "call is not a tool call.");
        };
        let value = json_arg(
            partial_result_json,
            partial_result_json_len,
            "partial_result_json",
        )?;
        let guard = lock(slot);
        if guard.is_answered() {
            return err(
                AGENT_ERR_ALREADY_COMPLETED,
                "The call was already answered.",
            );
        }
        on_update(value);
        Ok(())
    })
}

/// Pushes one assistant stream event (SPEC §3.2; `partial` optional, SPEC §3.7). Never blocks.
/// Fails with `AGENT_ERR_STREAM_CLOSED` once the agent stopped consuming the stream and after its
/// `done`/`error` event was pushed. Pushed events wait in an unbounded queue until the loop
/// takes them: a producer that can outrun the agent paces itself with `agent_stream_on_consumed`
/// or `agent_stream_backlog`. A delta event written compactly with exactly these keys in this
/// order, `{"type":"text_delta","contentIndex":0,"delta":"..."}` (also `thinking_delta`,
/// `toolcall_delta`), is taken without building JSON, like `agent_stream_push_text_delta`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push(
    stream: AgentStream,
    event_json: *const c_char,
    event_json_len: usize,
) -> *mut AgentError {
    boundary(|| push_event(stream.id, event_json, event_json_len))
}

/// Ends the stream with `final_message_json` as its final message (NULL: without one, which
/// yields an error message, SPEC §3.5). Fails with `AGENT_ERR_ALREADY_COMPLETED` after a terminal
/// event was pushed or the stream was ended or failed.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_end(
    stream: AgentStream,
    final_message_json: *const c_char,
    final_message_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        complete(
            stream.id,
            Kind::Stream,
            final_message_json,
            final_message_json_len,
            "final_message_json",
        )
    })
}

/// Fails the stream: before any push, the stream function failed (SPEC §6.12); after a push, an
/// `error` event with `errorMessage` = `message`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_fail(
    stream: AgentStream,
    message: *const c_char,
    message_len: usize,
) -> *mut AgentError {
    boundary(|| fail(stream.id, Kind::Stream, message, message_len))
}

/// Writes whether the run that requested this stream is aborted.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_is_aborted(
    stream: AgentStream,
    out_aborted: *mut bool,
) -> *mut AgentError {
    boundary(|| is_aborted(stream.id, Kind::Stream, out_aborted))
}

/// Registers `on_abort(user_data)` for the stream's run (see `agent_tool_call_on_abort`). Fails
/// with `AGENT_ERR_STREAM_CLOSED` once the agent stopped consuming the stream.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_on_abort(
    stream: AgentStream,
    on_abort_fn: AgentAbortFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| on_abort(stream.id, Kind::Stream, on_abort_fn, user_data, finalizer))
}

/// Writes how many pushed events the loop has not taken yet (0 once the stream is closed).
/// Another kind of call (a tool call, hook call or reply, answered or not) fails with
/// `AGENT_ERR_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_backlog(
    stream: AgentStream,
    out_count: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_count, "out_count")?;
        // A closed stream has no backlog; a call of another kind is refused, freed or not.
        let count = if is_retired(stream.id, Kind::Stream) {
            0
        } else {
            match &call_of(stream.id, Kind::Stream)?.reply {
                Reply::Stream { sender, .. } => sender.backlog(),
                _ => 0,
            }
        };
        write_out(out_count, count);
        Ok(())
    })
}

/// Called each time an event pushed into the stream has been fully processed (its agent event
/// delivered to every listener): a lock-step producer pushes the next event from here.
pub type AgentConsumedFn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, stream: AgentStream)>;

/// Registers the consumed notification of a stream (replacing any previous one).
#[no_mangle]
pub unsafe extern "C" fn agent_stream_on_consumed(
    stream: AgentStream,
    on_consumed: AgentConsumedFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        let Some(callback) = on_consumed else {
            return err(AGENT_ERR_NULL, "on_consumed is NULL.");
        };
        let state = call_of(stream.id, Kind::Stream)?;
        let Reply::Stream { sender, .. } = &state.reply else {
            return err(AGENT_ERR_INVALID_HANDLE, "stream is not a stream.");
        };
        let data = HostData::new(user_data, finalizer);
        home_to_run(&data, &state.signal);
        sender.on_consumed(move || {
            // SAFETY: the host registered this callback for this user_data.
            guard_callback(|| unsafe { callback(data.user_data, stream) });
        });
        Ok(())
    })
}

/// A borrowed C string of JSON for a callback argument.
pub(crate) fn json_c_string(value: &Json) -> CString {
    CString::new(crate::json::to_string(value)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code of a returned error (`AGENT_OK` for success), freeing it.
    fn code(error: *mut AgentError) -> AgentErrorCode {
        // SAFETY: an error returned by libagent, freed once.
        unsafe {
            let code = agent_error_code(error);
            agent_error_free(error);
            code
        }
    }

    fn hook(token: u64) -> AgentHookCall {
        AgentHookCall { id: token }
    }

    /// An answer given before the callback returned is taken without a channel; a second answer
    /// and an answer to a retired call are refused; an answer given later arrives through the
    /// channel; a call of another kind is not a hook call.
    #[test]
    fn answers_now_later_twice_and_retired() {
        let signal = AbortSignal::new();
        let first = new_value_call(Shape::Any, &signal);
        // SAFETY: a token of this registry; NULL = "returns nothing".
        unsafe {
            assert_eq!(
                code(agent_hook_call_complete(
                    hook(first.token),
                    std::ptr::null(),
                    0
                )),
                AGENT_OK
            );
            assert_eq!(
                code(agent_hook_call_fail(hook(first.token), c"no".as_ptr(), 2)),
                AGENT_ERR_ALREADY_COMPLETED
            );
        }
        assert!(matches!(first.answer(), Answer::Now(Ok(None))));

        let retired = new_value_call(Shape::Any, &signal);
        let token = retired.token;
        retired.retire();
        // SAFETY: as above.
        assert_eq!(
            code(unsafe { agent_hook_call_complete(hook(token), std::ptr::null(), 0) }),
            AGENT_ERR_ALREADY_COMPLETED
        );

        let later = new_value_call(Shape::Any, &signal);
        let Answer::Later(mut rx) = later.answer() else {
            panic!("an unanswered call must wait for its answer");
        };
        // SAFETY: as above.
        assert_eq!(
            code(unsafe { agent_hook_call_complete(hook(later.token), c"1".as_ptr(), AGENT_NTS) }),
            AGENT_OK
        );
        assert_eq!(rx.try_recv().ok(), Some(Ok(Some(Json::from(1)))));

        let tool = new_tool_call(Arc::new(|_| {}), &signal);
        // SAFETY: as above.
        assert_eq!(
            code(unsafe { agent_hook_call_complete(hook(tool.token), std::ptr::null(), 0) }),
            AGENT_ERR_INVALID_HANDLE
        );
    }
}

//! The deferred-reply rule: every callback receives an `AgentCall*` that the host answers
//! exactly once, at once or later, from any thread.

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

/// An opaque call object: the pending answer of one callback invocation.
pub struct AgentCall {
    _private: [u8; 0],
}

/// A tool execution's call object (`agent_tool_call_update` works on it).
pub type AgentToolCall = AgentCall;

/// A stream function's call object: push stream events into it.
pub type AgentStream = AgentCall;

/// Called on the runtime thread when a run's signal aborts.
pub type AgentAbortFn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// What a JSON answer must look like.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Shape {
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

pub(crate) static CALLS: Registry<Arc<CallState>> = Registry::new("call", 0x5a17_c0de_0000_0000);

/// A value or tool call handed to a callback: its token and, once the callback returned, its
/// answer.
pub(crate) struct PendingCall {
    pub token: *mut AgentCall,
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
        let token = CALLS.insert(state.clone()) as *mut AgentCall;
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

    /// Keeps the call's state in `spare` for the next call when nothing else holds it (the call
    /// was answered and retired: its token is stale, a later answer gets ALREADY_COMPLETED).
    pub fn recycle(mut self, spare: &mut SpareCall) {
        if Arc::get_mut(&mut self.state).is_some() {
            *spare = Some(self.state);
        }
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

/// The state of a call answered before its callback returned, kept for the next call of the
/// same callback: a listener answered at once then costs no allocation per event.
pub(crate) type SpareCall = Option<Arc<CallState>>;

/// [`new_value_call`] in `spare`'s allocation when there is one.
pub(crate) fn new_value_call_in(
    spare: &mut SpareCall,
    shape: Shape,
    signal: &AbortSignal,
) -> PendingCall {
    let reply = Reply::Value {
        slot: Mutex::new(AnswerSlot::Open),
        shape,
    };
    let Some(mut state) = spare.take() else {
        return PendingCall::new(reply, signal);
    };
    let Some(reused) = Arc::get_mut(&mut state) else {
        return PendingCall::new(reply, signal);
    };
    reused.reply = reply;
    reused.signal = signal.clone();
    let token = CALLS.insert(state.clone()) as *mut AgentCall;
    PendingCall { token, state }
}

pub(crate) fn new_tool_call(on_update: UpdateFn, signal: &AbortSignal) -> PendingCall {
    let slot = Mutex::new(AnswerSlot::Open);
    PendingCall::new(Reply::Tool { slot, on_update }, signal)
}

pub(crate) fn new_stream_call(sender: StreamSender, signal: &AbortSignal) -> *mut AgentCall {
    let state = CallState {
        reply: Reply::Stream {
            sender: sender.clone(),
            pushed: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        },
        signal: signal.clone(),
    };
    let token = CALLS.insert(Arc::new(state)) as usize;
    // The call retires when the loop stops consuming the stream.
    sender.on_close(move || {
        CALLS.remove(token as *const c_void);
    });
    token as *mut AgentCall
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

fn lookup(call: *const AgentCall, closed_status: AgentStatus) -> FfiResult<Arc<CallState>> {
    match CALLS.lookup(call as *const c_void) {
        Lookup::Live(state) => Ok(state),
        Lookup::Retired if closed_status == AGENT_ERR_STREAM_CLOSED => err(
            closed_status,
            "The stream is closed: the agent no longer consumes it.",
        ),
        Lookup::Retired => err(closed_status, "The call was already answered."),
        Lookup::Invalid if call.is_null() => err(AGENT_ERR_NULL, "call is NULL."),
        Lookup::Invalid => err(AGENT_ERR_INVALID_HANDLE, "call is not a valid call object."),
    }
}

/// Gives a value answer, retiring the call; `ALREADY_COMPLETED` if another answer won.
fn settle(call: *const AgentCall, slot: &Mutex<AnswerSlot>, result: HookResult) -> FfiResult {
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
    CALLS.remove(call as *const c_void);
    if let Some((tx, result)) = waiting {
        // A closed receiver means the agent is gone: the answer is accepted and discarded.
        let _ = tx.send(result);
    }
    Ok(())
}

/// The live stream behind `call` (`STREAM_CLOSED` once nothing consumes it).
pub(crate) fn stream_state(call: *const AgentCall) -> FfiResult<Arc<CallState>> {
    let state = lookup(call, AGENT_ERR_STREAM_CLOSED)?;
    if !matches!(state.reply, Reply::Stream { .. }) {
        return err(AGENT_ERR_INVALID_HANDLE, "call is not a stream.");
    }
    Ok(state)
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
    pushed.store(true, Ordering::SeqCst);
    Ok(())
}

pub(crate) fn push_event(call: *const AgentCall, event_json: *const c_char) -> FfiResult {
    let state = stream_state(call)?;
    let text = str_arg(event_json, "event_json")?;
    // The most frequent event, in the compact form most hosts write, without building JSON.
    if let Some(delta) = super::typed_push::compact_delta_event(text) {
        return push_into(&state, false, |sender| sender.push_op(delta));
    }
    let event = crate::json::parse(text).map_err(|e| FfiError {
        status: AGENT_ERR_INVALID_JSON,
        message: format!("event_json is not valid JSON: {e}."),
    })?;
    check_consumed(&state)?;
    let Some(kind) = event.get("type").and_then(Json::as_str) else {
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

/// Answers a call with a JSON result (`result_json` NULL = "returns nothing").
///
/// For a stream, ends it with that final message (NULL: the stream ends without one, which
/// yields an error message, SPEC §3.5). Malformed or wrongly shaped JSON returns
/// `AGENT_ERR_INVALID_JSON` and leaves the call unanswered. A second answer returns
/// `AGENT_ERR_ALREADY_COMPLETED` (for a stream, also an answer after its `done`/`error` event
/// was pushed). Answers after the agent was freed are accepted and discarded
/// (except for a stream the agent stopped consuming: its call is gone, and answering it returns
/// `AGENT_ERR_ALREADY_COMPLETED`).
/// Callable from any thread, inside or after the callback.
#[no_mangle]
pub unsafe extern "C" fn agent_call_complete(
    call: *mut AgentCall,
    result_json: *const c_char,
) -> *mut AgentError {
    boundary(|| {
        let state = lookup(call, AGENT_ERR_ALREADY_COMPLETED)?;
        let value = opt_json_arg(result_json, "result_json")?;
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
                    check_message(value, "result_json")?;
                }
                end_stream(ended)?;
                sender.end(value)?;
                CALLS.remove(call as *const c_void);
                Ok(())
            }
        }
    })
}

/// Answers a call with a failure (the equivalent of a JavaScript throw); `message` is the error
/// text. For a stream before any push: the stream function failed (SPEC §6.12); after a push:
/// an `error` event with `errorMessage` = message.
#[no_mangle]
pub unsafe extern "C" fn agent_call_fail(
    call: *mut AgentCall,
    message: *const c_char,
) -> *mut AgentError {
    boundary(|| {
        let state = lookup(call, AGENT_ERR_ALREADY_COMPLETED)?;
        let message = str_arg(message, "message")?.to_string();
        match &state.reply {
            Reply::Value { slot, .. } | Reply::Tool { slot, .. } => {
                settle(call, slot, Err(message))
            }
            Reply::Stream { sender, ended, .. } => {
                end_stream(ended)?;
                sender.fail(&message)?;
                CALLS.remove(call as *const c_void);
                Ok(())
            }
        }
    })
}

/// Writes whether the run that made this call is aborted.
#[no_mangle]
pub unsafe extern "C" fn agent_call_is_aborted(
    call: *const AgentCall,
    out_aborted: *mut bool,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_aborted, "out_aborted")?;
        let state = lookup(call, AGENT_ERR_ALREADY_COMPLETED)?;
        write_out(out_aborted, state.signal.is_aborted());
        Ok(())
    })
}

/// Registers `on_abort(user_data)`, called once on the runtime thread when the run aborts
/// (never inside `agent_abort` itself; at once, on the runtime thread, if already aborted).
/// `finalizer(user_data)` runs when the registration is dropped.
#[no_mangle]
pub unsafe extern "C" fn agent_call_on_abort(
    call: *const AgentCall,
    on_abort: AgentAbortFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        let Some(callback) = on_abort else {
            return err(AGENT_ERR_NULL, "on_abort is NULL.");
        };
        let state = lookup(call, AGENT_ERR_ALREADY_COMPLETED)?;
        let data = HostData::new(user_data, finalizer);
        state.signal.on_abort(move || {
            // SAFETY: the host registered this callback for this user_data.
            guard_callback(|| unsafe { callback(data.user_data) });
        });
        Ok(())
    })
}

/// Reports a tool's progress (`onUpdate(partialResult)`, SPEC §6.8). Never blocks. Updates are
/// emitted in call order; after the tool answered, returns `AGENT_ERR_ALREADY_COMPLETED` and
/// emits nothing.
#[no_mangle]
pub unsafe extern "C" fn agent_tool_call_update(
    call: *mut AgentToolCall,
    partial_result_json: *const c_char,
) -> *mut AgentError {
    boundary(|| {
        let state = lookup(call, AGENT_ERR_ALREADY_COMPLETED)?;
        let Reply::Tool { slot, on_update } = &state.reply else {
            return err(AGENT_ERR_INVALID_HANDLE, "call is not a tool execution.");
        };
        let value = json_arg(partial_result_json, "partial_result_json")?;
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
/// Returns `AGENT_ERR_STREAM_CLOSED` once the agent stopped consuming the stream and after its
/// `done`/`error` event was pushed. Pushed events wait in an unbounded queue until the loop
/// takes them (each costs its parsed JSON, a few hundred bytes for a small delta): a producer
/// that can outrun the agent paces itself with `agent_stream_on_consumed` or
/// `agent_stream_backlog`.
/// A delta event written compactly with exactly these keys in this order,
/// `{"type":"text_delta","contentIndex":0,"delta":"..."}` (also `thinking_delta`,
/// `toolcall_delta`), is taken without building JSON, like `agent_stream_push_text_delta`.
#[no_mangle]
pub unsafe extern "C" fn agent_stream_push(
    stream: *mut AgentStream,
    event_json: *const c_char,
) -> *mut AgentError {
    boundary(|| push_event(stream, event_json))
}

/// Writes how many pushed events the loop has not taken yet (0 once the stream is closed).
#[no_mangle]
pub unsafe extern "C" fn agent_stream_backlog(
    stream: *const AgentStream,
    out_count: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_count, "out_count")?;
        let count = match CALLS.lookup(stream as *const c_void) {
            Lookup::Retired => 0,
            _ => match &lookup(stream, AGENT_ERR_STREAM_CLOSED)?.reply {
                Reply::Stream { sender, .. } => sender.backlog(),
                _ => return err(AGENT_ERR_INVALID_HANDLE, "stream is not a stream."),
            },
        };
        write_out(out_count, count);
        Ok(())
    })
}

/// Called on the runtime thread each time an event pushed into the stream has been fully
/// processed (its agent event delivered to every listener): a lock-step producer pushes the
/// next event from here.
pub type AgentConsumedFn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, stream: *mut AgentStream)>;

/// Registers the consumed notification of a stream (replacing any previous one).
#[no_mangle]
pub unsafe extern "C" fn agent_stream_on_consumed(
    stream: *mut AgentStream,
    on_consumed: AgentConsumedFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        let Some(callback) = on_consumed else {
            return err(AGENT_ERR_NULL, "on_consumed is NULL.");
        };
        let state = lookup(stream, AGENT_ERR_STREAM_CLOSED)?;
        let Reply::Stream { sender, .. } = &state.reply else {
            return err(AGENT_ERR_INVALID_HANDLE, "stream is not a stream.");
        };
        let data = HostData::new(user_data, finalizer);
        let token = stream as usize;
        sender.on_consumed(move || {
            // SAFETY: the host registered this callback for this user_data.
            guard_callback(|| unsafe { callback(data.user_data, token as *mut AgentStream) });
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

    /// A listener call answered before its callback returns leaves its state for the next call
    /// (no allocation), and the retired token stays retired.
    #[test]
    fn a_call_answered_at_once_is_recycled_and_its_token_stays_stale() {
        let signal = AbortSignal::new();
        let mut spare: SpareCall = None;
        let first = new_value_call_in(&mut spare, Shape::Any, &signal);
        let first_token = first.token;
        let first_state = Arc::as_ptr(&first.state);
        // SAFETY: a token of this registry; NULL = "returns nothing".
        assert_eq!(
            unsafe { agent_call_complete(first_token, std::ptr::null()) },
            AGENT_OK
        );
        assert!(matches!(first.answer(), Answer::Now(Ok(None))));
        first.recycle(&mut spare);
        assert!(spare.is_some());

        let second = new_value_call_in(&mut spare, Shape::Any, &signal);
        assert_eq!(
            Arc::as_ptr(&second.state),
            first_state,
            "the state was reused"
        );
        assert_ne!(second.token, first_token);
        // SAFETY: as above.
        unsafe {
            assert_eq!(
                agent_call_complete(first_token, std::ptr::null()),
                AGENT_ERR_ALREADY_COMPLETED
            );
            assert_eq!(agent_call_fail(second.token, c"no".as_ptr()), AGENT_OK);
        }
        assert!(matches!(second.answer(), Answer::Now(Err(m)) if m == "no"));

        // A call still open when its callback returns is answered through a channel and is not
        // recycled while the registry holds it.
        let third = new_value_call_in(&mut spare, Shape::Any, &signal);
        assert!(spare.is_none());
        let Answer::Later(mut rx) = third.answer() else {
            panic!("an unanswered call must wait for its answer");
        };
        let token = third.token;
        third.recycle(&mut spare);
        assert!(spare.is_none());
        // SAFETY: as above.
        assert_eq!(
            unsafe { agent_call_complete(token, c"1".as_ptr()) },
            AGENT_OK
        );
        assert_eq!(rx.try_recv().ok(), Some(Ok(Some(Json::from(1)))));
    }
}

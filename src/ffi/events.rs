//! Events for the host in one call each: listeners receive an `AgentEvent` struct and answer by
//! returning; the lossless pull queue returns the same struct. JSON is built only on request.

use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::agent::{agent_arg, AgentHandle, AGENTS};
use super::call::{answer, new_value_call, Answer, PendingCall, Shape};
use super::handles::{Lookup, Registry};
use super::*;
use crate::agent::EventQueue as CoreQueue;
use crate::error::ErrorKind;
use crate::event::{AgentEvent as CoreEvent, EventShape};
use crate::host::{AbortSignal, Delivery, EventRef, ImmediateListener};
use crate::json::Json;
use crate::stream::BlockKind;
use crate::sync::lock;

/// Which event: one of the `AGENT_EVENT_*` values (SPEC §2.7).
pub type AgentEventType = i32;
/// `agent_start`.
pub const AGENT_EVENT_AGENT_START: AgentEventType = 0;
/// `agent_end`.
pub const AGENT_EVENT_AGENT_END: AgentEventType = 1;
/// `turn_start`.
pub const AGENT_EVENT_TURN_START: AgentEventType = 2;
/// `turn_end`.
pub const AGENT_EVENT_TURN_END: AgentEventType = 3;
/// `message_start`.
pub const AGENT_EVENT_MESSAGE_START: AgentEventType = 4;
/// `message_update` (`update` says which assistant stream event).
pub const AGENT_EVENT_MESSAGE_UPDATE: AgentEventType = 5;
/// `message_end`.
pub const AGENT_EVENT_MESSAGE_END: AgentEventType = 6;
/// `tool_execution_start`.
pub const AGENT_EVENT_TOOL_EXECUTION_START: AgentEventType = 7;
/// `tool_execution_update`.
pub const AGENT_EVENT_TOOL_EXECUTION_UPDATE: AgentEventType = 8;
/// `tool_execution_end`.
pub const AGENT_EVENT_TOOL_EXECUTION_END: AgentEventType = 9;
/// `compaction_start` (`{reason}`: "manual", "threshold" or "overflow"; read its JSON).
pub const AGENT_EVENT_COMPACTION_START: AgentEventType = 10;
/// `compaction_end` (`{reason, result?, aborted, willRetry, errorMessage?}`; read its JSON).
pub const AGENT_EVENT_COMPACTION_END: AgentEventType = 11;
/// `auto_retry_start` (`{attempt, maxAttempts, delayMs, errorMessage}`; read its JSON).
pub const AGENT_EVENT_AUTO_RETRY_START: AgentEventType = 12;
/// `auto_retry_end` (`{success, attempt, finalError?}`; read its JSON).
pub const AGENT_EVENT_AUTO_RETRY_END: AgentEventType = 13;

/// The assistant stream event of a `message_update`: one of the `AGENT_UPDATE_*` values.
pub type AgentUpdateType = i32;
/// Not a `message_update`.
pub const AGENT_UPDATE_NONE: AgentUpdateType = 0;
/// `start`.
pub const AGENT_UPDATE_START: AgentUpdateType = 1;
/// `text_start`.
pub const AGENT_UPDATE_TEXT_START: AgentUpdateType = 2;
/// `text_delta`.
pub const AGENT_UPDATE_TEXT_DELTA: AgentUpdateType = 3;
/// `text_end`.
pub const AGENT_UPDATE_TEXT_END: AgentUpdateType = 4;
/// `thinking_start`.
pub const AGENT_UPDATE_THINKING_START: AgentUpdateType = 5;
/// `thinking_delta`.
pub const AGENT_UPDATE_THINKING_DELTA: AgentUpdateType = 6;
/// `thinking_end`.
pub const AGENT_UPDATE_THINKING_END: AgentUpdateType = 7;
/// `toolcall_start`.
pub const AGENT_UPDATE_TOOLCALL_START: AgentUpdateType = 8;
/// `toolcall_delta`.
pub const AGENT_UPDATE_TOOLCALL_DELTA: AgentUpdateType = 9;
/// `toolcall_end`.
pub const AGENT_UPDATE_TOOLCALL_END: AgentUpdateType = 10;
/// Any other assistant stream event a host pushed (read its JSON).
pub const AGENT_UPDATE_OTHER: AgentUpdateType = 11;

/// One event, as a listener receives it and `agent_queue_next` writes it. Its texts are borrowed:
/// from a listener, for the callback; from a queue, until the next call on that queue.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AgentEvent {
    pub kind: AgentEventType,
    /// `message_update` only, else `AGENT_UPDATE_NONE`.
    pub update: AgentUpdateType,
    /// `message_update` only: the stream event's `contentIndex` (0 when it has none).
    pub content_index: usize,
    /// `*_delta` updates: the new text (for `toolcall_delta`, the next piece of the arguments'
    /// JSON text); else empty.
    pub delta: AgentStr,
    /// `tool_execution_*`: the tool call's id and tool name; else empty.
    pub tool_call_id: AgentStr,
    pub tool_name: AgentStr,
    /// `tool_execution_start` and `_update`: the tool call's arguments as JSON; else empty.
    pub args_json: AgentStr,
    /// Internal: where the event lives (for `agent_event_json` and `agent_event_defer`).
    pub source: u64,
    /// Internal: which event of its source this is.
    pub sequence: u64,
}

/// Which JSON shape of an event: `AGENT_EVENT_SHAPE_FULL` (the reference's event object) or
/// `AGENT_EVENT_SHAPE_LEAN` (`message_update` without the whole partial message; a
/// `toolcall_delta` keeps that block's parsed `arguments`).
///
/// Cost of building an event's JSON: `full` is O(size of the partial message) for every
/// `message_update`, so O(N^2) over a response streamed in N deltas. `lean` is O(size of the
/// event) for text and thinking deltas, and for a `toolcall_delta` O(size of that tool call's
/// parsed arguments so far). The struct's fields cost O(1): not asking for JSON keeps every event
/// O(1).
pub type AgentEventShape = i32;
/// The reference's event JSON.
pub const AGENT_EVENT_SHAPE_FULL: AgentEventShape = 0;
/// The lean event JSON (see `AgentEventShape` for its cost on `toolcall_delta`).
pub const AGENT_EVENT_SHAPE_LEAN: AgentEventShape = 1;

/// How a listener answered: `AGENT_LISTENER_CONTINUE` (done with the event) or
/// `AGENT_LISTENER_LATER` (it called `agent_event_defer` and answers through the reply).
pub type AgentListenerAnswer = i32;
/// The listener is done with the event.
pub const AGENT_LISTENER_CONTINUE: AgentListenerAnswer = 0;
/// The listener answers later through the `AgentReply` from `agent_event_defer`.
pub const AGENT_LISTENER_LATER: AgentListenerAnswer = 1;

/// A listener (SPEC §7.11), called for every event in subscription order; the next listener and
/// the loop wait for its answer. `event` is valid during the callback only, on the thread that
/// called it (a listener that deferred may also read it, from any thread, until it answers the
/// reply); a copy used elsewhere is refused with `AGENT_ERR_INVALID_ARGUMENT`.
pub type AgentListenerFn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, event: *const AgentEvent) -> AgentListenerAnswer,
>;

/// A listener's deferred answer (from `agent_event_defer`): answer it once with
/// `agent_reply_continue` or `agent_reply_fail`, from any thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentReply {
    pub id: u64,
}

/// What a host asked of one event beyond the struct: its JSON (built at most once per shape and
/// shared by the agent's listeners), the texts of a tool event, the reply of a listener that
/// deferred. Made only when asked: a listener that reads the struct alone costs no view.
pub(crate) struct EventView {
    /// The event, owned: a queue's event, or a listener's once it deferred (then read from any
    /// thread until the reply is answered). A listener's event is otherwise borrowed from the
    /// delivery (see `DELIVERING`).
    owned: OnceLock<Arc<CoreEvent>>,
    sequence: u64,
    json: [OnceLock<CString>; 2],
    /// Extra texts the struct borrows (tool call id, name and arguments).
    texts: OnceLock<(CString, CString, CString)>,
    /// The run's signal while listeners run (a deferred reply observes it).
    signal: Option<AbortSignal>,
    deferred: Mutex<Option<PendingCall>>,
    /// Set while a listener that deferred has not answered: the delivery goes on, so the event
    /// stays readable (from any thread: the reply may be answered anywhere).
    awaiting_reply: AtomicBool,
}

impl EventView {
    fn new(sequence: u64, signal: Option<AbortSignal>) -> Self {
        EventView {
            owned: OnceLock::new(),
            sequence,
            json: Default::default(),
            texts: OnceLock::new(),
            signal,
            deferred: Mutex::new(None),
            awaiting_reply: AtomicBool::new(false),
        }
    }

    /// The view of a queue's event (which it owns).
    fn queued(event: Arc<CoreEvent>, sequence: u64) -> Self {
        let view = EventView::new(sequence, None);
        let _ = view.owned.set(event);
        view
    }

    fn json(&self, shape: EventShape, event: &CoreEvent) -> &CString {
        self.json[shape as usize]
            .get_or_init(|| CString::new(event.to_json_text(shape)).unwrap_or_default())
    }

    /// A tool event's id, name and (rendered once) arguments, borrowed from this view.
    fn tool_texts(
        &self,
        id: &Json,
        name: &Json,
        args: Option<&Json>,
    ) -> (AgentStr, AgentStr, AgentStr) {
        let (id, name, args) = self.texts.get_or_init(|| {
            let text = |v: &str| CString::new(v.replace('\0', " ")).unwrap_or_default();
            (
                text(id.as_str().unwrap_or("")),
                text(name.as_str().unwrap_or("")),
                text(&args.map(crate::json::to_string).unwrap_or_default()),
            )
        });
        (c_text(id), c_text(name), c_text(args))
    }
}

/// The struct for `event` (borrowing from it, and for a tool event from the view `view()` gives).
fn to_c(
    event: &CoreEvent,
    source: u64,
    sequence: u64,
    view: impl FnOnce() -> Arc<EventView>,
) -> AgentEvent {
    let (update, content_index, delta) = match event {
        CoreEvent::MessageUpdate { event: update, .. } => match update.typed_delta() {
            Some((kind, index, delta)) => (delta_type(kind), index, AgentStr::of(delta)),
            None => (
                update_type(update.kind()),
                update.content_index().unwrap_or(0),
                update.delta_text().map_or(AgentStr::EMPTY, AgentStr::of),
            ),
        },
        _ => (AGENT_UPDATE_NONE, 0, AgentStr::EMPTY),
    };
    let (tool_call_id, tool_name, args_json) = match event {
        CoreEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            args,
        }
        | CoreEvent::ToolExecutionUpdate {
            tool_call_id,
            tool_name,
            args,
            ..
        } => view().tool_texts(tool_call_id, tool_name, Some(args)),
        CoreEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            ..
        } => view().tool_texts(tool_call_id, tool_name, None),
        _ => (AgentStr::EMPTY, AgentStr::EMPTY, AgentStr::EMPTY),
    };
    AgentEvent {
        kind: event_type(event),
        update,
        content_index,
        delta,
        tool_call_id,
        tool_name,
        args_json,
        source,
        sequence,
    }
}

fn c_text(text: &CString) -> AgentStr {
    AgentStr {
        ptr: text.as_ptr(),
        len: text.as_bytes().len(),
    }
}

/// The view of the latest event of an agent's listeners that a host asked more of.
#[derive(Default)]
pub(crate) struct EventCache {
    current: Mutex<Option<Arc<EventView>>>,
}

impl EventCache {
    /// The view of event `sequence`, made when it is the first ask (the previous event's view is
    /// dropped then, outside the lock).
    fn view(&self, sequence: u64, signal: &AbortSignal) -> Arc<EventView> {
        let mut current = lock(&self.current);
        if let Some(view) = current.as_ref().filter(|view| view.sequence == sequence) {
            return view.clone();
        }
        let view = Arc::new(EventView::new(sequence, Some(signal.clone())));
        let previous = current.replace(view.clone());
        drop(current);
        drop(previous);
        view
    }
}

fn event_type(event: &CoreEvent) -> AgentEventType {
    match event {
        CoreEvent::AgentStart => AGENT_EVENT_AGENT_START,
        CoreEvent::AgentEnd { .. } => AGENT_EVENT_AGENT_END,
        CoreEvent::TurnStart => AGENT_EVENT_TURN_START,
        CoreEvent::TurnEnd { .. } => AGENT_EVENT_TURN_END,
        CoreEvent::MessageStart { .. } => AGENT_EVENT_MESSAGE_START,
        CoreEvent::MessageUpdate { .. } => AGENT_EVENT_MESSAGE_UPDATE,
        CoreEvent::MessageEnd { .. } => AGENT_EVENT_MESSAGE_END,
        CoreEvent::ToolExecutionStart { .. } => AGENT_EVENT_TOOL_EXECUTION_START,
        CoreEvent::ToolExecutionUpdate { .. } => AGENT_EVENT_TOOL_EXECUTION_UPDATE,
        CoreEvent::ToolExecutionEnd { .. } => AGENT_EVENT_TOOL_EXECUTION_END,
        CoreEvent::CompactionStart { .. } => AGENT_EVENT_COMPACTION_START,
        CoreEvent::CompactionEnd { .. } => AGENT_EVENT_COMPACTION_END,
        CoreEvent::AutoRetryStart { .. } => AGENT_EVENT_AUTO_RETRY_START,
        CoreEvent::AutoRetryEnd { .. } => AGENT_EVENT_AUTO_RETRY_END,
    }
}

/// The update type of a delta kept typed.
fn delta_type(kind: BlockKind) -> AgentUpdateType {
    match kind {
        BlockKind::Text => AGENT_UPDATE_TEXT_DELTA,
        BlockKind::Thinking => AGENT_UPDATE_THINKING_DELTA,
        BlockKind::ToolCall => AGENT_UPDATE_TOOLCALL_DELTA,
    }
}

fn update_type(kind: Option<&str>) -> AgentUpdateType {
    match kind {
        Some("start") => AGENT_UPDATE_START,
        Some("text_start") => AGENT_UPDATE_TEXT_START,
        Some("text_delta") => AGENT_UPDATE_TEXT_DELTA,
        Some("text_end") => AGENT_UPDATE_TEXT_END,
        Some("thinking_start") => AGENT_UPDATE_THINKING_START,
        Some("thinking_delta") => AGENT_UPDATE_THINKING_DELTA,
        Some("thinking_end") => AGENT_UPDATE_THINKING_END,
        Some("toolcall_start") => AGENT_UPDATE_TOOLCALL_START,
        Some("toolcall_delta") => AGENT_UPDATE_TOOLCALL_DELTA,
        Some("toolcall_end") => AGENT_UPDATE_TOOLCALL_END,
        _ => AGENT_UPDATE_OTHER,
    }
}

fn shape_of(shape: AgentEventShape) -> FfiResult<EventShape> {
    match shape {
        AGENT_EVENT_SHAPE_FULL => Ok(EventShape::Full),
        AGENT_EVENT_SHAPE_LEAN => Ok(EventShape::Lean),
        other => err(
            AGENT_ERR_INVALID_ARGUMENT,
            format!("Unknown event shape {other}."),
        ),
    }
}

/// The event a listener on this thread is being called with: inside its callback the event stays
/// readable even when another thread frees the agent meanwhile (the handle lookup would fail;
/// the delivery itself is alive). It lives in `host_listener`'s frame during the callback; the
/// thread's `DELIVERING` points to it then (one pointer set and restored per call).
struct Delivering {
    source: u64,
    sequence: u64,
    event: *const CoreEvent,
    cache: *const EventCache,
    signal: *const AbortSignal,
    /// Set by `agent_event_defer` during the callback.
    deferred: std::cell::Cell<bool>,
}

thread_local! {
    static DELIVERING: std::cell::Cell<*const Delivering> =
        const { std::cell::Cell::new(std::ptr::null()) };
}

/// Makes a delivery the thread's current one until dropped, then the one before it again.
struct CurrentDelivery(*const Delivering);

impl CurrentDelivery {
    fn enter(delivering: &Delivering) -> Self {
        CurrentDelivery(DELIVERING.replace(delivering))
    }
}

impl Drop for CurrentDelivery {
    fn drop(&mut self) {
        DELIVERING.set(self.0);
    }
}

/// What a host wants to do with an event struct.
#[derive(PartialEq)]
enum EventUse {
    Read,
    Defer,
}

/// The event an event struct refers to, and its view.
enum Found<'a> {
    /// A listener's event during its callback on this thread (borrowed from the delivery).
    Delivering(&'a Delivering),
    /// A queue's event, or a deferred listener's event until its reply is answered.
    Kept(Arc<EventView>),
}

/// Finds what an event struct refers to: the event a listener on this thread is being called
/// with, the event a queue returned last, or (to read it) an event whose deferring listener has
/// not answered yet. Anything else (a copy kept after its callback, or used from another thread
/// during it) is refused: its run may have moved on.
fn find<'a>(event: *const AgentEvent, purpose: EventUse) -> FfiResult<Found<'a>> {
    // SAFETY: the caller passes NULL or a readable event struct.
    let Some(event) = (unsafe { event.as_ref() }) else {
        return err(AGENT_ERR_NULL, "event is NULL.");
    };
    // SAFETY: non-null only while `host_listener` calls a callback on this thread, which the
    // caller (a function the host calls) is inside of: the frame outlives this call.
    let delivering = unsafe { DELIVERING.get().as_ref() };
    if let Some(delivering) =
        delivering.filter(|d| d.source == event.source && d.sequence == event.sequence)
    {
        return Ok(Found::Delivering(delivering));
    }
    let view = match QUEUES.lookup(event.source) {
        Lookup::Live(queue) => lock(&queue.current).clone(),
        _ => match AGENTS.lookup(event.source) {
            Lookup::Live(agent) if purpose == EventUse::Read => lock(&agent.event_cache.current)
                .clone()
                .filter(|view| view.awaiting_reply.load(Ordering::SeqCst)),
            _ => None,
        },
    };
    match view {
        Some(view) if view.sequence == event.sequence && view.owned.get().is_some() => {
            Ok(Found::Kept(view))
        }
        _ => err(
            AGENT_ERR_INVALID_ARGUMENT,
            "event is no longer valid: a listener's event may be read or deferred only inside its callback, on the thread that called it (read until its reply is answered when it deferred), a queue's event until the next call on the queue.",
        ),
    }
}

impl Delivering {
    /// The view of this delivery's event.
    fn view(&self) -> Arc<EventView> {
        // SAFETY: set by `host_listener` for the duration of the callback, on this thread.
        let (cache, signal) = unsafe { (&*self.cache, &*self.signal) };
        cache.view(self.sequence, signal)
    }

    fn event(&self) -> &CoreEvent {
        // SAFETY: as above: the delivery keeps the event in place during the callback.
        unsafe { &*self.event }
    }
}

/// A view whose listener may have deferred (`agent_event_defer` marks it as waiting for the
/// reply): unmarked when dropped (answered, or given up on).
struct AwaitingReply(Arc<EventView>);

impl Drop for AwaitingReply {
    fn drop(&mut self) {
        self.0.awaiting_reply.store(false, Ordering::SeqCst);
    }
}

/// The core listener behind a C callback: the struct borrows from the event being delivered; a
/// view is made only when the host asks for JSON, a tool event's texts or a deferred answer.
fn host_listener(
    callback: unsafe extern "C" fn(*mut c_void, *const AgentEvent) -> AgentListenerAnswer,
    data: Arc<HostData>,
    cache: Arc<EventCache>,
    source: u64,
) -> ImmediateListener {
    Arc::new(move |delivered: EventRef, signal: &AbortSignal| {
        let sequence = delivered.sequence;
        let c_event = to_c(delivered.event, source, sequence, || {
            cache.view(sequence, signal)
        });
        let mut answer_given = AGENT_LISTENER_CONTINUE;
        let delivering = Delivering {
            source,
            sequence,
            event: delivered.event,
            cache: &*cache,
            signal,
            deferred: std::cell::Cell::new(false),
        };
        {
            // Restored when the call is over, however it ends (the frame must not outlive its
            // pointer): a listener's callback may run another agent's listeners.
            let _current = CurrentDelivery::enter(&delivering);
            // SAFETY: the host registered this callback for this user_data.
            guard_callback(|| answer_given = unsafe { callback(data.user_data, &c_event) });
        }
        let deferred_during = delivering.deferred.get();
        if !deferred_during {
            return match answer_given {
                AGENT_LISTENER_LATER => Delivery::Now(Err(
                    "The listener returned AGENT_LISTENER_LATER without calling agent_event_defer."
                        .into(),
                )),
                _ => Delivery::Now(Ok(())),
            };
        }
        let view = cache.view(sequence, signal);
        let deferred = lock(&view.deferred).take();
        // Set by agent_event_defer; kept only while a reply is still to come.
        let awaiting = AwaitingReply(view);
        match (answer_given, deferred) {
            (AGENT_LISTENER_LATER, Some(pending)) => match pending.answer() {
                Answer::Now(result) => Delivery::Now(result.map(|_| ())),
                Answer::Later(rx) => {
                    let reply = answer(rx);
                    Delivery::Later(Box::pin(async move {
                        let result = reply.await;
                        drop(awaiting);
                        result.map(|_| ())
                    }))
                }
            },
            (AGENT_LISTENER_LATER, None) => Delivery::Now(Err(
                "The listener returned AGENT_LISTENER_LATER without calling agent_event_defer."
                    .into(),
            )),
            (_, deferred) => {
                // Answered by returning: a reply it took is retired (a later answer is refused).
                if let Some(pending) = deferred {
                    pending.retire();
                }
                Delivery::Now(Ok(()))
            }
        }
    })
}

/// Subscribes a listener; every call creates a distinct subscription, called after the existing
/// ones (also for the event being dispatched, when called from inside a listener). Writes
/// `*out_id` for `agent_unsubscribe`. `finalizer(user_data)` runs once the subscription is gone.
#[no_mangle]
pub unsafe extern "C" fn agent_subscribe(
    handle: AgentHandle,
    listener: AgentListenerFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
    out_id: *mut u64,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_id, "out_id")?;
        let ffi = agent_arg(handle)?;
        let Some(callback) = listener else {
            return err(AGENT_ERR_NULL, "listener is NULL.");
        };
        let listener = host_listener(
            callback,
            ffi.home(&HostData::new(user_data, finalizer)),
            ffi.event_cache.clone(),
            handle.id,
        );
        write_out(out_id, ffi.agent.subscribe_immediate(listener));
        Ok(())
    })
}

/// Removes a subscription; `AGENT_ERR_INVALID_ARGUMENT` when there is none with that id.
#[no_mangle]
pub extern "C" fn agent_unsubscribe(handle: AgentHandle, id: u64) -> *mut AgentError {
    boundary(|| {
        if agent_arg(handle)?.agent.unsubscribe(id) {
            Ok(())
        } else {
            err(
                AGENT_ERR_INVALID_ARGUMENT,
                format!("There is no subscription {id}."),
            )
        }
    })
}

/// Writes the event's JSON in `shape` to `*out_json` (NUL-terminated too), built once and shared
/// with the other listeners; valid as long as the event (do not free). Fails with
/// `AGENT_ERR_INVALID_ARGUMENT` for an event that is no longer valid: a listener's event is valid
/// inside its callback on the thread that called it, and, when the listener deferred, from any
/// thread until the reply is answered; a queue's event until the next call on that queue.
#[no_mangle]
pub unsafe extern "C" fn agent_event_json(
    event: *const AgentEvent,
    shape: AgentEventShape,
    out_json: *mut AgentStr,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let shape = shape_of(shape)?;
        let json = match find(event, EventUse::Read)? {
            // The agent's cache keeps the view, and so the text, until a later event's view
            // replaces it.
            Found::Delivering(delivering) => {
                c_text(delivering.view().json(shape, delivering.event()))
            }
            Found::Kept(view) => {
                let event = view.owned.get().expect("a kept view owns its event");
                c_text(view.json(shape, event))
            }
        };
        write_out(out_json, json);
        Ok(())
    })
}

/// Inside a listener: answer this event later. Writes `*out_reply`; the listener then returns
/// `AGENT_LISTENER_LATER`, and the next listener and the loop wait until the reply is answered
/// (`agent_reply_continue` or `agent_reply_fail`, once, from any thread). Only inside the
/// listener's callback, on the thread that called it: elsewhere (another thread, or a copy kept
/// after the callback) it fails with `AGENT_ERR_INVALID_ARGUMENT`. Fails with
/// `AGENT_ERR_INVALID_STATE` for a queue's event and when called twice for one delivery.
#[no_mangle]
pub unsafe extern "C" fn agent_event_defer(
    event: *const AgentEvent,
    out_reply: *mut AgentReply,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_reply, "out_reply")?;
        let delivering = match find(event, EventUse::Defer)? {
            Found::Delivering(delivering) => delivering,
            Found::Kept(_) => {
                return err(
                    AGENT_ERR_INVALID_STATE,
                    "A queue's event has no listener to answer for.",
                )
            }
        };
        let view = delivering.view();
        let Some(signal) = &view.signal else {
            return err(
                AGENT_ERR_INVALID_STATE,
                "A queue's event has no listener to answer for.",
            );
        };
        let mut deferred = lock(&view.deferred);
        if deferred.is_some() {
            return err(
                AGENT_ERR_INVALID_STATE,
                "agent_event_defer was already called for this event.",
            );
        }
        let pending = new_value_call(Shape::Reply, signal);
        write_out(out_reply, AgentReply { id: pending.token });
        *deferred = Some(pending);
        drop(deferred);
        // From now on the reply may be answered from any thread, which may read the event: the
        // view keeps its own copy.
        view.owned
            .get_or_init(|| Arc::new(delivering.event().clone()));
        view.awaiting_reply.store(true, Ordering::SeqCst);
        delivering.deferred.set(true);
        Ok(())
    })
}

/// Answers a deferred listener: the next listener and the loop go on.
#[no_mangle]
pub extern "C" fn agent_reply_continue(reply: AgentReply) -> *mut AgentError {
    boundary(|| super::call::answer_reply(reply.id, Ok(())))
}

/// Answers a deferred listener with a failure: the run fails with `message` (SPEC §7.11).
#[no_mangle]
pub unsafe extern "C" fn agent_reply_fail(
    reply: AgentReply,
    message: *const c_char,
    message_len: usize,
) -> *mut AgentError {
    boundary(|| {
        let message = str_arg(message, message_len, "message")?.to_string();
        super::call::answer_reply(reply.id, Err(message))
    })
}

/// A pull queue of events, fed by a subscription (a generation-checked value; `{0}` is the null
/// handle).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentQueue {
    pub id: u64,
}

/// What `agent_queue_next` found: one of the `AGENT_NEXT_*` values.
pub type AgentNext = i32;
/// An event was written.
pub const AGENT_NEXT_EVENT: AgentNext = 0;
/// No event arrived in time.
pub const AGENT_NEXT_TIMEOUT: AgentNext = 1;
/// The agent was freed and the queue is empty: no event will come.
pub const AGENT_NEXT_CLOSED: AgentNext = 2;

/// A core queue, the event last taken from it, and a sequence number per taken event.
pub(crate) struct FfiQueue {
    queue: CoreQueue,
    current: Mutex<Option<Arc<EventView>>>,
    sequence: AtomicU64,
}

static QUEUES: Registry<Arc<FfiQueue>> = Registry::new("event queue", 0x9e9e_9e9e_0000_0000);

/// Opens a pull queue that receives every event of the agent, losslessly and in order.
/// `options_json` (NULL = defaults): `{"capacity": N (default 1024)}`. When full, the loop waits
/// until the host takes an event. Enqueueing counts as delivery: the queue never fails a run.
/// Writes `*out_queue`. An agent being freed concurrently either closes the new queue or makes
/// this call fail.
#[no_mangle]
pub unsafe extern "C" fn agent_queue_open(
    handle: AgentHandle,
    options_json: *const c_char,
    options_json_len: usize,
    out_queue: *mut AgentQueue,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_queue, "out_queue")?;
        let ffi = agent_arg(handle)?;
        let options = opt_json_arg(options_json, options_json_len, "options_json")?
            .unwrap_or_else(|| Json::Object(Default::default()));
        let Json::Object(options) = options else {
            return err(
                AGENT_ERR_INVALID_JSON,
                "options_json must be a JSON object.",
            );
        };
        let mut capacity = 1024;
        for (key, value) in &options {
            match (key.as_str(), value) {
                ("capacity", v) if v.as_u64().is_some_and(|n| n >= 1) => {
                    capacity = v.as_u64().unwrap_or(1) as usize
                }
                ("capacity", _) => {
                    return err(AGENT_ERR_INVALID_JSON, "capacity must be an integer >= 1.")
                }
                _ => return err(AGENT_ERR_INVALID_JSON, format!("Unknown option \"{key}\".")),
            }
        }
        let queue = ffi.agent.open_events(capacity).map_err(|_| FfiError {
            status: AGENT_ERR_INVALID_HANDLE,
            message: "agent is a freed agent.".into(),
        })?;
        let queue = Arc::new(FfiQueue {
            queue,
            current: Mutex::new(None),
            sequence: AtomicU64::new(0),
        });
        write_out(
            out_queue,
            AgentQueue {
                id: QUEUES.insert(queue),
            },
        );
        Ok(())
    })
}

/// Takes the next event, waiting up to `timeout_ms` (< 0: forever; 0: no wait). Writes
/// `*out_next`: `AGENT_NEXT_EVENT` (and `*out_event`, valid until the next call on this queue),
/// `AGENT_NEXT_TIMEOUT` or `AGENT_NEXT_CLOSED`. Fails with `AGENT_ERR_WOULD_DEADLOCK` when it
/// would wait on the runtime thread. JSON, if asked with `agent_event_json`, is built on the
/// asking thread.
#[no_mangle]
pub unsafe extern "C" fn agent_queue_next(
    queue: AgentQueue,
    timeout_ms: i64,
    out_event: *mut AgentEvent,
    out_next: *mut AgentNext,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_event, "out_event")?;
        check_out(out_next, "out_next")?;
        let ffi_queue = QUEUES.get(queue.id, "queue")?;
        let timeout = (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64));
        let event = match ffi_queue.queue.next_blocking(timeout) {
            Ok(event) => event,
            Err(e) if e.kind == ErrorKind::Timeout => {
                write_out(out_next, AGENT_NEXT_TIMEOUT);
                return Ok(());
            }
            Err(e) if e.kind == ErrorKind::Closed => {
                write_out(out_next, AGENT_NEXT_CLOSED);
                return Ok(());
            }
            Err(e) => {
                return Err(FfiError::from(e).named(
                    ErrorKind::WouldDeadlock,
                    "agent_queue_next would wait on the runtime thread.",
                ))
            }
        };
        let sequence = ffi_queue.sequence.fetch_add(1, Ordering::Relaxed) + 1;
        let view = Arc::new(EventView::queued(event.clone(), sequence));
        let c_event = to_c(&event, queue.id, sequence, || view.clone());
        let previous = lock(&ffi_queue.current).replace(view);
        drop(previous);
        write_out(out_event, c_event);
        write_out(out_next, AGENT_NEXT_EVENT);
        Ok(())
    })
}

/// Closes and frees a queue: its subscription ends (a loop waiting on it resumes).
#[no_mangle]
pub extern "C" fn agent_queue_close(queue: AgentQueue) -> *mut AgentError {
    boundary(|| {
        QUEUES.get(queue.id, "queue")?;
        if let Some(queue) = QUEUES.remove(queue.id) {
            queue.queue.close();
        }
        Ok(())
    })
}

//! Events for the host: listeners receiving lazy event views, and the lossless pull queue.

use std::ffi::{c_char, c_void, CStr, CString};

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::agent::{agent_arg, AgentHandle};
use super::call::{answer, new_value_call_in, AgentCall, Answer, Shape, SpareCall};
use super::handles::Registry;
use super::*;
use crate::agent::EventQueue as CoreQueue;
use crate::error::ErrorKind;
use crate::event::{AgentEvent as CoreEvent, EventShape};
use crate::host::{AbortSignal, Delivery, ImmediateListener};
use crate::json::Json;
use crate::sync::lock;

/// An event borrowed by a listener for the duration of its callback.
pub struct CAgentEvent {
    _private: [u8; 0],
}

/// Which JSON shape of an event: `AGENT_EVENT_SHAPE_FULL` (the reference's event object) or
/// `AGENT_EVENT_SHAPE_LEAN` (`message_update` without the whole partial message; a
/// `toolcall_delta` keeps that block's parsed `arguments`).
///
/// Cost of building an event's JSON: `full` is O(size of the partial message) for every
/// `message_update`, so O(N^2) over a response streamed in N deltas. `lean` is O(size of the
/// event) for text and thinking deltas, and for a `toolcall_delta` O(size of that tool call's
/// parsed arguments so far), because it contains them: over a tool call streamed in N deltas that
/// is O(N^2) too. A listener that only needs the new text reads `agent_event_delta` (the raw
/// argument text for a `toolcall_delta`) and pays O(1); not asking for JSON at all keeps every
/// event O(1).
pub type AgentEventShape = i32;
/// The reference's event JSON.
pub const AGENT_EVENT_SHAPE_FULL: AgentEventShape = 0;
/// The lean event JSON (see `AgentEventShape` for its cost on `toolcall_delta`).
pub const AGENT_EVENT_SHAPE_LEAN: AgentEventShape = 1;

/// A listener (SPEC §7.11). Called on the runtime thread for every event, in subscription order;
/// the next listener and the loop wait until it answered through `call`:
/// `agent_call_complete(call, NULL)` to continue, `agent_call_fail(call, message)` to fail the
/// run. `event` is valid during the callback only.
pub type AgentListenerFn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, event: *const CAgentEvent, call: *mut AgentCall),
>;

/// One event as listeners see it, with its JSON built at most once per shape.
pub(crate) struct EventView {
    event: Arc<CoreEvent>,
    json: [OnceLock<CString>; 2],
}

/// The view of the event being dispatched, shared by the agent's listeners.
pub(crate) type EventCache = Arc<Mutex<Option<Arc<EventView>>>>;

static EVENTS: Registry<Arc<EventView>> = Registry::new("event", 0xe7e7_e7e7_0000_0000);

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

fn view_for(cache: &EventCache, event: &Arc<CoreEvent>) -> Arc<EventView> {
    let mut cached = lock(cache);
    if let Some(view) = cached
        .as_ref()
        .filter(|view| Arc::ptr_eq(&view.event, event))
    {
        return view.clone();
    }
    // The previous event's view, when nothing holds it any more, is reused for this one: no
    // allocation per event.
    let reusable = cached.as_mut().and_then(Arc::get_mut);
    let previous = match reusable {
        Some(reused) => {
            reused.json = Default::default();
            Some(std::mem::replace(&mut reused.event, event.clone()))
        }
        None => {
            let view = Arc::new(EventView {
                event: event.clone(),
                json: Default::default(),
            });
            cached.replace(view).map(|previous| previous.event.clone())
        }
    };
    let view = cached.clone().expect("a view was just stored");
    drop(cached);
    // The previous event is dropped outside the lock.
    drop(previous);
    view
}

fn type_c_str(event: &CoreEvent) -> &'static CStr {
    match event {
        CoreEvent::AgentStart => c"agent_start",
        CoreEvent::TurnStart => c"turn_start",
        CoreEvent::MessageStart { .. } => c"message_start",
        CoreEvent::MessageUpdate { .. } => c"message_update",
        CoreEvent::MessageEnd { .. } => c"message_end",
        CoreEvent::ToolExecutionStart { .. } => c"tool_execution_start",
        CoreEvent::ToolExecutionUpdate { .. } => c"tool_execution_update",
        CoreEvent::ToolExecutionEnd { .. } => c"tool_execution_end",
        CoreEvent::TurnEnd { .. } => c"turn_end",
        CoreEvent::AgentEnd { .. } => c"agent_end",
    }
}

fn event_arg(event: *const CAgentEvent) -> FfiResult<Arc<EventView>> {
    EVENTS.get(event as *const c_void, "event")
}

/// The core listener behind a C callback.
fn host_listener(
    callback: unsafe extern "C" fn(*mut c_void, *const CAgentEvent, *mut AgentCall),
    data: Arc<HostData>,
    cache: EventCache,
) -> ImmediateListener {
    let spare: Mutex<SpareCall> = Mutex::new(None);
    Arc::new(move |event: Arc<CoreEvent>, signal: AbortSignal| {
        let view = view_for(&cache, &event);
        let token = EVENTS.insert(view) as *const CAgentEvent;
        let pending = new_value_call_in(&mut lock(&spare), Shape::Any, &signal);
        // SAFETY: the host registered this callback for this user_data.
        guard_callback(|| unsafe { callback(data.user_data, token, pending.token) });
        // Dropped after the callback: the view may then be reused for the next event.
        drop(EVENTS.remove(token as *const c_void));
        match pending.answer() {
            Answer::Now(result) => {
                pending.recycle(&mut lock(&spare));
                Delivery::Now(result.map(|_| ()))
            }
            Answer::Later(rx) => {
                let reply = answer(rx);
                Delivery::Later(Box::pin(async move { reply.await.map(|_| ()) }))
            }
        }
    })
}

/// Subscribes a listener; every call creates a distinct subscription, called after the existing
/// ones (also for the event being dispatched, when called from inside a listener). Writes
/// `*out_id` for `agent_unsubscribe`. `finalizer(user_data)` runs once the subscription is gone.
#[no_mangle]
pub unsafe extern "C" fn agent_subscribe(
    handle: *mut AgentHandle,
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
            HostData::new(user_data, finalizer),
            ffi.event_cache.clone(),
        );
        write_out(out_id, ffi.agent.subscribe_immediate(listener));
        Ok(())
    })
}

/// Removes a subscription; `AGENT_ERR_INVALID_ARGUMENT` when there is none with that id.
#[no_mangle]
pub unsafe extern "C" fn agent_unsubscribe(handle: *mut AgentHandle, id: u64) -> *mut AgentError {
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

/// Writes the event's type (`"message_update"`, ...; static, never freed) to `*out_type`.
#[no_mangle]
pub unsafe extern "C" fn agent_event_type(
    event: *const CAgentEvent,
    out_type: *mut *const c_char,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_type, "out_type")?;
        write_out(out_type, type_c_str(&event_arg(event)?.event).as_ptr());
        Ok(())
    })
}

/// Writes the event's JSON in `shape` to `*out_json`, built once and shared with the other
/// listeners; valid until the callback returns (do not free).
#[no_mangle]
pub unsafe extern "C" fn agent_event_json(
    event: *const CAgentEvent,
    shape: AgentEventShape,
    out_json: *mut *const c_char,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let shape = shape_of(shape)?;
        let view = event_arg(event)?;
        let slot = &view.json[shape as usize];
        let text =
            slot.get_or_init(|| CString::new(view.event.to_json_text(shape)).unwrap_or_default());
        write_out(out_json, text.as_ptr());
        Ok(())
    })
}

/// For a `message_update`, writes its assistant stream event type (`"text_delta"`, ...; valid
/// during the callback) to `*out_type`; for any other event writes NULL.
#[no_mangle]
pub unsafe extern "C" fn agent_event_update_type(
    event: *const CAgentEvent,
    out_type: *mut *const c_char,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_type, "out_type")?;
        let view = event_arg(event)?;
        let name = match view.event.update_type() {
            Some(kind) => update_type_c_str(kind).as_ptr(),
            None => std::ptr::null(),
        };
        write_out(out_type, name);
        Ok(())
    })
}

fn update_type_c_str(kind: &str) -> &'static CStr {
    match kind {
        "start" => c"start",
        "text_start" => c"text_start",
        "text_delta" => c"text_delta",
        "text_end" => c"text_end",
        "thinking_start" => c"thinking_start",
        "thinking_delta" => c"thinking_delta",
        "thinking_end" => c"thinking_end",
        "toolcall_start" => c"toolcall_start",
        "toolcall_delta" => c"toolcall_delta",
        "toolcall_end" => c"toolcall_end",
        _ => c"unknown",
    }
}

/// For a `message_update` carrying a `*_delta`, writes the delta text (UTF-8, not
/// NUL-terminated, valid during the callback) to `*out_text`/`*out_len` without building JSON;
/// for any other event writes NULL and 0.
#[no_mangle]
pub unsafe extern "C" fn agent_event_delta(
    event: *const CAgentEvent,
    out_text: *mut *const c_char,
    out_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_text, "out_text")?;
        check_out(out_len, "out_len")?;
        let view = event_arg(event)?;
        let (ptr, len) = match view.event.delta() {
            Some(delta) => (delta.as_ptr() as *const c_char, delta.len()),
            None => (std::ptr::null(), 0),
        };
        write_out(out_text, ptr);
        write_out(out_len, len);
        Ok(())
    })
}

/// An opaque pull queue of events (JSON strings), fed by a subscription.
pub struct AgentEventQueue {
    _private: [u8; 0],
}

/// A core queue and the JSON shape its events are rendered in (on the reading thread).
pub(crate) struct FfiQueue {
    queue: CoreQueue,
    shape: EventShape,
}

static QUEUES: Registry<Arc<FfiQueue>> = Registry::new("event queue", 0x9e9e_9e9e_0000_0000);

/// Opens a pull queue that receives every event of the agent as JSON, losslessly and in order.
/// `options_json` (NULL = defaults): `{"capacity": N (default 1024), "shape": "full"|"lean"
/// (default "full")}`. When full, the loop waits until the host takes an event. Enqueueing
/// counts as delivery: the queue never fails a run. Every event is serialised (on the reading
/// thread, in `agent_events_next`), so its cost per event is that of `agent_event_json` in the
/// queue's shape (see `AgentEventShape`). Writes `*out_queue`. An agent being freed concurrently
/// either closes the new queue or makes this call fail.
#[no_mangle]
pub unsafe extern "C" fn agent_events_open(
    handle: *mut AgentHandle,
    options_json: *const c_char,
    out_queue: *mut *mut AgentEventQueue,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_queue, "out_queue")?;
        let ffi = agent_arg(handle)?;
        let options = opt_json_arg(options_json, "options_json")?
            .unwrap_or_else(|| Json::Object(Default::default()));
        let Json::Object(options) = options else {
            return err(
                AGENT_ERR_INVALID_JSON,
                "options_json must be a JSON object.",
            );
        };
        let mut capacity = 1024;
        let mut shape = EventShape::Full;
        for (key, value) in &options {
            match (key.as_str(), value) {
                ("capacity", v) if v.as_u64().is_some_and(|n| n >= 1) => {
                    capacity = v.as_u64().unwrap_or(1) as usize
                }
                ("shape", Json::String(s)) if s == "full" => shape = EventShape::Full,
                ("shape", Json::String(s)) if s == "lean" => shape = EventShape::Lean,
                ("capacity", _) => {
                    return err(AGENT_ERR_INVALID_JSON, "capacity must be an integer >= 1.")
                }
                ("shape", _) => {
                    return err(
                        AGENT_ERR_INVALID_JSON,
                        "shape must be \"full\" or \"lean\".",
                    )
                }
                _ => return err(AGENT_ERR_INVALID_JSON, format!("Unknown option \"{key}\".")),
            }
        }
        let queue = ffi.agent.open_events(capacity).map_err(|_| FfiError {
            status: AGENT_ERR_INVALID_HANDLE,
            message: "agent is a freed agent.".into(),
        })?;
        let queue = Arc::new(FfiQueue { queue, shape });
        write_out(out_queue, QUEUES.insert(queue) as *mut AgentEventQueue);
        Ok(())
    })
}

/// Takes the next event JSON (free it with `agent_string_free`), waiting up to `timeout_ms`
/// (< 0: forever; 0: no wait). Returns `AGENT_ERR_TIMEOUT` when none arrived, `AGENT_ERR_CLOSED`
/// once the agent was freed and the queue is empty, and `AGENT_ERR_WOULD_DEADLOCK` when it would
/// wait on the runtime thread. The JSON is built here, on the calling thread.
#[no_mangle]
pub unsafe extern "C" fn agent_events_next(
    queue: *mut AgentEventQueue,
    timeout_ms: i64,
    out_event_json: *mut *mut c_char,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_event_json, "out_event_json")?;
        let queue = QUEUES.get(queue as *const c_void, "queue")?;
        let timeout = (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64));
        let event = queue.queue.next_blocking(timeout).map_err(|e| {
            FfiError::from(e).named(
                ErrorKind::WouldDeadlock,
                "agent_events_next would wait on the runtime thread.",
            )
        })?;
        let text = crate::json::to_string(&event.to_json(queue.shape));
        write_out(out_event_json, owned_c_string(&text));
        Ok(())
    })
}

/// Closes and frees a queue: its subscription ends (a loop waiting on it resumes).
#[no_mangle]
pub unsafe extern "C" fn agent_events_close(queue: *mut AgentEventQueue) -> *mut AgentError {
    boundary(|| {
        QUEUES.get(queue as *const c_void, "queue")?;
        if let Some(queue) = QUEUES.remove(queue as *const c_void) {
            queue.queue.close();
        }
        Ok(())
    })
}

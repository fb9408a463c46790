"""Events: the `Event` built from libagent's event struct (its JSON only when asked), push
subscriptions (listeners on the runtime thread, or inside dispatch) and the pull queue, which a
thread of its own reads for `async for`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import inspect
import threading
from typing import Any, Callable, Dict, Optional

from . import _dispatch as dispatch
from . import _native as native
from ._errors import AgentTimeoutError, InvalidArgumentError, InvalidHandleError, QueueClosedError

_SHAPES = {"full": native.EVENT_SHAPE_FULL, "lean": native.EVENT_SHAPE_LEAN}


def _shape(shape: str) -> int:
    if shape not in _SHAPES:
        raise ValueError(f'shape must be "full" or "lean", not {shape!r}')
    return _SHAPES[shape]


class Event:
    """One agent event (SPEC §2.7), read from libagent's struct without JSON:

    - `type`: "agent_start", "message_update", "tool_execution_end", ...;
    - `update`: for a message_update, the assistant stream event ("text_delta", "toolcall_end",
      ..., "other"); else None;
    - `delta`: the new text of a *_delta update (a toolcall_delta's next piece of argument JSON);
    - `content_index`: a message_update's contentIndex;
    - `tool_call_id`, `tool_name`: for tool_execution_* events;
    - `args_json`: for tool_execution_start, the arguments as JSON text (`json.loads` it).

    `json()` (or `event["key"]`) reads the whole event object, built once and only when asked.
    It is available while the event is delivered: inside the listener (also an `async`
    listener, until it returns), or for a stream's event until the next one is taken.
    """

    __slots__ = ("type", "update", "content_index", "delta", "tool_call_id", "tool_name", "args_json", "_raw", "_shape",
                 "_json")

    def __init__(self, raw: "native.AgentEvent", shape: int = native.EVENT_SHAPE_FULL):
        self._raw = native.AgentEvent()
        ctypes.pointer(self._raw)[0] = raw  # a copy: the struct passed to a listener is borrowed
        self.type: str = native.EVENT_TYPES.get(raw.kind, "unknown")
        self.update: Optional[str] = native.UPDATE_TYPES.get(raw.update, "other")
        self.content_index: int = raw.content_index
        self.delta: str = raw.delta.text()
        self.tool_call_id: str = raw.tool_call_id.text()
        self.tool_name: str = raw.tool_name.text()
        self.args_json: str = raw.args_json.text()
        self._shape = shape
        self._json: Dict[int, Dict[str, Any]] = {}

    def json(self, shape: Optional[str] = None) -> Dict[str, Any]:
        """The event object (`shape` "full": the reference's; "lean": a message_update without
        the whole partial message; default: the subscription's shape)."""
        kind = self._shape if shape is None else _shape(shape)
        if kind not in self._json:
            out = native.AgentStr()
            try:
                native.check(native.lib.agent_event_json(ctypes.byref(self._raw), kind, ctypes.byref(out)))
            except InvalidArgumentError:
                raise InvalidArgumentError(
                    f"The {self.type} event is no longer delivered: read event.json() inside the listener, "
                    "or before taking the next event from the stream.") from None
            self._json[kind] = native.loads(native.bytes_at(out.ptr, out.len))
        return self._json[kind]

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            return self.type
        return self.json()[key]

    def get(self, key: str, default: Any = None) -> Any:
        if key == "type":
            return self.type
        return self.json().get(key, default)

    def _fields(self) -> tuple:
        return (self.type, self.update, self.content_index, self.delta, self.tool_call_id, self.tool_name,
                self.args_json)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Event) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = [f"type={self.type!r}"]
        if self.update is not None:
            fields += [f"update={self.update!r}", f"content_index={self.content_index}"]
        if self.delta:
            fields.append(f"delta={self.delta!r}")
        if self.tool_call_id:
            fields += [f"tool_call_id={self.tool_call_id!r}", f"tool_name={self.tool_name!r}"]
        return f"Event({', '.join(fields)})"


class _ListenerSite:
    def __init__(self, fn: Callable[[Event], Any], shape: int, shared: Any):
        self.fn = fn
        self.shape = shape
        self.shared = shared


def _no_answer(_value: Any) -> None:
    return None


def _defer(event: Any) -> dispatch.ReplyCall:
    reply = native.AgentReply()
    native.check(native.lib.agent_event_defer(event, ctypes.byref(reply)))
    return dispatch.ReplyCall(reply)


def _listener(user_data: Optional[int], event: Any) -> int:
    # A listener answers by returning; a coroutine (or a failure) answers later through a reply.
    try:
        site = native.REGISTRY.get(user_data)
        loop = site.shared.loop if site.shared is not None else None
        try:
            result = site.fn(Event(event.contents, site.shape))
        except BaseException as error:  # noqa: BLE001 - fails the run (SPEC §7.11)
            dispatch.fail(_defer(event), dispatch.error_text(error))
            return native.LISTENER_LATER
        if inspect.isawaitable(result):
            dispatch.schedule(result, _defer(event), _no_answer, loop)
            return native.LISTENER_LATER
    except BaseException:  # noqa: BLE001 - never propagate into libagent
        dispatch.log.exception("libagent: a listener could not be called")
    return native.LISTENER_CONTINUE


LISTENER_TRAMPOLINE = native.ListenerFn(_listener)


class Subscription:
    """A listener subscription; `unsubscribe()` (idempotent) or leave its `with` block."""

    def __init__(self, agent: Any, subscription_id: int):
        self._agent = agent
        self.id = subscription_id
        self.active = True

    def unsubscribe(self) -> None:
        if not self.active:
            return
        self.active = False
        if not self._agent.closed:
            native.check(native.lib.agent_unsubscribe(self._agent.handle, self.id))

    __call__ = unsubscribe

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unsubscribe()


def new_subscription(agent: Any, fn: Callable[[Event], Any], shape: str, shared: Any) -> Subscription:
    site = _ListenerSite(fn, _shape(shape), shared)
    out = ctypes.c_uint64()
    native.register(site, lambda key: native.lib.agent_subscribe(agent.handle, LISTENER_TRAMPOLINE, key,
                                                                 native.FINALIZER, ctypes.byref(out)))
    return Subscription(agent, out.value)


_END = object()


class EventStream:
    """The events of one agent, losslessly and in order, from a pull queue (`agent_queue_open`).

    `for event in stream` / `async for event in stream`; `get(timeout)` takes one event. While
    nobody takes events and the queue is full (`capacity`), the agent's loop waits. Each item is
    an `Event`; its `json()` can be read until the next event is taken.
    """

    def __init__(self, handle: Any, *, shape: str = "full", capacity: int = 1024,
                 until: Optional[str] = None):
        self._shape = _shape(shape)
        self._queue = native.AgentQueue()
        native.check(native.lib.agent_queue_open(handle, *native.text(native.dumps({"capacity": capacity})),
                                                 ctypes.byref(self._queue)))
        self._until = until
        self._lock = threading.Lock()
        self._closed = False
        self._ended = False
        self._reader: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._slot = native.AgentEvent()

    def _take(self, timeout_ms: int) -> Any:
        """One event, _END once the stream is over, or None on a timeout. Runs on the caller's
        or the reader thread."""
        if self._ended:
            self.close()  # after `until`: closed at the next take, so that event's json() stays readable
            return _END
        found = ctypes.c_int32()
        try:
            native.check(native.lib.agent_queue_next(self._queue, timeout_ms, ctypes.byref(self._slot),
                                                     ctypes.byref(found)))
        except InvalidHandleError:
            if not self._closed:
                raise
            found.value = native.NEXT_CLOSED
        if found.value == native.NEXT_TIMEOUT:
            return None
        if found.value != native.NEXT_EVENT:
            self._ended = True
            return _END
        event = Event(self._slot, self._shape)
        if self._until is not None and event.type == self._until:
            self._ended = True
        return event

    def get(self, timeout: Optional[float] = None) -> Event:
        """The next event; AgentTimeoutError when none arrived within `timeout` seconds,
        QueueClosedError once the stream is over."""
        event = self._take(-1 if timeout is None else int(timeout * 1000))
        if event is None:
            raise AgentTimeoutError(f"No event arrived within {timeout} seconds.")
        if event is _END:
            raise QueueClosedError("The event stream is over.")
        return event

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Event:
        event = self._take(-1)
        if event is _END:
            raise StopIteration
        return event

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Event:
        with self._lock:
            if self._reader is None:
                self._reader = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="libagent-py-events")
        event = await asyncio.get_running_loop().run_in_executor(self._reader, self._take, -1)
        if event is _END:
            raise StopAsyncIteration
        return event

    def close(self) -> None:
        """Ends the stream (its subscription ends; a reader waiting on it wakes up)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reader, self._reader = self._reader, None
        native.take_error(native.lib.agent_queue_close(self._queue))
        if reader is not None:
            reader.shutdown(wait=False)

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> "EventStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except BaseException:  # noqa: BLE001
            pass

"""Events: push subscriptions (listeners on the runtime thread) and the pull queue, which a
thread of its own reads for `for` / `async for`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import threading
from typing import Any, Callable, Dict, Optional

from . import _dispatch as dispatch
from . import _native as native
from ._errors import ERR_CLOSED, ERR_INVALID_HANDLE, OK

_SHAPES = {"full": native.EVENT_SHAPE_FULL, "lean": native.EVENT_SHAPE_LEAN}


def _shape(shape: str) -> int:
    if shape not in _SHAPES:
        raise ValueError(f'shape must be "full" or "lean", not {shape!r}')
    return _SHAPES[shape]


class _ListenerSite:
    def __init__(self, fn: Callable[[Any], Any], shape: int, shared: Any):
        self.fn = fn
        self.shape = shape
        self.shared = shared


def _no_answer(_value: Any) -> None:
    return None


def _listener(user_data: Optional[int], event: int, call: int) -> None:
    try:
        native.mark_runtime_thread()
        site = native.REGISTRY.get(user_data)
        out = ctypes.c_char_p()
        native.check(native.lib.agent_event_json(event, site.shape, ctypes.byref(out)))
        value = native.loads(out.value)
        dispatch.run(site.fn, (value,), call, _no_answer, inline=True, loop=site.shared.loop)
    except BaseException as error:  # noqa: BLE001 - never propagate into libagent
        dispatch.fail(call, dispatch.error_text(error))


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


def new_subscription(agent: Any, fn: Callable[[Any], Any], shape: str, shared: Any) -> Subscription:
    key = native.REGISTRY.add(_ListenerSite(fn, _shape(shape), shared))
    out = ctypes.c_uint64()
    status = native.lib.agent_subscribe(agent.handle, LISTENER_TRAMPOLINE, key, native.FINALIZER,
                                        ctypes.byref(out))
    if status != OK:
        error = native.error_for_last(status)
        native.REGISTRY.release(key)
        raise error
    return Subscription(agent, out.value)


_END = object()


class EventStream:
    """The events of one agent, losslessly and in order, from a pull queue (`agent_events_open`).

    `for event in stream` / `async for event in stream`; `get(timeout)` takes one event. While
    nobody takes events and the queue is full (`capacity`), the agent's loop waits.
    """

    def __init__(self, handle: Optional[int], *, shape: str = "full", capacity: int = 1024,
                 until: Optional[str] = None):
        _shape(shape)
        out = ctypes.c_void_p()
        native.check(native.lib.agent_events_open(handle, native.dumps({"capacity": capacity, "shape": shape}),
                                                  ctypes.byref(out)))
        self._queue = out.value
        self._until = until
        self._lock = threading.Lock()
        self._closed = False
        self._ended = False
        self._reader: Optional[concurrent.futures.ThreadPoolExecutor] = None

    def _take(self, timeout_ms: int) -> Any:
        """One event, or _END once the stream is over. Runs on the caller's or the reader thread."""
        if self._ended:
            return _END
        out = ctypes.c_void_p()
        status = native.lib.agent_events_next(self._queue, timeout_ms, ctypes.byref(out))
        if status == OK:
            event = native.loads(native.take_string(out))
            if self._until is not None and event.get("type") == self._until:
                self._ended = True
                self.close()
            return event
        if status == ERR_CLOSED or (status == ERR_INVALID_HANDLE and self._closed):
            self._ended = True
            return _END
        raise native.error_for_last(status)

    def get(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The next event; AgentTimeoutError when none arrived within `timeout` seconds,
        QueueClosedError once the stream is over."""
        event = self._take(-1 if timeout is None else int(timeout * 1000))
        if event is _END:
            from ._errors import QueueClosedError
            raise QueueClosedError("The event stream is over.")
        return event

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Dict[str, Any]:
        event = self._take(-1)
        if event is _END:
            raise StopIteration
        return event

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Dict[str, Any]:
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
        native.lib.agent_events_close(self._queue)
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

"""Stream functions (the model): Python callables that turn a request into assistant stream events.

A stream function receives the request as a dict (`{"model", "context": {"messages"},
"options"}`) and returns, or is, any of:

- an iterable / generator of stream-event dicts (`{"type": "start"}`, `{"type": "text_delta",
  "contentIndex": 0, "delta": "Hi"}`, ..., `{"type": "done", "reason": "stop"}`; delta form, SPEC
  §3.7, or full form with `partial`);
- an iterable of plain strings: the text of one answer, streamed as text deltas;
- an async generator / async iterable of the same (`async def` with `yield`);
- a dict: the final assistant message (returned directly or from a coroutine).

Plain functions run on a worker thread, async ones on an event loop; each event is pushed as it
is produced. An exception before the first event fails the stream function (SPEC §6.12); after
it, it ends the stream with an `error` event carrying the exception's text. When the run is
aborted the binding stops iterating (closing the generator, cancelling a coroutine) and ends the
stream with `stopReason: "aborted"`.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Callable, Optional

from . import _dispatch as dispatch
from . import _native as native
from ._errors import AlreadyCompletedError, StreamClosedError

ABORTED_EVENT = {"type": "error", "reason": "aborted", "errorMessage": "Request was aborted"}
TERMINAL = ("done", "error")


class _Pump:
    def __init__(self, stream: "native.AgentStream"):
        self.call = dispatch.stream_call(stream)
        self.stream = self.call.handle
        self.aborted = threading.Event()
        self.finished = False
        self.pushed = False
        self.text_mode = False
        self.future: Any = None

    # -- pushing -------------------------------------------------------------------------------

    def _pushed(self, error: Any, terminal: bool = False) -> bool:
        """After a push: False once the stream no longer takes events."""
        if isinstance(error, StreamClosedError):
            self.finished = True
            return False
        if error is not None:
            raise error
        self.pushed = True
        self.finished = terminal
        return True

    def _push_raw(self, event: Any) -> bool:
        error = native.take_error(native.lib.agent_stream_push(self.stream, *native.text(native.dumps(event))))
        return self._pushed(error, isinstance(event, dict) and event.get("type") in TERMINAL)

    def _push_text(self, delta: str) -> bool:
        data = native.encode(delta)
        return self._pushed(native.take_error(native.lib.agent_stream_push_text_delta(self.stream, 0, data, len(data))))

    def _push_block(self, fn: Any) -> bool:
        return self._pushed(native.take_error(fn(self.stream, native.BLOCK_TEXT, 0)))

    def push(self, event: Any) -> bool:
        """Pushes one produced item; False once the stream no longer takes events. Plain strings
        stream one text block without JSON."""
        if self.finished:
            return False
        if isinstance(event, str):
            if not self.pushed:
                self.text_mode = True
                if not (self._push_raw({"type": "start"}) and self._push_block(native.lib.agent_stream_push_block_start)):
                    return False
            elif not self.text_mode:
                raise TypeError("a stream function yielded a str after event dicts")
            return self._push_text(event)
        if not isinstance(event, dict):
            raise TypeError(f"a stream function yielded {type(event).__name__}, not a dict or str")
        if self.text_mode:
            raise TypeError("a stream function yielded an event dict after text")
        return self._push_raw(event)

    # -- endings -------------------------------------------------------------------------------

    def end(self, final: Any = None) -> None:
        if self.finished:
            return
        if self.aborted.is_set():
            self._push_raw(ABORTED_EVENT)
            return
        if self.text_mode:
            if self._push_block(native.lib.agent_stream_push_block_end):
                self._push_raw({"type": "done", "reason": "stop"})
            return
        self.finished = True
        failure = self.call.complete(None if final is None else native.dumps(final))
        if failure is not None and not isinstance(failure, (StreamClosedError, AlreadyCompletedError)):
            dispatch.fail(self.call, failure.message)

    def fail(self, error: BaseException) -> None:
        if self.finished:
            return
        if self.aborted.is_set():
            self.end()  # ends with stopReason "aborted"
            return
        self.finished = True
        dispatch.fail(self.call, dispatch.error_text(error))

    def abort(self) -> None:
        self.aborted.set()
        future = self.future
        if future is not None:
            future.cancel()

    # -- consuming what the stream function produced ---------------------------------------------

    def consume(self, produced: Any, loop: Optional[asyncio.AbstractEventLoop]) -> None:
        """On a worker thread: the return value of a plain stream function."""
        try:
            if inspect.isawaitable(produced) or hasattr(produced, "__aiter__"):
                self.start_async(produced, loop)
                return
            if isinstance(produced, dict):
                self.end(produced)
                return
            iterator = iter(produced)
            try:
                for item in iterator:
                    if self.aborted.is_set() or not self.push(item):
                        break
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            self.end()
        except BaseException as error:  # noqa: BLE001 - becomes the stream's failure
            self.fail(error)

    def start_async(self, produced: Any, loop: Optional[asyncio.AbstractEventLoop]) -> None:
        target = loop if loop is not None and not loop.is_closed() else dispatch.BACKGROUND.loop()
        try:
            self.future = asyncio.run_coroutine_threadsafe(self.consume_async(produced), target)
        except RuntimeError:
            self.future = asyncio.run_coroutine_threadsafe(self.consume_async(produced),
                                                           dispatch.BACKGROUND.loop())
        # A task cancelled before its first step never runs its body: end the stream from here.
        self.future.add_done_callback(self._after)
        if self.aborted.is_set():
            self.future.cancel()

    def _after(self, future: Any) -> None:
        if not self.finished:  # cancelled (abort, or the loop shut down) before or while running
            self.fail(asyncio.CancelledError())

    async def consume_async(self, produced: Any) -> None:
        try:
            if inspect.isawaitable(produced):
                produced = await produced
            if isinstance(produced, dict):
                self.end(produced)
                return
            if hasattr(produced, "__aiter__"):
                iterator = produced.__aiter__()
                try:
                    async for item in iterator:
                        if self.aborted.is_set() or not self.push(item):
                            break
                finally:
                    close = getattr(iterator, "aclose", None)
                    if close is not None:
                        await close()
                self.end()
                return
            # A coroutine returning a plain iterable: iterate it here (it is already produced).
            for item in produced:
                if self.aborted.is_set() or not self.push(item):
                    break
            self.end()
        except BaseException as error:  # noqa: BLE001 - including CancelledError on abort
            self.fail(error)


class StreamSite:
    """The registry entry of a stream function."""

    def __init__(self, fn: Callable[[Any], Any], shared: Any):
        self.fn = fn
        self.shared = shared


def _stream(user_data: Optional[int], request_json: Optional[int], request_len: int, stream: Any) -> None:
    pump = None
    try:
        site = native.REGISTRY.get(user_data)
        pump = _Pump(stream)
        request = native.loads(native.bytes_at(request_json, request_len))
        pump.call.on_abort(pump.abort)
        shared = site.shared
        loop = shared.loop if shared is not None else None
        fn = site.fn
        if inspect.isasyncgenfunction(fn) or inspect.iscoroutinefunction(fn):
            pump.start_async(fn(request), loop)
            return

        def body() -> None:
            try:
                produced = fn(request)
            except BaseException as error:  # noqa: BLE001
                pump.fail(error)
                return
            pump.consume(produced, loop)

        if shared is not None and shared.inline:
            body()  # host-pumped: on the dispatching thread
        else:
            dispatch.BACKGROUND.executor().submit(body)
    except BaseException as error:  # noqa: BLE001 - never propagate into libagent
        if pump is not None:
            pump.fail(error)


STREAM_TRAMPOLINE = native.StreamFn(_stream)

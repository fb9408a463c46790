"""Where host code runs, and how its outcome answers a call (a hook call, a tool call, a
stream, a deferred listener).

libagent calls back on its runtime thread, which every agent of the process shares: a callback
must return quickly. So:

- plain functions that may block (tools, hooks, the coding pack's consent, stream functions) run
  on a worker thread pool; only their own run waits for them;
- coroutines run on an event loop: the caller's loop while `prompt_async`/`continue_async` is
  awaited there, otherwise a loop the binding owns in a background thread;
- plain listeners and a tool's `prepare_arguments` run inline on the runtime thread: they answer
  by returning (a listener's event is readable only then), so they must not block (make a
  listener `async def`, or read `Agent.events()`, for slow work).

An agent built with a dispatcher (host-pumped mode) runs every plain callback inline, inside
`Dispatcher.dispatch` on the pumping thread.

Every outcome answers its call exactly once: a value through the kind's `*_complete` function, an
exception (or a value libagent rejects) through its `*_fail`. Nothing here lets an exception
escape into a ctypes trampoline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from ctypes import byref, c_bool, c_int32, c_size_t
from typing import Any, Callable, Optional

from . import _native as native
from ._errors import AlreadyCompletedError, InvalidJsonError, StreamClosedError

log = logging.getLogger("libagent")


class _Background:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="libagent-py-loop", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=32, thread_name_prefix="libagent-py-worker")
            return self._executor


BACKGROUND = _Background()


def error_text(error: BaseException) -> str:
    if isinstance(error, (asyncio.CancelledError, concurrent.futures.CancelledError)):
        return "The operation was aborted."
    return str(error) or type(error).__name__


class Call:
    """A call libagent waits for an answer to: its handle and the C functions of its kind."""

    def __init__(self, handle: Any, prefix: str, complete: str = "complete"):
        self.handle = type(handle)(handle.id)  # a copy: the callback's argument is borrowed
        self._complete = getattr(native.lib, f"{prefix}_{complete}")
        self._fail = getattr(native.lib, f"{prefix}_fail")
        self._prefix = prefix

    def complete(self, data: Optional[bytes]) -> Any:
        """Answers with `data` (JSON, or None); returns the error (an exception) or None."""
        return native.take_error(self._complete(self.handle, *native.text(data)))

    def fail(self, message: str) -> Any:
        return native.take_error(self._fail(self.handle, *native.text(native.encode(message))))

    def is_aborted(self) -> bool:
        out = c_bool(False)
        failure = native.take_error(getattr(native.lib, f"{self._prefix}_is_aborted")(self.handle, byref(out)))
        return bool(out.value) if failure is None else False

    def on_abort(self, callback: Callable[[], Any]) -> None:
        """Calls `callback()` once when the call's run aborts (never inside the abort call)."""
        register = getattr(native.lib, f"{self._prefix}_on_abort")
        try:
            native.register(callback, lambda key: register(self.handle, ABORT_TRAMPOLINE, key, native.FINALIZER))
        except Exception:  # noqa: BLE001 - the call is over: nothing to abort any more
            pass


def hook_call(handle: Any) -> Call:
    return Call(handle, "agent_hook_call")


def tool_call(handle: Any) -> Call:
    return Call(handle, "agent_tool_call")


def stream_call(handle: Any) -> Call:
    return Call(handle, "agent_stream", complete="end")


class ReplyCall(Call):
    """A deferred listener's answer: any value continues (the listener's return value is unused)."""

    def __init__(self, handle: Any):
        super().__init__(handle, "agent_reply", complete="continue")

    def complete(self, data: Optional[bytes]) -> Any:
        return native.take_error(self._complete(self.handle))


_ANSWERED = (AlreadyCompletedError, StreamClosedError)  # answered before / stream gone: nothing to do


def fail(call: Call, message: str) -> None:
    failure = call.fail(message)
    if failure is not None and not isinstance(failure, _ANSWERED):
        log.warning("libagent: failing a call failed: %s", failure)


def finish(call: Call, convert: Callable[[Any], Optional[bytes]], outcome: Callable[[], Any]) -> None:
    """Answers `call` with convert(outcome()) or with the failure it raised."""
    try:
        data = convert(outcome())
    except BaseException as error:  # noqa: BLE001 - becomes the call's failure
        fail(call, error_text(error))
        return
    failure = call.complete(data)
    if isinstance(failure, InvalidJsonError):
        # libagent left the call unanswered: a wrongly shaped answer fails instead of hanging.
        fail(call, failure.message)
    elif failure is not None and not isinstance(failure, _ANSWERED):
        log.warning("libagent: answering a call failed: %s", failure)


def schedule(coro: Any, call: Call, convert: Callable[[Any], Optional[bytes]],
             loop: Optional[asyncio.AbstractEventLoop], cancel_on_abort: bool = False) -> None:
    """Runs an awaitable on `loop` (or the background loop) and answers `call` with its result."""
    future = None
    if loop is not None and not loop.is_closed():
        try:
            future = asyncio.run_coroutine_threadsafe(_awaited(coro), loop)
        except RuntimeError:
            future = None
    if future is None:
        future = asyncio.run_coroutine_threadsafe(_awaited(coro), BACKGROUND.loop())
    if cancel_on_abort:
        call.on_abort(future.cancel)
    future.add_done_callback(lambda done: finish(call, convert, done.result))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def run(fn: Callable[..., Any], args: tuple, call: Call, convert: Callable[[Any], Optional[bytes]], *,
        inline: bool, loop: Optional[asyncio.AbstractEventLoop], cancel_on_abort: bool = False) -> None:
    """Calls fn(*args) inline or on a worker; a coroutine result is awaited on an event loop."""
    if inspect.iscoroutinefunction(fn):
        try:
            coro = fn(*args)
        except BaseException as error:  # noqa: BLE001
            fail(call, error_text(error))
            return
        schedule(coro, call, convert, loop, cancel_on_abort)
        return

    def body() -> None:
        try:
            result = fn(*args)
        except BaseException as error:  # noqa: BLE001
            fail(call, error_text(error))
            return
        if inspect.isawaitable(result):
            schedule(result, call, convert, loop, cancel_on_abort)
        else:
            finish(call, convert, lambda: result)

    if inline:
        body()
    else:
        BACKGROUND.executor().submit(body)


# -- abort notifications -------------------------------------------------------------------------

def _abort_trampoline(user_data: Optional[int]) -> None:
    try:
        callback = native.REGISTRY.get(user_data)
        if callback is not None:
            callback()
    except BaseException:  # noqa: BLE001
        log.exception("libagent: an abort callback failed")


ABORT_TRAMPOLINE = native.AbortFn(_abort_trampoline)


# -- host-pumped mode ----------------------------------------------------------------------------

_PUMPING = threading.local()


class pumping:
    """Marks the calling thread as inside a dispatch or a blocking wait (which dispatches): a
    blocking run started there, from a dispatched callback, could never be waited for (libagent
    refuses the wait, the run would go on unwaited)."""

    def __enter__(self) -> None:
        _PUMPING.depth = getattr(_PUMPING, "depth", 0) + 1

    def __exit__(self, *exc: Any) -> None:
        _PUMPING.depth -= 1


def in_callback() -> bool:
    """Whether this thread runs libagent callbacks now: the runtime thread, or a dispatch."""
    return native.on_runtime_thread() or getattr(_PUMPING, "depth", 0) > 0


class Dispatcher:
    """Runs the callbacks of the agents built with it (`Agent(dispatcher=...)`) on the host's
    thread: their tools, stream functions, hooks, listeners and run endings run only inside
    `dispatch()` (and inside `Run.wait()`/`prompt()`, which dispatch while they wait), never on
    libagent's runtime thread. Several agents may share one dispatcher."""

    def __init__(self) -> None:
        self.handle = native.AgentDispatcher()
        native.check(native.lib.agent_dispatcher_new(byref(self.handle)))
        self._closed = False

    def dispatch(self, budget_ms: Optional[int] = None) -> int:
        """Runs the callbacks that are ready, on this thread, until none is or `budget_ms`
        milliseconds passed (checked between callbacks; None: no limit). Returns how many ran."""
        ran = c_size_t()
        with pumping():
            native.check(native.lib.agent_dispatch(self.handle, -1 if budget_ms is None else budget_ms, byref(ran)))
        return ran.value

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until a callback is ready to dispatch (True) or `timeout` seconds passed (False)."""
        result = c_int32()
        native.check(native.lib.agent_dispatcher_wait(self.handle, -1 if timeout is None else int(timeout * 1000),
                                                     byref(result)))
        return result.value == native.WAIT_DONE

    def close(self) -> None:
        """Frees the dispatcher, first running on this thread the finalizers still queued (those of
        agents closed before it); agents still open keep it (close it after them)."""
        if not self._closed:
            self._closed = True
            native.check(native.lib.agent_dispatcher_free(self.handle))

    def __enter__(self) -> "Dispatcher":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except BaseException:  # noqa: BLE001
            pass

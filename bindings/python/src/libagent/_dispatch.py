"""Where host code runs, and how its outcome answers an `AgentCall`.

libagent calls back on its runtime thread, which every agent of the process shares: a callback
must return quickly. So:

- plain functions that may block (tools, stream functions) run on a worker thread pool;
- coroutines run on an event loop: the caller's loop while `prompt_async`/`continue_async` is
  awaited there, otherwise a loop the binding owns in a background thread;
- listeners and plain hooks run inline on the runtime thread (they are expected to be quick;
  make them `async def` when they are not).

Every outcome answers its call exactly once: a value through `agent_call_complete`, an exception
(or a value libagent rejects) through `agent_call_fail`. Nothing here lets an exception escape
into a ctypes trampoline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import inspect
import logging
import threading
from typing import Any, Callable, Optional

from . import _native as native
from ._errors import ERR_INVALID_JSON, OK

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


def fail(call: int, message: str) -> None:
    status = native.lib.agent_call_fail(call, native.encode(message))
    if status != OK and status not in (-7, -8):  # already answered / stream gone: nothing to do
        log.warning("libagent: agent_call_fail returned %d: %s", status, native.last_error())


def finish(call: int, convert: Callable[[Any], Optional[bytes]], outcome: Callable[[], Any]) -> None:
    """Answers `call` with convert(outcome()) or with the failure it raised."""
    try:
        data = convert(outcome())
    except BaseException as error:  # noqa: BLE001 - becomes the call's failure
        fail(call, error_text(error))
        return
    status = native.lib.agent_call_complete(call, data)
    if status == ERR_INVALID_JSON:
        # libagent left the call unanswered: a wrongly shaped answer fails instead of hanging.
        fail(call, native.last_error())


def schedule(coro: Any, call: int, convert: Callable[[Any], Optional[bytes]],
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
        on_abort(call, future.cancel)
    future.add_done_callback(lambda done: finish(call, convert, done.result))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def run(fn: Callable[..., Any], args: tuple, call: int, convert: Callable[[Any], Optional[bytes]], *,
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
        native.mark_runtime_thread()
        callback = native.REGISTRY.get(user_data)
        if callback is not None:
            callback()
    except BaseException:  # noqa: BLE001
        log.exception("libagent: an abort callback failed")


ABORT_TRAMPOLINE = native.AbortFn(_abort_trampoline)


def on_abort(call: int, callback: Callable[[], Any]) -> None:
    """Calls `callback()` (on the runtime thread) when the run of `call` aborts."""
    key = native.REGISTRY.add(callback)
    status = native.lib.agent_call_on_abort(call, ABORT_TRAMPOLINE, key, native.FINALIZER)
    if status != OK:
        native.REGISTRY.release(key)


def is_aborted(call: int) -> bool:
    out = ctypes.c_bool(False)
    status = native.lib.agent_call_is_aborted(call, ctypes.byref(out))
    return bool(out.value) if status == OK else False

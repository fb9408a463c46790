"""Runs: the `Run` handle of one prompt or continue (`AgentRun`), and the `RunOutcome` it settles
with. Aborting a run reaches that run only, never a later one."""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from . import _dispatch as dispatch
from . import _native as native
from ._errors import AgentTimeoutError, error_for

Message = Dict[str, Any]

# How long one blocking wait in the C library lasts before Python looks at its signals again
# (Ctrl-C); not a timeout.
_WAIT_SLICE_MS = 200


@dataclasses.dataclass(frozen=True)
class RunOutcome:
    """How a run ended. `status`: "completed", "model_error" (the model request, the stream
    function or a hook failed: `error_message` is the errorMessage), "aborted", "failed" (a
    listener failed while the run was failing) or "freed" (the agent was closed during the run).
    `stop_reason` is the stopReason of the last assistant message it added ("" when none);
    `messages` (read when asked) are the messages it added to the transcript."""

    status: str
    stop_reason: str
    error_message: str
    message_count: int
    _run: "Run" = dataclasses.field(repr=False, compare=False)

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def messages(self) -> List[Message]:
        """The messages the run added, in order (read from libagent on first use)."""
        return self._run.messages()

    def check(self) -> "RunOutcome":
        """Returns the outcome of a completed run; raises the failure of any other (ModelError,
        AbortedError, RunFailedError, FreedError, carrying `messages` the run added)."""
        if self.completed:
            return self
        failure = error_for(self.status, self.error_message or f"The run ended: {self.status}.")
        try:
            failure.messages = self.messages
        except Exception:  # noqa: BLE001 - e.g. nothing readable after the agent was freed
            failure.messages = []
        raise failure


def _done(user_data: Optional[int], _handle: Any, outcome: Any) -> None:
    # `done`: called once per started run, also inside agent_free on the caller's thread.
    try:
        run = native.REGISTRY.get(user_data)
        native.REGISTRY.release(user_data)
        if run is not None:
            run._settle(outcome.contents)
    except BaseException:  # noqa: BLE001 - never propagate into libagent
        dispatch.log.exception("libagent: a run's done callback failed")


DONE_TRAMPOLINE = native.DoneFn(_done)


class Run:
    """A started run (`Agent.start`, `Agent.start_continue`): `wait()` for its outcome (also
    `await run`), `abort()` it, read `outcome` (None until it settled) and `messages()`. A run of
    an agent built with a dispatcher goes on only while the host dispatches (`wait()` does)."""

    def __init__(self) -> None:
        self.handle = native.AgentRun()
        self._lock = threading.Lock()
        self._settled = threading.Event()
        # The outcome's fields, not a RunOutcome (which refers to its run): no reference cycle,
        # so a dropped Run frees its handle at once (and with it what libagent keeps for the run).
        self._fields: Optional[tuple] = None
        self._messages: Optional[List[Message]] = None
        self._on_settle: List[Callable[[RunOutcome], None]] = []

    @classmethod
    def start(cls, start: Callable[[Any, int, Any], Any]) -> "Run":
        """Calls `start(done, key, out_run)`, a C function that starts a run."""
        run = cls()
        native.register(run, lambda key: start(DONE_TRAMPOLINE, key, ctypes.byref(run.handle)))
        return run

    def _settle(self, raw: Any) -> None:
        fields = (native.RUN_STATUSES.get(raw.status, "failed"), raw.stop_reason.text(), raw.error_message.text(),
                  raw.message_count)
        outcome = RunOutcome(*fields, self)
        with self._lock:
            self._fields = fields
            callbacks, self._on_settle = self._on_settle, []
        self._settled.set()
        for callback in callbacks:
            callback(outcome)

    def on_settle(self, callback: Callable[[RunOutcome], None]) -> None:
        """Calls `callback(outcome)` when the run settled (at once when it has)."""
        with self._lock:
            if self._fields is None:
                self._on_settle.append(callback)
                return
        callback(RunOutcome(*self._fields, self))

    @property
    def outcome(self) -> Optional[RunOutcome]:
        """The outcome once the run settled, else None."""
        fields = self._fields
        return None if fields is None else RunOutcome(*fields, self)

    @property
    def done(self) -> bool:
        return self._settled.is_set()

    def abort(self) -> None:
        """Aborts this run (nothing once it settled: a later run is never reached)."""
        native.check(native.lib.agent_run_abort(self.handle))

    def wait(self, timeout: Optional[float] = None) -> RunOutcome:
        """Waits until the run settled and returns its outcome; AgentTimeoutError after `timeout`
        seconds. For an agent built with a dispatcher, its callbacks run on this thread while it
        waits. WouldDeadlockError inside a callback of the run's agent."""
        deadline = None if timeout is None else time.monotonic() + timeout
        result = ctypes.c_int32(native.WAIT_TIMEOUT)
        while not self._settled.is_set() or result.value != native.WAIT_DONE:
            left_ms = _WAIT_SLICE_MS if deadline is None else int(max(0.0, deadline - time.monotonic()) * 1000)
            with dispatch.pumping():
                native.check(native.lib.agent_run_wait(self.handle, min(left_ms, _WAIT_SLICE_MS),
                                                       ctypes.byref(result)))
            if result.value == native.WAIT_DONE:
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise AgentTimeoutError(f"The run did not settle within {timeout} seconds.")
        self._settled.wait()  # `done` returned before waiters are released; this is at once
        outcome = self.outcome
        assert outcome is not None
        return outcome

    def __await__(self):
        return self._future().__await__()

    def _future(self) -> "asyncio.Future[RunOutcome]":
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[RunOutcome]" = loop.create_future()

        def settled(outcome: RunOutcome) -> None:
            def resolve() -> None:
                if not future.done():
                    future.set_result(outcome)
            try:
                loop.call_soon_threadsafe(resolve)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        self.on_settle(settled)
        return future

    def messages(self) -> List[Message]:
        """The messages the run added to the transcript so far (cached once it settled)."""
        if self._messages is not None:
            return self._messages
        messages = native.take_json(native.lib.agent_run_messages, self.handle)
        if self._settled.is_set():
            self._messages = messages
        return messages

    def __repr__(self) -> str:
        return f"Run({self._fields[0] if self._fields else 'running'})"

    def __del__(self) -> None:
        try:
            native.lib.agent_error_free(native.lib.agent_run_free(self.handle))
        except BaseException:  # noqa: BLE001 - interpreter shutdown
            pass

"""Exceptions: one per libagent error code (include/libagent/agent.h, `AGENT_ERR_*`), and the
Python exceptions for results that are not C errors (a run that ended with a model error, was
aborted, failed or freed; a timed-out wait; a closed event stream)."""

from __future__ import annotations

import re
from typing import Dict, Type

OK = 0
ERR_NULL = -1
ERR_INVALID_HANDLE = -2
ERR_INVALID_UTF8 = -3
ERR_INVALID_JSON = -4
ERR_BUSY = -5
ERR_INVALID_STATE = -6
ERR_ALREADY_COMPLETED = -7
ERR_STREAM_CLOSED = -8
ERR_WOULD_DEADLOCK = -9
ERR_NO_STREAM_FN = -13
ERR_INVALID_ARGUMENT = -15
ERR_INTERNAL = -16
ERR_IO = -17
ERR_LOCKED = -18
ERR_NOT_A_SESSION = -19


class AgentError(Exception):
    """A libagent call failed: `status` is the `AGENT_ERR_*` code, `message` the library's text.
    For the exceptions of results (ModelError, AbortedError, RunFailedError, FreedError,
    AgentTimeoutError, QueueClosedError) `status` is a name: the run's `RunOutcome.status`
    ("model_error", "aborted", "failed", "freed"), "timeout" or "closed"."""

    status: "int | str" = 0

    def __init__(self, message: str, status: "int | str | None" = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, message={self.message!r})"


class NullPointerError(AgentError):
    status = ERR_NULL


class InvalidHandleError(AgentError):
    """The handle was freed (e.g. the agent was closed) or is not a handle of that kind."""

    status = ERR_INVALID_HANDLE


class InvalidUtf8Error(AgentError):
    status = ERR_INVALID_UTF8


class InvalidJsonError(AgentError, ValueError):
    """A JSON argument was malformed or had the wrong shape (unknown option, bad message...)."""

    status = ERR_INVALID_JSON


class BusyError(AgentError):
    """A run is active: prompt, continue and reset are refused."""

    status = ERR_BUSY


class InvalidStateError(AgentError):
    """The agent's state does not allow the operation (e.g. nothing to continue from)."""

    status = ERR_INVALID_STATE


class AlreadyCompletedError(AgentError):
    status = ERR_ALREADY_COMPLETED


class StreamClosedError(AgentError):
    status = ERR_STREAM_CLOSED


class WouldDeadlockError(AgentError):
    """A blocking wait was called on libagent's runtime thread (inside a callback)."""

    status = ERR_WOULD_DEADLOCK


class AgentTimeoutError(AgentError, TimeoutError):
    status = "timeout"


class QueueClosedError(AgentError):
    status = "closed"


class FreedError(AgentError):
    """The agent was closed while the run was active."""

    status = "freed"


class NoStreamFnError(AgentError):
    """No stream function (model) was given and there is no process-wide default."""

    status = ERR_NO_STREAM_FN


class RunFailedError(AgentError):
    """The run failed (a listener failed while the run was failing)."""

    status = "failed"


class InvalidArgumentError(AgentError, ValueError):
    status = ERR_INVALID_ARGUMENT


class InternalError(AgentError):
    """A bug inside libagent, caught at its boundary."""

    status = ERR_INTERNAL


class SessionIOError(AgentError, OSError):
    """A file-system error of a session (its message names the path and the OS error)."""

    status = ERR_IO


class SessionLockedError(AgentError):
    """The session file is open for writing elsewhere (another process or Session)."""

    status = ERR_LOCKED


class NotASessionError(AgentError, ValueError):
    """The file is not a session file (a bad header, a newer version, too large)."""

    status = ERR_NOT_A_SESSION


class ModelError(AgentError):
    """The run ended with an error (its last assistant message has stopReason "error"): the
    model request failed (wrong key, URL or model, a server error...), or the stream function
    or a hook raised. `message` is the run's errorMessage."""

    status = "model_error"


class AbortedError(AgentError):
    """The run was aborted (`abort()`, or a cancelled `prompt_async`)."""

    status = "aborted"


_BY_STATUS: Dict["int | str", Type[AgentError]] = {
    cls.status: cls
    for cls in (
        NullPointerError, InvalidHandleError, InvalidUtf8Error, InvalidJsonError, BusyError,
        InvalidStateError, AlreadyCompletedError, StreamClosedError, WouldDeadlockError,
        NoStreamFnError, InvalidArgumentError, InternalError, SessionIOError, SessionLockedError, NotASessionError,
        # results: a run's outcome (RunOutcome.status) that raises
        ModelError, AbortedError, RunFailedError, FreedError,
    )
}


# The APIs libagent's built-in providers speak (src/providers: pi-ai's streamSimple).
PROVIDER_APIS = ("openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai")

# libagent's texts name what a C caller passed (`patch_json`, `agent_wait_for_idle`), the options'
# JSON keys (`initialState.systemPrompt`, `maxRetryDelayMs`) and, where the reference's text is kept,
# JavaScript functions (`streamFn`, `setDefaultStreamFn()`); a Python caller wrote other names.
NO_MODEL = ("No model to talk to: pass stream_fn=..., scripted=[...], or a model whose api the built-in "
            f"providers speak ({', '.join(PROVIDER_APIS[:-1])} or {PROVIDER_APIS[-1]}; or use_providers=True); "
            "or set a process-wide default with libagent.set_default_stream_fn().")
_WHOLE_TEXTS = {
    "No default stream function configured. Pass streamFn explicitly or call setDefaultStreamFn().": NO_MODEL,
    "initialState.tools cannot be JSON: tools carry code (agent_options_add_tool in C, InitialState::tools in Rust).":
        "Tools cannot be given as JSON: pass them as tools=[...] (Tool objects or @tool functions).",
    'options_json\'s "durability" must be "flush" or "fsync".': 'durability must be "flush" or "fsync".',
}
_C_NAMES = {
    "options_json": "the options", "patch_json": "the settings given to configure()",
    "messages_json": "messages", "message_json": "the message", "images_json": "images",
    "input_json": "the prompt", "result_json": "the result", "partial_result_json": "the partial result",
    "event_json": "the stream event", "script_json": "scripted", "definition_json": "the tool definition",
    "entry_json": "the entry", "summary_json": "the summary",
    "agent_wait_for_idle": "wait_for_idle()", "agent_queue_next": "events()", "agent_run_wait": "wait()",
    "initialState.systemPrompt": "system_prompt", "initialState.thinkingLevel": "thinking_level",
    "initialState.messages": "messages", "initialState.model": "model", "initialState": "the initial state",
}
_C_NAME = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(_C_NAMES, key=len, reverse=True)) + r")\b")
# An option named in parentheses or quotes (`(idleTimeoutMs)`, `"maxRetries"`): its keyword argument.
_OPTIONS = ("steeringMode", "followUpMode", "toolExecution", "sessionId", "thinkingBudgets", "maxRetryDelayMs",
            "abortGraceMs", "maxRetries", "timeoutMs", "connectTimeoutMs", "idleTimeoutMs", "caCertificates",
            "caCertificateFile", "systemPrompt", "thinkingLevel")
_OPTION = re.compile(r'(?<=[("])(' + "|".join(_OPTIONS) + r')(?=[)"])')


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def python_text(message: str) -> str:
    """A libagent error text with the C, JSON and JavaScript names it quotes given as the names a
    Python caller uses."""
    if message in _WHOLE_TEXTS:
        return _WHOLE_TEXTS[message]
    message = _C_NAME.sub(lambda m: _C_NAMES[m.group(1)], message)
    return _OPTION.sub(lambda m: _snake(m.group(1)), message)


def error_for(status: "int | str", message: str) -> AgentError:
    """The exception for a status code (AgentError itself for an unknown code), its text in
    Python's names (python_text)."""
    message = python_text(message)
    cls = _BY_STATUS.get(status)
    if cls is None:
        return AgentError(message or f"libagent status {status}", status)
    return cls(message)

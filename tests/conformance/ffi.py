"""ctypes bindings for the parts of libagent's C ABI 1.0 (include/libagent/agent.h) the
conformance and coding runners use.

Handles are small structures holding a 64-bit id, one class per kind (as in C, a tool call is not
a stream). Every fallible function returns an owned `AgentError *` (NULL on success): `Lib.call`
turns one into an `AgentError` exception, `Lib.attempt` into False. Callback objects (CFUNCTYPE
instances) must stay alive as long as the library may call them: `Lib.hold` keeps every one.
"""

from __future__ import annotations

import ctypes
import json
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char_p, c_int32, c_int64, c_size_t,
                    c_uint64, c_void_p)

AGENT_NTS = ctypes.c_size_t(-1).value
AGENT_EVENT_SHAPE_FULL = 0
AGENT_LISTENER_CONTINUE = 0
AGENT_LISTENER_LATER = 1

HOOK_KINDS = {
    "convertToLlm": 0,
    "transformContext": 1,
    "beforeToolCall": 3,
    "afterToolCall": 4,
    "finishTurn": 5,
    "prepareRequest": 6,
    "prepareNextTurn": 7,
    "prepareNextTurnWithContext": 8,
}


def _handle(name: str):
    return type(name, (Structure,), {"_fields_": [("id", c_uint64)]})


AgentHandle = _handle("AgentHandle")
AgentRun = _handle("AgentRun")
AgentTool = _handle("AgentTool")
AgentOptions = _handle("AgentOptions")
AgentStream = _handle("AgentStream")
AgentToolCall = _handle("AgentToolCall")
AgentHookCall = _handle("AgentHookCall")
AgentReply = _handle("AgentReply")


class AgentStr(Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_size_t)]

    def text(self) -> str:
        return ctypes.string_at(self.ptr, self.len).decode() if self.len else ""


class AgentRunOutcome(Structure):
    _fields_ = [("status", c_int32), ("stop_reason", AgentStr), ("error_message", AgentStr),
                ("message_count", c_size_t)]


class AgentEvent(Structure):
    _fields_ = [("kind", c_int32), ("update", c_int32), ("content_index", c_size_t),
                ("delta", AgentStr), ("tool_call_id", AgentStr), ("tool_name", AgentStr), ("args_json", AgentStr),
                ("source", c_uint64), ("sequence", c_uint64)]


AGENT_RUN_FAILED = 4
AGENT_RUN_FREED = 5

DoneFn = CFUNCTYPE(None, c_void_p, AgentRun, POINTER(AgentRunOutcome))
HookFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, AgentHookCall)
StreamFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, AgentStream)
AbortFn = CFUNCTYPE(None, c_void_p)
ConsumedFn = CFUNCTYPE(None, c_void_p, AgentStream)
ListenerFn = CFUNCTYPE(c_int32, c_void_p, POINTER(AgentEvent))
ToolExecuteFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, c_void_p, c_size_t, AgentToolCall)
PrepareArgumentsFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, AgentHookCall)


def text_at(ptr, length) -> str:
    """A borrowed (pointer, length) text from a callback."""
    return ctypes.string_at(ptr, length).decode() if length else ""


class AgentError(Exception):
    """A libagent call failed; `code` and `message` come from the returned error object."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def dumps(value) -> bytes:
    """JSON for libagent (compact, UTF-8)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _text(data):
    """(pointer, length) arguments for a text; None is (NULL, 0)."""
    if data is None:
        return None, 0
    return data, len(data)


class Lib:
    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        self.lib = lib
        self.keep: list = []
        err = c_void_p
        text = [c_char_p, c_size_t]
        sig = {
            "agent_error_code": (c_int32, [c_void_p]),
            "agent_error_message": (c_char_p, [c_void_p, POINTER(c_size_t)]),
            "agent_error_free": (None, [c_void_p]),
            "agent_string_free": (None, [c_void_p]),
            "agent_new": (err, [AgentOptions, POINTER(AgentHandle)]),
            "agent_free": (err, [AgentHandle]),
            "agent_prompt": (err, [AgentHandle, *text, DoneFn, c_void_p, POINTER(AgentRun)]),
            "agent_prompt_text": (err, [AgentHandle, *text, *text, DoneFn, c_void_p, POINTER(AgentRun)]),
            "agent_continue": (err, [AgentHandle, DoneFn, c_void_p, POINTER(AgentRun)]),
            "agent_steer": (err, [AgentHandle, *text]),
            "agent_follow_up": (err, [AgentHandle, *text]),
            "agent_abort": (err, [AgentHandle]),
            "agent_wait_for_idle": (err, [AgentHandle, c_int64, POINTER(c_int32)]),
            "agent_reset": (err, [AgentHandle]),
            "agent_peek_queued_messages": (err, [AgentHandle, POINTER(c_void_p), POINTER(c_size_t)]),
            "agent_has_queued_messages": (err, [AgentHandle, POINTER(c_bool)]),
            "agent_clear_steering_queue": (err, [AgentHandle]),
            "agent_clear_follow_up_queue": (err, [AgentHandle]),
            "agent_clear_all_queues": (err, [AgentHandle]),
            "agent_get_state": (err, [AgentHandle, POINTER(c_void_p), POINTER(c_size_t)]),
            "agent_set_messages": (err, [AgentHandle, *text]),
            "agent_set_tools": (err, [AgentHandle, POINTER(AgentTool), c_size_t]),
            "agent_configure": (err, [AgentHandle, *text]),
            "agent_hook_call_complete": (err, [AgentHookCall, *text]),
            "agent_hook_call_fail": (err, [AgentHookCall, *text]),
            "agent_tool_call_complete": (err, [AgentToolCall, *text]),
            "agent_tool_call_fail": (err, [AgentToolCall, *text]),
            "agent_tool_call_is_aborted": (err, [AgentToolCall, POINTER(c_bool)]),
            "agent_tool_call_on_abort": (err, [AgentToolCall, AbortFn, c_void_p, c_void_p]),
            "agent_tool_call_update": (err, [AgentToolCall, *text]),
            "agent_stream_push": (err, [AgentStream, *text]),
            "agent_stream_end": (err, [AgentStream, *text]),
            "agent_stream_fail": (err, [AgentStream, *text]),
            "agent_stream_is_aborted": (err, [AgentStream, POINTER(c_bool)]),
            "agent_stream_on_abort": (err, [AgentStream, AbortFn, c_void_p, c_void_p]),
            "agent_stream_push_text_delta": (err, [AgentStream, c_size_t, *text]),
            "agent_stream_push_thinking_delta": (err, [AgentStream, c_size_t, *text]),
            "agent_stream_push_toolcall_delta": (err, [AgentStream, c_size_t, *text]),
            "agent_stream_push_block_start": (err, [AgentStream, c_int32, c_size_t]),
            "agent_stream_push_toolcall_start": (err, [AgentStream, c_size_t, *text, *text]),
            "agent_stream_push_block_end": (err, [AgentStream, c_int32, c_size_t]),
            "agent_stream_on_consumed": (err, [AgentStream, ConsumedFn, c_void_p, c_void_p]),
            "agent_subscribe": (err, [AgentHandle, ListenerFn, c_void_p, c_void_p, POINTER(c_uint64)]),
            "agent_unsubscribe": (err, [AgentHandle, c_uint64]),
            "agent_event_json": (err, [POINTER(AgentEvent), c_int32, POINTER(AgentStr)]),
            "agent_event_defer": (err, [POINTER(AgentEvent), POINTER(AgentReply)]),
            "agent_reply_continue": (err, [AgentReply]),
            "agent_reply_fail": (err, [AgentReply, *text]),
            "agent_options_new": (err, [*text, POINTER(AgentOptions)]),
            "agent_options_add_tool": (err, [AgentOptions, AgentTool]),
            "agent_options_set_stream_fn": (err, [AgentOptions, StreamFn, c_void_p, c_void_p]),
            "agent_options_set_hook": (err, [AgentOptions, c_int32, HookFn, c_void_p, c_void_p]),
            "agent_tool_new": (err, [*text, ToolExecuteFn, c_void_p, c_void_p, POINTER(AgentTool)]),
            "agent_tool_set_prepare_arguments": (err, [AgentTool, PrepareArgumentsFn, c_void_p, c_void_p]),
            "agent_run_free": (err, [AgentRun]),
        }
        for name, (restype, argtypes) in sig.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes

    # -- errors -------------------------------------------------------------------------------

    def take_error(self, error) -> AgentError | None:
        """The exception for a returned error object (freed here), or None for success."""
        if not error:
            return None
        try:
            code = self.lib.agent_error_code(error)
            message = (self.lib.agent_error_message(error, None) or b"").decode("utf-8", "replace")
            return AgentError(code, message)
        finally:
            self.lib.agent_error_free(error)

    def check(self, error) -> None:
        failure = self.take_error(error)
        if failure is not None:
            raise failure

    def call(self, name: str, *args) -> None:
        self.check(getattr(self.lib, name)(*args))

    def attempt(self, name: str, *args) -> bool:
        """Calls `name`; True on success (a failure is expected and dropped)."""
        return self.take_error(getattr(self.lib, name)(*args)) is None

    # -- helpers ------------------------------------------------------------------------------

    def hold(self, callback):
        """Keeps a callback object alive for the life of the process."""
        self.keep.append(callback)
        return callback

    def owned_json(self, name: str, *args):
        """Calls a function writing an owned `char *` and returns the parsed JSON."""
        out = c_void_p()
        self.call(name, *args, ctypes.byref(out), None)
        try:
            return json.loads(ctypes.string_at(out.value).decode())
        finally:
            self.lib.agent_string_free(out)

    @staticmethod
    def _kind(call) -> str:
        if isinstance(call, AgentToolCall):
            return "tool_call"
        if isinstance(call, AgentStream):
            return "stream"
        return "hook_call"

    def complete(self, call, value=None) -> bool:
        """Answers a call with a JSON value (None: "returns nothing"; a stream ends)."""
        name = "agent_stream_end" if isinstance(call, AgentStream) else f"agent_{self._kind(call)}_complete"
        return self.attempt(name, call, *_text(None if value is None else dumps(value)))

    def fail(self, call, message: str) -> bool:
        return self.attempt(f"agent_{self._kind(call)}_fail", call, *_text(message.encode()))

    def is_aborted(self, call) -> bool:
        out = c_bool(False)
        self.call(f"agent_{self._kind(call)}_is_aborted", call, ctypes.byref(out))
        return bool(out.value)

    def on_abort(self, call, fn) -> None:
        callback = self.hold(AbortFn(lambda _ud: fn()))
        self.call(f"agent_{self._kind(call)}_on_abort", call, callback, None, None)

    def push(self, stream, payload: bytes) -> bool:
        return self.attempt("agent_stream_push", stream, *_text(payload))

    def tool_update(self, call, payload: bytes) -> bool:
        return self.attempt("agent_tool_call_update", call, *_text(payload))

    def event_json(self, event) -> str:
        out = AgentStr()
        self.call("agent_event_json", event, AGENT_EVENT_SHAPE_FULL, ctypes.byref(out))
        return out.text()


__all__ = [
    "AGENT_NTS", "AGENT_LISTENER_CONTINUE", "AGENT_LISTENER_LATER", "AGENT_RUN_FAILED",
    "AGENT_RUN_FREED", "HOOK_KINDS", "AbortFn", "AgentError", "AgentEvent", "AgentHandle",
    "AgentHookCall", "AgentOptions", "AgentReply", "AgentRun", "AgentRunOutcome", "AgentStr",
    "AgentStream", "AgentTool", "AgentToolCall", "ConsumedFn", "DoneFn", "HookFn", "Lib",
    "ListenerFn", "PrepareArgumentsFn", "StreamFn", "ToolExecuteFn", "c_int32", "c_int64",
    "dumps", "text_at",
]

"""ctypes bindings for the parts of libagent's C ABI (include/agent.h) the conformance runner uses.

Every handle is an opaque `c_void_p`. Callback objects (CFUNCTYPE instances) must stay alive as
long as the library may call them: `Lib.keep` holds a reference to every one ever created.
"""

from __future__ import annotations

import ctypes
import json
from ctypes import CFUNCTYPE, POINTER, c_bool, c_char_p, c_int32, c_int64, c_size_t, c_uint64, c_void_p

AGENT_OK = 0
AGENT_EVENT_SHAPE_FULL = 0

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

DoneFn = CFUNCTYPE(None, c_void_p, c_int32, c_char_p)
HookFn = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)
FinalizerFn = CFUNCTYPE(None, c_void_p)
StreamFn = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)
AbortFn = CFUNCTYPE(None, c_void_p)
ConsumedFn = CFUNCTYPE(None, c_void_p, c_void_p)
ListenerFn = CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)
ToolExecuteFn = CFUNCTYPE(None, c_void_p, c_char_p, c_char_p, c_void_p)
PrepareArgumentsFn = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)


class AgentError(Exception):
    """A libagent call returned a non-zero status; the message is `agent_last_error()`."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def dumps(value) -> bytes:
    """JSON for libagent (compact, UTF-8)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class Lib:
    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        self.lib = lib
        self.keep: list = []
        sig = {
            "agent_last_error": (c_char_p, []),
            "agent_string_free": (None, [c_void_p]),
            "agent_new": (c_int32, [c_void_p, POINTER(c_void_p)]),
            "agent_free": (c_int32, [c_void_p]),
            "agent_prompt": (c_int32, [c_void_p, c_char_p, DoneFn, c_void_p]),
            "agent_prompt_text": (c_int32, [c_void_p, c_char_p, c_char_p, DoneFn, c_void_p]),
            "agent_continue": (c_int32, [c_void_p, DoneFn, c_void_p]),
            "agent_steer": (c_int32, [c_void_p, c_char_p]),
            "agent_follow_up": (c_int32, [c_void_p, c_char_p]),
            "agent_abort": (c_int32, [c_void_p]),
            "agent_wait_for_idle": (c_int32, [c_void_p, c_int64]),
            "agent_reset": (c_int32, [c_void_p]),
            "agent_peek_queued_messages": (c_int32, [c_void_p, POINTER(c_void_p)]),
            "agent_has_queued_messages": (c_int32, [c_void_p, POINTER(c_bool)]),
            "agent_clear_steering_queue": (c_int32, [c_void_p]),
            "agent_clear_follow_up_queue": (c_int32, [c_void_p]),
            "agent_clear_all_queues": (c_int32, [c_void_p]),
            "agent_get_state": (c_int32, [c_void_p, POINTER(c_void_p)]),
            "agent_set_messages": (c_int32, [c_void_p, c_char_p]),
            "agent_set_tools": (c_int32, [c_void_p, POINTER(c_void_p), c_size_t]),
            "agent_configure": (c_int32, [c_void_p, c_char_p]),
            "agent_call_complete": (c_int32, [c_void_p, c_char_p]),
            "agent_call_fail": (c_int32, [c_void_p, c_char_p]),
            "agent_call_is_aborted": (c_int32, [c_void_p, POINTER(c_bool)]),
            "agent_call_on_abort": (c_int32, [c_void_p, AbortFn, c_void_p, c_void_p]),
            "agent_tool_call_update": (c_int32, [c_void_p, c_char_p]),
            "agent_stream_push": (c_int32, [c_void_p, c_char_p]),
            "agent_stream_push_text_delta": (c_int32, [c_void_p, c_size_t, c_char_p, c_size_t]),
            "agent_stream_push_thinking_delta": (c_int32, [c_void_p, c_size_t, c_char_p, c_size_t]),
            "agent_stream_push_toolcall_delta": (c_int32, [c_void_p, c_size_t, c_char_p, c_size_t]),
            "agent_stream_push_block_start": (c_int32, [c_void_p, c_int32, c_size_t]),
            "agent_stream_push_toolcall_start": (c_int32, [c_void_p, c_size_t, c_char_p, c_char_p]),
            "agent_stream_push_block_end": (c_int32, [c_void_p, c_int32, c_size_t]),
            "agent_stream_on_consumed": (c_int32, [c_void_p, ConsumedFn, c_void_p, c_void_p]),
            "agent_subscribe": (c_int32, [c_void_p, ListenerFn, c_void_p, c_void_p, POINTER(c_uint64)]),
            "agent_unsubscribe": (c_int32, [c_void_p, c_uint64]),
            "agent_event_json": (c_int32, [c_void_p, c_int32, POINTER(c_char_p)]),
            "agent_options_new": (c_int32, [c_char_p, POINTER(c_void_p)]),
            "agent_options_add_tool": (c_int32, [c_void_p, c_void_p]),
            "agent_options_set_stream_fn": (c_int32, [c_void_p, StreamFn, c_void_p, c_void_p]),
            "agent_options_set_hook": (c_int32, [c_void_p, c_int32, HookFn, c_void_p, c_void_p]),
            "agent_tool_new": (c_int32, [c_char_p, ToolExecuteFn, c_void_p, c_void_p, POINTER(c_void_p)]),
            "agent_tool_set_prepare_arguments": (c_int32, [c_void_p, PrepareArgumentsFn, c_void_p, c_void_p]),
        }
        for name, (restype, argtypes) in sig.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes

    # -- helpers ------------------------------------------------------------------------------

    def hold(self, callback):
        """Keeps a callback object alive for the life of the process."""
        self.keep.append(callback)
        return callback

    def last_error(self) -> str:
        return (self.lib.agent_last_error() or b"").decode("utf-8", "replace")

    def check(self, status: int) -> None:
        if status != AGENT_OK:
            raise AgentError(status, self.last_error())

    def call(self, name: str, *args) -> None:
        self.check(getattr(self.lib, name)(*args))

    def owned_json(self, name: str, *args):
        """Calls a function writing an owned `char *` and returns the parsed JSON."""
        out = c_void_p()
        self.check(getattr(self.lib, name)(*args, ctypes.byref(out)))
        try:
            return json.loads(ctypes.string_at(out.value).decode())
        finally:
            self.lib.agent_string_free(out)

    def complete(self, call, value=None) -> int:
        """Answers a call with a JSON value (None: "returns nothing")."""
        return self.lib.agent_call_complete(call, None if value is None else dumps(value))

    def fail(self, call, message: str) -> int:
        return self.lib.agent_call_fail(call, message.encode())

    def is_aborted(self, call) -> bool:
        out = c_bool(False)
        self.check(self.lib.agent_call_is_aborted(call, ctypes.byref(out)))
        return bool(out.value)

    def on_abort(self, call, fn) -> None:
        callback = self.hold(AbortFn(lambda _ud: fn()))
        self.check(self.lib.agent_call_on_abort(call, callback, None, None))

    def event_json(self, event) -> str:
        out = c_char_p()
        self.check(self.lib.agent_event_json(event, AGENT_EVENT_SHAPE_FULL, ctypes.byref(out)))
        return out.value.decode()

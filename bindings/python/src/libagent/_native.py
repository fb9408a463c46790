"""The C ABI 1.0 (include/libagent/agent.h) through ctypes: loading, handle and event structs,
signatures, owned errors, text arguments, JSON helpers and the registry that keeps host objects
alive until libagent's finalizers release them.

Every fallible C function returns an `AgentError *` (NULL on success) the caller owns: `check`
turns one into the Python exception and frees it. Texts go in as (pointer, length) pairs
(`text`). libagent never holds a Python object: every `user_data` pointer it receives is an
integer key into `REGISTRY`, and the one finalizer trampoline (`FINALIZER`) removes that key when
the library drops its last reference. The ctypes callback objects themselves are module-level
singletons (one per callback type), alive for the life of the process.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import sys
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char_p, c_int32, c_int64, c_size_t, c_uint32,
                    c_uint64, c_void_p)
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, TypeVar

import pydantic_core

from ._errors import error_for

# -- handles and structs -------------------------------------------------------------------------


class _Handle(Structure):
    """A generation-checked handle passed by value (`{uint64_t id}`); `{0}` is the null handle."""

    _fields_ = [("id", c_uint64)]

    def __bool__(self) -> bool:
        return bool(self.id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id:#x})"


class AgentHandle(_Handle):
    pass


class AgentRun(_Handle):
    pass


class AgentTool(_Handle):
    pass


class AgentOptions(_Handle):
    pass


class AgentQueue(_Handle):
    pass


class AgentStream(_Handle):
    pass


class AgentToolCall(_Handle):
    pass


class AgentHookCall(_Handle):
    pass


class AgentReply(_Handle):
    pass


class AgentDispatcher(_Handle):
    pass


class AgentSession(_Handle):
    pass


class AgentMcp(_Handle):
    pass


class AgentStr(Structure):
    """A borrowed text: `len` bytes of UTF-8 at `ptr`."""

    _fields_ = [("ptr", c_void_p), ("len", c_size_t)]

    def text(self) -> str:
        return ctypes.string_at(self.ptr, self.len).decode("utf-8", "replace") if self.len else ""


class AgentRunOutcome(Structure):
    _fields_ = [("status", c_int32), ("stop_reason", AgentStr), ("error_message", AgentStr),
                ("message_count", c_size_t)]


class AgentEvent(Structure):
    _fields_ = [("kind", c_int32), ("update", c_int32), ("content_index", c_size_t), ("delta", AgentStr),
                ("tool_call_id", AgentStr), ("tool_name", AgentStr), ("args_json", AgentStr), ("source", c_uint64),
                ("sequence", c_uint64)]


# -- callback types ------------------------------------------------------------------------------
# Texts given to callbacks are (pointer, length): c_void_p + c_size_t, read with `text_at`.

DoneFn = CFUNCTYPE(None, c_void_p, AgentRun, POINTER(AgentRunOutcome))
HookFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, AgentHookCall)
FinalizerFn = CFUNCTYPE(None, c_void_p)
StreamFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, AgentStream)
AbortFn = CFUNCTYPE(None, c_void_p)
ListenerFn = CFUNCTYPE(c_int32, c_void_p, POINTER(AgentEvent))
ToolExecuteFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, c_void_p, c_size_t, AgentToolCall)
PrepareArgumentsFn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, AgentHookCall)

# -- constants (checked against the header by tests/bindings/check_ctypes.py) -------------------

VERSION_MAJOR = 1
VERSION_MINOR = 0

EVENT_SHAPE_FULL = 0
EVENT_SHAPE_LEAN = 1
LISTENER_CONTINUE = 0
LISTENER_LATER = 1
NEXT_EVENT = 0
NEXT_TIMEOUT = 1
NEXT_CLOSED = 2
WAIT_DONE = 0
WAIT_TIMEOUT = 1
BLOCK_TEXT = 0
SESSION_HEADER = 0
SESSION_ENTRIES = 1
SESSION_BRANCH = 2
SESSION_CONTEXT = 3
SESSION_LLM = 4
SESSION_LEAF_ID = 5
SESSION_FILE = 6

RUN_STATUSES = {0: "running", 1: "completed", 2: "model_error", 3: "aborted", 4: "failed", 5: "freed"}
EVENT_TYPES = {0: "agent_start", 1: "agent_end", 2: "turn_start", 3: "turn_end", 4: "message_start",
               5: "message_update", 6: "message_end", 7: "tool_execution_start", 8: "tool_execution_update",
               9: "tool_execution_end", 10: "compaction_start", 11: "compaction_end",
               12: "auto_retry_start", 13: "auto_retry_end"}
UPDATE_TYPES = {0: None, 1: "start", 2: "text_start", 3: "text_delta", 4: "text_end", 5: "thinking_start",
                6: "thinking_delta", 7: "thinking_end", 8: "toolcall_start", 9: "toolcall_delta",
                10: "toolcall_end", 11: "other"}

HOOK_KINDS = {
    "convert_to_llm": 0,
    "transform_context": 1,
    "get_api_key": 2,
    "before_tool_call": 3,
    "after_tool_call": 4,
    "finish_turn": 5,
    "prepare_request": 6,
    "prepare_next_turn": 7,
    "prepare_next_turn_with_context": 8,
    "compact": 9,
}

_ERR = c_void_p  # AgentError *: NULL on success, else owned by the caller
_TEXT = [c_char_p, c_size_t]  # a (pointer, length) text argument

_SIGNATURES = {
    "agent_error_code": (c_int32, [c_void_p]),
    "agent_error_message": (c_char_p, [c_void_p, POINTER(c_size_t)]),
    "agent_error_free": (None, [c_void_p]),
    "agent_string_free": (None, [c_void_p]),
    "agent_version": (c_char_p, []),
    "agent_version_check": (_ERR, [c_uint32, c_uint32]),
    "agent_is_runtime_thread": (c_bool, []),
    "agent_runtime_configure": (_ERR, [c_uint32]),
    "agent_model_find": (_ERR, [*_TEXT, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_model_list": (_ERR, [*_TEXT, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_new": (_ERR, [AgentOptions, POINTER(AgentHandle)]),
    "agent_free": (_ERR, [AgentHandle]),
    "agent_prompt": (_ERR, [AgentHandle, *_TEXT, DoneFn, c_void_p, POINTER(AgentRun)]),
    "agent_prompt_text": (_ERR, [AgentHandle, *_TEXT, *_TEXT, DoneFn, c_void_p, POINTER(AgentRun)]),
    "agent_continue": (_ERR, [AgentHandle, DoneFn, c_void_p, POINTER(AgentRun)]),
    "agent_compact": (_ERR, [AgentHandle, *_TEXT, DoneFn, c_void_p, POINTER(AgentRun)]),
    "agent_steer": (_ERR, [AgentHandle, *_TEXT]),
    "agent_follow_up": (_ERR, [AgentHandle, *_TEXT]),
    "agent_abort": (_ERR, [AgentHandle]),
    "agent_wait_for_idle": (_ERR, [AgentHandle, c_int64, POINTER(c_int32)]),
    "agent_reset": (_ERR, [AgentHandle]),
    "agent_peek_queued_messages": (_ERR, [AgentHandle, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_has_queued_messages": (_ERR, [AgentHandle, POINTER(c_bool)]),
    "agent_clear_steering_queue": (_ERR, [AgentHandle]),
    "agent_clear_follow_up_queue": (_ERR, [AgentHandle]),
    "agent_clear_all_queues": (_ERR, [AgentHandle]),
    "agent_get_state": (_ERR, [AgentHandle, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_get_message_count": (_ERR, [AgentHandle, POINTER(c_size_t)]),
    "agent_get_messages": (_ERR, [AgentHandle, c_size_t, c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_set_messages": (_ERR, [AgentHandle, *_TEXT]),
    "agent_set_tools": (_ERR, [AgentHandle, POINTER(AgentTool), c_size_t]),
    "agent_configure": (_ERR, [AgentHandle, *_TEXT]),
    "agent_set_hook": (_ERR, [AgentHandle, c_int32, HookFn, c_void_p, FinalizerFn]),
    "agent_set_stream_fn": (_ERR, [AgentHandle, StreamFn, c_void_p, FinalizerFn]),
    "agent_use_providers": (_ERR, [AgentHandle]),
    "agent_set_scripted_model": (_ERR, [AgentHandle, *_TEXT]),
    "agent_hook_call_complete": (_ERR, [AgentHookCall, *_TEXT]),
    "agent_hook_call_fail": (_ERR, [AgentHookCall, *_TEXT]),
    "agent_hook_call_is_aborted": (_ERR, [AgentHookCall, POINTER(c_bool)]),
    "agent_hook_call_on_abort": (_ERR, [AgentHookCall, AbortFn, c_void_p, FinalizerFn]),
    "agent_tool_call_complete": (_ERR, [AgentToolCall, *_TEXT]),
    "agent_tool_call_fail": (_ERR, [AgentToolCall, *_TEXT]),
    "agent_tool_call_is_aborted": (_ERR, [AgentToolCall, POINTER(c_bool)]),
    "agent_tool_call_on_abort": (_ERR, [AgentToolCall, AbortFn, c_void_p, FinalizerFn]),
    "agent_tool_call_update": (_ERR, [AgentToolCall, *_TEXT]),
    "agent_stream_push": (_ERR, [AgentStream, *_TEXT]),
    "agent_stream_push_text_delta": (_ERR, [AgentStream, c_size_t, *_TEXT]),
    "agent_stream_push_block_start": (_ERR, [AgentStream, c_int32, c_size_t]),
    "agent_stream_push_block_end": (_ERR, [AgentStream, c_int32, c_size_t]),
    "agent_stream_end": (_ERR, [AgentStream, *_TEXT]),
    "agent_stream_fail": (_ERR, [AgentStream, *_TEXT]),
    "agent_stream_is_aborted": (_ERR, [AgentStream, POINTER(c_bool)]),
    "agent_stream_on_abort": (_ERR, [AgentStream, AbortFn, c_void_p, FinalizerFn]),
    "agent_coding_tools_new": (_ERR, [*_TEXT, *_TEXT, HookFn, c_void_p, FinalizerFn, POINTER(AgentTool), c_size_t,
                                      POINTER(c_size_t)]),
    "agent_dispatcher_new": (_ERR, [POINTER(AgentDispatcher)]),
    "agent_options_set_dispatcher": (_ERR, [AgentOptions, AgentDispatcher]),
    "agent_dispatch": (_ERR, [AgentDispatcher, c_int64, POINTER(c_size_t)]),
    "agent_dispatcher_wait": (_ERR, [AgentDispatcher, c_int64, POINTER(c_int32)]),
    "agent_dispatcher_free": (_ERR, [AgentDispatcher]),
    "agent_subscribe": (_ERR, [AgentHandle, ListenerFn, c_void_p, FinalizerFn, POINTER(c_uint64)]),
    "agent_unsubscribe": (_ERR, [AgentHandle, c_uint64]),
    "agent_event_json": (_ERR, [POINTER(AgentEvent), c_int32, POINTER(AgentStr)]),
    "agent_event_defer": (_ERR, [POINTER(AgentEvent), POINTER(AgentReply)]),
    "agent_reply_continue": (_ERR, [AgentReply]),
    "agent_reply_fail": (_ERR, [AgentReply, *_TEXT]),
    "agent_queue_open": (_ERR, [AgentHandle, *_TEXT, POINTER(AgentQueue)]),
    "agent_queue_next": (_ERR, [AgentQueue, c_int64, POINTER(AgentEvent), POINTER(c_int32)]),
    "agent_queue_close": (_ERR, [AgentQueue]),
    "agent_options_new": (_ERR, [*_TEXT, POINTER(AgentOptions)]),
    "agent_options_free": (_ERR, [AgentOptions]),
    "agent_options_add_tool": (_ERR, [AgentOptions, AgentTool]),
    "agent_options_set_stream_fn": (_ERR, [AgentOptions, StreamFn, c_void_p, FinalizerFn]),
    "agent_options_set_scripted_model": (_ERR, [AgentOptions, *_TEXT]),
    "agent_options_use_providers": (_ERR, [AgentOptions]),
    "agent_options_set_hook": (_ERR, [AgentOptions, c_int32, HookFn, c_void_p, FinalizerFn]),
    "agent_run_abort": (_ERR, [AgentRun]),
    "agent_run_wait": (_ERR, [AgentRun, c_int64, POINTER(c_int32)]),
    "agent_run_outcome": (_ERR, [AgentRun, POINTER(AgentRunOutcome)]),
    "agent_run_messages": (_ERR, [AgentRun, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_run_free": (_ERR, [AgentRun]),
    "agent_set_default_stream_fn": (_ERR, [StreamFn, c_void_p, FinalizerFn]),
    "agent_set_default_scripted_model": (_ERR, [*_TEXT]),
    "agent_set_default_providers": (_ERR, []),
    "agent_tool_new": (_ERR, [*_TEXT, ToolExecuteFn, c_void_p, FinalizerFn, POINTER(AgentTool)]),
    "agent_tool_set_prepare_arguments": (_ERR, [AgentTool, PrepareArgumentsFn, c_void_p, FinalizerFn]),
    "agent_tool_free": (_ERR, [AgentTool]),
    "agent_session_open": (_ERR, [*_TEXT, *_TEXT, POINTER(AgentSession)]),
    "agent_session_create": (_ERR, [*_TEXT, *_TEXT, POINTER(AgentSession)]),
    "agent_session_continue_recent": (_ERR, [*_TEXT, *_TEXT, POINTER(AgentSession)]),
    "agent_session_in_memory": (_ERR, [*_TEXT, POINTER(AgentSession)]),
    "agent_session_directory": (_ERR, [*_TEXT, *_TEXT, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_session_append": (_ERR, [AgentSession, *_TEXT, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_session_branch": (_ERR, [AgentSession, *_TEXT]),
    "agent_session_branch_with_summary": (_ERR, [AgentSession, *_TEXT, *_TEXT, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_session_fork": (_ERR, [AgentSession, *_TEXT]),
    "agent_session_get": (_ERR, [AgentSession, c_int32, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_session_free": (_ERR, [AgentSession]),
    "agent_options_set_session": (_ERR, [AgentOptions, AgentSession]),
    "agent_mcp_connect": (_ERR, [*_TEXT, POINTER(AgentMcp)]),
    "agent_mcp_wait": (_ERR, [AgentMcp, c_uint64, POINTER(c_bool)]),
    "agent_mcp_servers_json": (_ERR, [AgentMcp, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_mcp_tools_json": (_ERR, [AgentMcp, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_mcp_tool_count": (_ERR, [AgentMcp, POINTER(c_size_t)]),
    "agent_mcp_tools": (_ERR, [AgentMcp, POINTER(AgentTool), c_size_t, POINTER(c_size_t)]),
    "agent_options_add_mcp": (_ERR, [AgentOptions, AgentMcp]),
    "agent_mcp_close": (_ERR, [AgentMcp]),
    "agent_mcp_free": (_ERR, [AgentMcp]),
}


def _library_path() -> str:
    override = os.environ.get("LIBAGENT_LIBRARY")
    if override:
        return override
    name = {"darwin": "libagent.dylib", "win32": "agent.dll"}.get(sys.platform, "libagent.so")
    bundled = Path(__file__).resolve().parent / name
    if not bundled.exists():
        raise ImportError(
            f"libagent: the bundled library {bundled} is missing (install the package with pip, "
            "or set LIBAGENT_LIBRARY to a libagent shared library)")
    return str(bundled)


def _load() -> ctypes.CDLL:
    # CDLL (not PyDLL): every call releases the GIL, so blocking waits never stall Python threads.
    lib = ctypes.CDLL(_library_path())
    if not hasattr(lib, "agent_version_check"):
        raise ImportError(f"libagent: {lib._name} is a libagent 0.x library; this binding needs 1.x")
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


lib = _load()
LIBRARY_PATH = lib._name


# -- errors, texts and strings -------------------------------------------------------------------

def take_error(error: Optional[int]):
    """The exception for a returned `AgentError *` (freed here), or None for NULL (success)."""
    if not error:
        return None
    try:
        size = c_size_t()
        message = lib.agent_error_message(error, ctypes.byref(size)) or b""
        return error_for(lib.agent_error_code(error), message[: size.value].decode("utf-8", "replace"))
    finally:
        lib.agent_error_free(error)


def check(error: Optional[int]) -> None:
    """Raises the exception of a returned `AgentError *` (nothing for NULL)."""
    failure = take_error(error)
    if failure is not None:
        raise failure


_check_version = take_error(lib.agent_version_check(VERSION_MAJOR, VERSION_MINOR))
if _check_version is not None:
    raise ImportError(f"libagent: {LIBRARY_PATH}: {_check_version.message}")


def text(data: Optional[bytes]) -> Tuple[Optional[bytes], int]:
    """The (pointer, length) arguments of a text; None is (NULL, 0)."""
    return (None, 0) if data is None else (data, len(data))


def text_at(ptr: Optional[int], length: int) -> str:
    """A borrowed (pointer, length) text given to a callback."""
    return ctypes.string_at(ptr, length).decode("utf-8") if length else ""


def bytes_at(ptr: Optional[int], length: int) -> bytes:
    return ctypes.string_at(ptr, length) if length else b""


def on_runtime_thread() -> bool:
    """Whether this thread is libagent's runtime thread (where blocking waits would deadlock)."""
    return bool(lib.agent_is_runtime_thread())


def take_json(fn: Any, *args: Any) -> Any:
    """Calls `fn(*args, char **out, size_t *len)` and returns the parsed JSON it wrote (freed)."""
    out, size = c_void_p(), c_size_t()
    check(fn(*args, ctypes.byref(out), ctypes.byref(size)))
    try:
        return json.loads(ctypes.string_at(out.value, size.value))
    finally:
        lib.agent_string_free(out)


def dumps(value: Any) -> bytes:
    """Compact JSON (UTF-8) for libagent; pydantic models, dataclasses, enums, datetimes and
    other common Python values are converted the way pydantic serializes them."""
    return pydantic_core.to_json(value)


def encode(value: str) -> bytes:
    return value.encode("utf-8")


def loads(data: bytes) -> Any:
    return json.loads(data)


# -- the registry --------------------------------------------------------------------------------

class Registry:
    """Host objects referenced by libagent, keyed by the integer passed as `user_data`."""

    def __init__(self) -> None:
        self._items: Dict[int, Any] = {}
        self._keys = itertools.count(1)
        self._lock = threading.Lock()
        self._emptied = threading.Condition(self._lock)

    def add(self, obj: Any) -> int:
        with self._lock:
            key = next(self._keys)
            self._items[key] = obj
        return key

    def get(self, key: Optional[int]) -> Any:
        return self._items.get(key or 0)

    def release(self, key: Optional[int]) -> None:
        # Idempotent: a key is released by its finalizer, or by us when a registering call
        # failed (the C ABI does not say whether the finalizer ran then).
        with self._lock:
            self._items.pop(key or 0, None)
            if not self._items:
                self._emptied.notify_all()

    def wait_empty(self, timeout: float) -> bool:
        """Waits until libagent released everything (its finalizers may run later, on its
        runtime thread); False when `timeout` seconds passed first."""
        with self._lock:
            return self._emptied.wait_for(lambda: not self._items, timeout)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: int) -> bool:
        return key in self._items


REGISTRY = Registry()


def register(site: Any, call: Any) -> None:
    """Registers `site` under a new key and calls `call(key)`, a C function handing the key to
    libagent with FINALIZER; the key is released again when that call fails."""
    key = REGISTRY.add(site)
    failure = take_error(call(key))
    if failure is not None:
        REGISTRY.release(key)
        raise failure


def _finalize(user_data: Optional[int]) -> None:
    try:
        REGISTRY.release(user_data)
    except BaseException:  # noqa: BLE001 - never propagate into libagent
        pass


FINALIZER = FinalizerFn(_finalize)
NULL_FINALIZER = FinalizerFn()  # ctypes takes no None for a function-pointer argument


def version() -> str:
    return lib.agent_version().decode()


def configure_runtime(workers: int) -> None:
    """`agent_runtime_configure`: call before the first agent is created."""
    check(lib.agent_runtime_configure(workers))


_Self = TypeVar("_Self", bound="Closable")


class Closable:
    """What `Agent`, `Session` and `MCP` share: `close()` releases the native object once
    (`_release`, thread-safe, idempotent), `with` closes, and an object collected unclosed is
    released by `_collected` (default: `close()`)."""

    _closed = True  # until __init__ has a handle: a failed constructor leaves nothing to free

    def _open(self) -> None:
        self._closed = False
        self._close_lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._release()

    def _release(self) -> None:
        raise NotImplementedError

    def _collected(self) -> None:
        self.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self._collected()
        except BaseException:  # noqa: BLE001 - interpreter shutdown, already freed...
            pass

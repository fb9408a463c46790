"""The C ABI (include/agent.h) through ctypes: loading, signatures, status checks, JSON helpers
and the registry that keeps host objects alive until libagent's finalizers release them.

libagent never holds a Python object: every `user_data` pointer it receives is an integer key
into `REGISTRY`, and the one finalizer trampoline (`FINALIZER`) removes that key when the
library drops its last reference. The ctypes callback objects themselves are module-level
singletons (one per callback type), alive for the life of the process.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import sys
import threading
from ctypes import CFUNCTYPE, POINTER, c_bool, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Any, Dict, Optional

import pydantic_core

from ._errors import OK, error_for

# -- callback types ------------------------------------------------------------------------------

DoneFn = CFUNCTYPE(None, c_void_p, c_int32, c_char_p)
HookFn = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)
FinalizerFn = CFUNCTYPE(None, c_void_p)
StreamFn = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)
AbortFn = CFUNCTYPE(None, c_void_p)
ConsumedFn = CFUNCTYPE(None, c_void_p, c_void_p)
ListenerFn = CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)
ToolExecuteFn = CFUNCTYPE(None, c_void_p, c_char_p, c_char_p, c_void_p)
PrepareArgumentsFn = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)

EVENT_SHAPE_FULL = 0
EVENT_SHAPE_LEAN = 1

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
}

_SIGNATURES = {
    "agent_last_error": (c_char_p, []),
    "agent_string_free": (None, [c_void_p]),
    "agent_version": (c_char_p, []),
    "agent_runtime_configure": (c_int32, [c_uint32]),
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
    "agent_set_hook": (c_int32, [c_void_p, c_int32, HookFn, c_void_p, FinalizerFn]),
    "agent_set_stream_fn": (c_int32, [c_void_p, StreamFn, c_void_p, FinalizerFn]),
    "agent_set_scripted_model": (c_int32, [c_void_p, c_char_p]),
    "agent_call_complete": (c_int32, [c_void_p, c_char_p]),
    "agent_call_fail": (c_int32, [c_void_p, c_char_p]),
    "agent_call_is_aborted": (c_int32, [c_void_p, POINTER(c_bool)]),
    "agent_call_on_abort": (c_int32, [c_void_p, AbortFn, c_void_p, FinalizerFn]),
    "agent_tool_call_update": (c_int32, [c_void_p, c_char_p]),
    "agent_stream_push": (c_int32, [c_void_p, c_char_p]),
    "agent_stream_on_consumed": (c_int32, [c_void_p, ConsumedFn, c_void_p, FinalizerFn]),
    "agent_subscribe": (c_int32, [c_void_p, ListenerFn, c_void_p, FinalizerFn, POINTER(c_uint64)]),
    "agent_unsubscribe": (c_int32, [c_void_p, c_uint64]),
    "agent_event_type": (c_int32, [c_void_p, POINTER(c_char_p)]),
    "agent_event_json": (c_int32, [c_void_p, c_int32, POINTER(c_char_p)]),
    "agent_event_update_type": (c_int32, [c_void_p, POINTER(c_char_p)]),
    "agent_event_delta": (c_int32, [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "agent_events_open": (c_int32, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "agent_events_next": (c_int32, [c_void_p, c_int64, POINTER(c_void_p)]),
    "agent_events_close": (c_int32, [c_void_p]),
    "agent_options_new": (c_int32, [c_char_p, POINTER(c_void_p)]),
    "agent_options_free": (c_int32, [c_void_p]),
    "agent_options_add_tool": (c_int32, [c_void_p, c_void_p]),
    "agent_options_set_stream_fn": (c_int32, [c_void_p, StreamFn, c_void_p, FinalizerFn]),
    "agent_options_set_scripted_model": (c_int32, [c_void_p, c_char_p]),
    "agent_options_set_hook": (c_int32, [c_void_p, c_int32, HookFn, c_void_p, FinalizerFn]),
    "agent_set_default_stream_fn": (c_int32, [StreamFn, c_void_p, FinalizerFn]),
    "agent_set_default_scripted_model": (c_int32, [c_char_p]),
    "agent_tool_new": (c_int32, [c_char_p, ToolExecuteFn, c_void_p, FinalizerFn, POINTER(c_void_p)]),
    "agent_tool_set_prepare_arguments": (c_int32, [c_void_p, PrepareArgumentsFn, c_void_p, FinalizerFn]),
    "agent_tool_free": (c_int32, [c_void_p]),
    "agent_last_run_outcome": (c_int32, [c_void_p, POINTER(c_int32), POINTER(c_void_p)]),
    "agent_options_use_providers": (c_int32, [c_void_p]),
    "agent_use_providers": (c_int32, [c_void_p]),
    "agent_set_default_providers": (c_int32, []),
    "agent_coding_tools_new": (c_int32, [c_char_p, c_char_p, HookFn, c_void_p, FinalizerFn, POINTER(c_void_p),
                                         c_size_t, POINTER(c_size_t)]),
}


# Newer functions (cheap transcript reads): used when the loaded library has them.
_OPTIONAL_SIGNATURES = {
    "agent_get_message_count": (c_int32, [c_void_p, POINTER(c_size_t)]),
    "agent_get_messages": (c_int32, [c_void_p, c_size_t, c_size_t, POINTER(c_void_p)]),
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
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    for name, (restype, argtypes) in _OPTIONAL_SIGNATURES.items():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = restype
            fn.argtypes = argtypes
    return lib


lib = _load()
LIBRARY_PATH = lib._name
HAS_MESSAGE_READS = hasattr(lib, "agent_get_message_count")


# -- status checks and strings -------------------------------------------------------------------

def last_error() -> str:
    return (lib.agent_last_error() or b"").decode("utf-8", "replace")


def check(status: int) -> None:
    """Raises the AgentError for a failed call. Must run on the thread of that call, before any
    other libagent call there (agent_last_error is per thread)."""
    if status != OK:
        raise error_for(status, last_error())


def error_for_last(status: int):
    """The exception for a failed call, read on the calling thread right after the call."""
    return error_for(status, last_error())


def mark_runtime_thread() -> None:
    """Called first by every trampoline: remembers libagent's runtime thread(s)."""
    RUNTIME_THREADS.add(threading.get_ident())


def take_string(ptr: c_void_p) -> str:
    """Copies and frees a `char *` returned by libagent."""
    try:
        return ctypes.string_at(ptr.value).decode("utf-8")
    finally:
        lib.agent_string_free(ptr)


def dumps(value: Any) -> bytes:
    """Compact JSON (UTF-8) for libagent; pydantic models, dataclasses, enums, datetimes and
    other common Python values are converted the way pydantic serializes them."""
    return pydantic_core.to_json(value)


def encode(text: str) -> bytes:
    return text.encode("utf-8")


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

# Threads on which libagent has called us: its runtime thread(s). A blocking wait there would
# never finish (the C ABI reports that only from its own waits, after a run was started).
RUNTIME_THREADS: set = set()


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

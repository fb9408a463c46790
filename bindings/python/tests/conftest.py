"""Shared helpers. Every test drives the real libagent shared library bundled in the installed
package (or LIBAGENT_LIBRARY)."""

import gc
import threading
import time

import pytest

import libagent
from libagent import _native

SAFETY_TIMEOUT = 20.0  # a safety net against hangs, never an assertion about speed


def text_reply(text, chunks=1):
    return {"content": [{"type": "text", "text": text, "chunks": chunks}]}


def tool_call(call_id, name, arguments):
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def calls_reply(*calls):
    return {"content": list(calls)}


def wait_until(predicate, what):
    """Waits (bounded) for something libagent does asynchronously, e.g. a finalizer."""
    deadline = time.monotonic() + SAFETY_TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        gc.collect()
        time.sleep(0.01)


def registry_size():
    return len(_native.REGISTRY)


class Gate:
    """A threading.Event with a safety timeout."""

    def __init__(self):
        self.event = threading.Event()

    def open(self):
        self.event.set()

    def wait(self):
        assert self.event.wait(SAFETY_TIMEOUT), "gate never opened"


@pytest.fixture
def baseline():
    """The registry size before the test; the test may check everything it added was released."""
    gc.collect()
    return registry_size()


def roles(messages):
    return [m["role"] for m in messages]


__all__ = ["libagent", "text_reply", "tool_call", "calls_reply", "wait_until", "registry_size", "Gate", "roles"]

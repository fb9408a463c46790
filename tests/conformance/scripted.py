"""The scripted model (kit README §3.2, §4) and the scripted tools (§2.4, §3.3), driven through
libagent's C ABI. Everything here runs on libagent's runtime thread or on timer threads; nothing
blocks the runtime thread."""

from __future__ import annotations

import json
import os
import threading
import time

from ffi import ConsumedFn, dumps

# LIBAGENT_TYPED_PUSH=1: every delta-form block event that a typed push can express goes through
# it (agent_stream_push_text_delta & co.) instead of agent_stream_push; the traces must not change.
TYPED_PUSH = os.environ.get("LIBAGENT_TYPED_PUSH") == "1"
TYPED_PUSHES = [0]  # how many events went through a typed push (reported by the runner)

BLOCK_KINDS = {"text": 0, "thinking": 1, "toolcall": 2}


def typed_push(event):
    """(function name, arguments) of the typed push standing for `event`, or None when it has
    fields a typed push cannot carry (a `partial`, `content`, a non-integer index, ...)."""
    if not isinstance(event, dict):
        return None
    kind, index = event.get("type"), event.get("contentIndex")
    if not isinstance(kind, str) or "_" not in kind:
        return None
    if type(index) is not int or index < 0:
        return None
    block, _, step = kind.partition("_")
    if block not in BLOCK_KINDS:
        return None
    keys = list(event)
    if step == "delta" and keys == ["type", "contentIndex", "delta"] and isinstance(event["delta"], str):
        try:
            text = event["delta"].encode("utf-8")
        except UnicodeEncodeError:
            return None
        return f"agent_stream_push_{block}_delta", (index, text, len(text))
    if step == "start" and keys == ["type", "contentIndex"]:
        return "agent_stream_push_block_start", (BLOCK_KINDS[block], index)
    if step == "start" and block == "toolcall" and set(keys) <= {"type", "contentIndex", "id", "toolName"}:
        if any(key in event and not isinstance(event[key], str) for key in ("id", "toolName")):
            return None
        fields = [event.get("id"), event.get("toolName")]
        try:
            id_, name = (None if f is None else f.encode("utf-8") for f in fields)
        except UnicodeEncodeError:
            return None
        return "agent_stream_push_toolcall_start", (index, id_, len(id_ or b""), name, len(name or b""))
    if step == "end" and keys == ["type", "contentIndex"]:
        return "agent_stream_push_block_end", (BLOCK_KINDS[block], index)
    return None

ZERO_USAGE = {
    "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
DEFAULT_ABORT_MESSAGE = "Request was aborted"
EXHAUSTED_MESSAGE = "Scripted model has no response left"
DEFAULT_TOOL_RESULT = {"content": [{"type": "text", "text": "ok"}], "details": {}}


def js_value(value):
    """Integral floats as ints, so numbers print the way JavaScript prints them."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: js_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [js_value(v) for v in value]
    return value


def canonical_json(value) -> str:
    """Compact JSON, keys sorted by code point (README §7 rules 3-5)."""
    return json.dumps(js_value(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def split_text(text: str, chunks: int) -> list[str]:
    """`text` cut into min(chunks, L) pieces of whole code points (§4.2)."""
    length = len(text)
    if length == 0:
        return []
    n = min(chunks, length)
    return [text[i * length // n:(i + 1) * length // n] for i in range(n)]


def block_deltas(block, text):
    if "deltas" in block:
        if "".join(block["deltas"]) != text:
            raise ValueError("deltas do not join to the block's text")
        return list(block["deltas"])
    return split_text(text, int(block.get("chunks", 1)))


def base_partial(model, usage, timestamp):
    partial = {"role": "assistant", "content": []}
    for target, source in (("api", "api"), ("provider", "provider"), ("model", "id")):
        if source in model:
            partial[target] = model[source]
    partial.update({"usage": usage, "stopReason": "pending", "timestamp": timestamp})
    return partial


def expand(response, model, timestamp):
    """Delta-form events of one response (§4.3): (initial partial, events, terminal event).
    libagent rebuilds the partials (SPEC §3.7), including the tool-call partial JSON."""
    usage = response.get("usage", ZERO_USAGE)
    initial = base_partial(model, usage, timestamp)
    events = [{"type": "start", "partial": initial}]
    content = response.get("content", [])
    for index, block in enumerate(content):
        kind = block["type"]
        if kind in ("text", "thinking"):
            full = block[kind]
            events.append({"type": f"{kind}_start", "contentIndex": index})
            for delta in block_deltas(block, full):
                events.append({"type": f"{kind}_delta", "contentIndex": index, "delta": delta})
            end = {"type": f"{kind}_end", "contentIndex": index, "content": full}
            if "signature" in block:
                end["contentSignature"] = block["signature"]
            events.append(end)
        else:
            text = block["argsText"] if "argsText" in block else canonical_json(block.get("arguments", {}))
            events.append({"type": "toolcall_start", "contentIndex": index, "id": block["id"],
                           "toolName": block["name"]})
            for delta in block_deltas(block, text):
                events.append({"type": "toolcall_delta", "contentIndex": index, "delta": delta})
            events.append({"type": "toolcall_end", "contentIndex": index})
    has_tool_call = any(block["type"] == "toolCall" for block in content)
    reason = response.get("stopReason", "toolUse" if has_tool_call else "stop")
    terminal = {"type": "error" if reason in ("error", "aborted") else "done", "reason": reason,
                "usage": usage}
    if "errorMessage" in response:
        terminal["errorMessage"] = response["errorMessage"]
    return initial, events, terminal


class Producer:
    """Delivers one response's events in lock step with the agent (§3.2): the first from the
    stream function, each next one from the stream's consumed notification (after `delayMs` on
    a timer thread), checking the abort flag before each."""

    def __init__(self, run, stream, response, model):
        self.run = run
        self.lib = run.lib
        self.stream = stream
        timestamp = int(time.time() * 1000)
        if response is None:
            self.initial = base_partial(model, ZERO_USAGE, timestamp)
            self.events = []
            error = dict(self.initial, stopReason="error", errorMessage=EXHAUSTED_MESSAGE)
            self.terminal = {"type": "error", "reason": "error", "error": error}
            response = {}
        else:
            self.initial, self.events, self.terminal = expand(response, model, timestamp)
        self.delay = int(response.get("delayMs", 0))
        self.wait_for_abort = response.get("waitForAbort", False) is True
        self.abort_message = response.get("abortMessage", DEFAULT_ABORT_MESSAGE)
        self.limit = len(self.events)
        if self.wait_for_abort:
            self.limit = min(int(response.get("stallAfter", len(self.events))), len(self.events))
        self.next = 0
        self.finished = False
        self.lock = threading.Lock()

    def begin(self):
        callback = self.lib.hold(ConsumedFn(lambda _ud, _stream: self.run.guard(self.schedule)))
        self.lib.call("agent_stream_on_consumed", self.stream, callback, None, None)
        self.schedule()

    def schedule(self):
        if self.delay > 0:
            timer = threading.Timer(self.delay / 1000, lambda: self.run.guard(self.step))
            timer.daemon = True
            timer.start()
        else:
            self.step()

    def aborted_event(self):
        if self.next == 0:
            # Nothing delivered yet: the aborted message is built from the initial partial.
            error = dict(self.initial, stopReason="aborted", errorMessage=self.abort_message)
            return {"type": "error", "reason": "aborted", "error": error}
        return {"type": "error", "reason": "aborted", "errorMessage": self.abort_message}

    def step(self):
        with self.lock:
            if self.finished:
                return
            if self.lib.is_aborted(self.stream):
                self.finished = True
                event = self.aborted_event()
            elif self.next < self.limit:
                event = self.events[self.next]
                self.next += 1
            elif self.wait_for_abort:
                self.finished = True
                event = None
            else:
                self.finished = True
                event = self.terminal
        if event is None:
            # Stall until the run aborts; the abort notification delivers the aborted end.
            self.lib.on_abort(self.stream, lambda: self.run.guard(lambda: self.push(self.aborted_event())))
            return
        self.push(event)

    def push(self, event):
        typed = typed_push(event) if TYPED_PUSH else None
        if typed is None:
            pushed = self.lib.push(self.stream, dumps(event))
        else:
            name, args = typed
            pushed = self.lib.attempt(name, self.stream, *args)
            TYPED_PUSHES[0] += 1
        if not pushed:
            # The run stopped consuming (a listener threw, the run ended): stop producing.
            with self.lock:
                self.finished = True


class ToolRun:
    """One `execute()` of a scripted tool (§2.4 Invocation, §3.3)."""

    def __init__(self, run, definition, call_id, call):
        self.run = run
        self.lib = run.lib
        self.call = call
        calls = definition.get("calls", {})
        self.invocation = calls[call_id] if call_id in calls else definition.get("default", {})
        self.steps = self.invocation.get("steps", [])
        self.on_abort_outcome = self.invocation.get("onAbort")
        self.index = 0
        self.waiting = None  # the timer of the wait step in progress
        self.settled = False
        self.lock = threading.Lock()

    def start(self):
        if self.on_abort_outcome is not None:
            self.lib.on_abort(self.call, lambda: self.run.guard(self.aborted))
        self.advance()

    def advance(self):
        """Runs steps until a wait (scheduled on a timer) or the end (settles)."""
        while True:
            with self.lock:
                if self.settled:
                    return
                self.waiting = None
                if self.index >= len(self.steps):
                    break
                step = self.steps[self.index]
                self.index += 1
            if "update" in step:
                self.lib.tool_update(self.call, dumps(step["update"]))
                continue
            if self.on_abort_outcome is not None and self.lib.is_aborted(self.call):
                self.settle(self.on_abort_outcome)
                return
            with self.lock:
                if self.settled:
                    return
                timer = threading.Timer(step["wait"] / 1000, lambda: self.run.guard(self.advance))
                timer.daemon = True
                self.waiting = timer
                timer.start()
            return
        if "throw" in self.invocation:
            self.settle({"throw": self.invocation["throw"]})
        else:
            self.settle({"result": self.invocation.get("result", DEFAULT_TOOL_RESULT)})

    def aborted(self):
        """The abort notification: a wait in progress ends at once with the onAbort outcome."""
        with self.lock:
            if self.settled or self.waiting is None:
                return
            self.waiting.cancel()
            self.waiting = None
        self.settle(self.on_abort_outcome)

    def settle(self, outcome):
        with self.lock:
            if self.settled:
                return
            self.settled = True
        if "throw" in outcome:
            self.lib.fail(self.call, outcome["throw"])
        else:
            self.lib.complete(self.call, outcome["result"])
        late = self.invocation.get("lateUpdate")
        if late is not None:
            payload = dumps(late["partialResult"])
            timer = threading.Timer(
                int(late.get("afterMs", 0)) / 1000,
                lambda: self.run.guard(lambda: self.lib.tool_update(self.call, payload)),
            )
            timer.daemon = True
            timer.start()


def prepare_arguments(spec, args):
    """The PrepareSpec shim (§2.4): a new object when something changed, else None."""
    if not isinstance(args, dict):
        return None
    out = args
    for rename in spec.get("rename", []):
        source, target = rename["from"], rename["to"]
        if source not in out:
            continue
        if out is args:
            out = dict(args)
        value = out.pop(source)
        out[target] = value
    for key, value in spec.get("defaults", {}).items():
        if key not in out:
            if out is args:
                out = dict(args)
            out[key] = value
    return None if out is args else out

#!/usr/bin/env python3
"""libagent conformance runner: interprets the kit's scenarios (../shared/conformance/README.md)
and drives libagent only through its public C ABI (ctypes over libagent.so).

    python3 tests/conformance/runner.py --lib PATH/libagent.so --out DIR SCENARIO.json|DIR ...

writes DIR/<name>.jsonl per scenario (normalized per README §7). Each scenario runs in a child
process of its own with a 20 s timeout; an invalid scenario (unknown field, wrong type,
unsupported op) or a failing run is reported on stderr and makes the exit status 1.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check import ScenarioError, check_scenario  # noqa: E402
from ffi import (  # noqa: E402
    AGENT_LISTENER_CONTINUE, AGENT_LISTENER_LATER, AGENT_RUN_FAILED, AGENT_RUN_FREED, HOOK_KINDS,
    AgentError, AgentHandle, AgentOptions, AgentReply, AgentTool, DoneFn, HookFn, Lib,
    ListenerFn, PrepareArgumentsFn, StreamFn, ToolExecuteFn, dumps, text_at,
)
import scripted  # noqa: E402
from scripted import Producer, ToolRun, js_value, prepare_arguments  # noqa: E402

TYPED_PUSH_REPORT = "typed pushes: "

SCENARIO_TIMEOUT_S = 20
STANDARD_ROLES = ("system", "user", "assistant", "toolResult")
MISSING = object()


def normalize(value, key=None):
    """README §7: `timestamp` numbers to 0, `durationMs` to "<ms>", at any depth."""
    if key == "timestamp" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return 0
    if key == "durationMs":
        return "<ms>"
    if isinstance(value, dict):
        return {k: normalize(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def line_text(entry) -> str:
    return json.dumps(js_value(normalize(entry)), ensure_ascii=False, separators=(",", ":"),
                      sort_keys=True)


def get(obj, *path):
    """obj[path...] or MISSING (JavaScript `undefined`)."""
    for key in path:
        if isinstance(obj, dict) and key in obj:
            obj = obj[key]
        elif isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
            obj = obj[key]
        else:
            return MISSING
    return obj


def defined(**fields):
    return {k: v for k, v in fields.items() if v is not MISSING}


def roles(messages):
    return [m.get("role") if isinstance(m, dict) else None for m in messages or []]


def apply_transform(steps, messages):
    out = list(messages)
    for step in steps:
        if "keepLast" in step:
            n = int(step["keepLast"])
            out = out[-n:] if n > 0 else []
        elif "keepSystemAndLast" in step:
            cut = max(0, len(out) - int(step["keepSystemAndLast"]))
            out = [m for m in out[:cut] if get(m, "role") == "system"] + out[cut:]
        elif "dropRoles" in step:
            out = [m for m in out if get(m, "role") not in step["dropRoles"]]
        elif "append" in step:
            out = out + list(step["append"])
        elif "prepend" in step:
            out = list(step["prepend"]) + out
    return out


def apply_role_map(role_map, messages):
    out = []
    for message in messages:
        role = get(message, "role")
        action = role_map.get(role) if isinstance(role, str) and role in role_map else (
            "keep" if role in STANDARD_ROLES else "drop")
        if action == "keep":
            out.append(message)
        elif action == "user":
            out.append(defined(role="user", content=get(message, "content"), timestamp=get(message, "timestamp")))
    return out


def turn_record(turn):
    return defined(
        stopReason=get(turn, "message", "stopReason"),
        toolResultIds=[get(r, "toolCallId") for r in get(turn, "toolResults") or []],
        contextLength=len(get(turn, "context", "messages") or []),
        newMessagesLength=len(get(turn, "newMessages") or []),
    )


class Run:
    def __init__(self, lib: Lib, scenario):
        self.lib = lib
        self.s = scenario
        self.lines: list[str] = []
        self.lines_lock = threading.Lock()
        self.crashed: str | None = None
        self.crash_event = threading.Event()
        self.pending = []
        self.models = scenario.get("models", {})
        self.tool_defs = {d.get("key", d["name"]): d for d in scenario.get("tools", [])}
        self.tools = {}
        self.requests = 0
        self.hook_counts: dict[str, int] = {}
        self.listeners = {}
        self.triggers = [dict(t, seen=0, fired=False, index=i) for i, t in enumerate(scenario.get("triggers", []))]
        self.handle = None

    # -- bookkeeping -----------------------------------------------------------------------------

    def record(self, entry):
        text = line_text(entry)
        with self.lines_lock:
            self.lines.append(text)

    def crash(self, message):
        if self.crashed is None:
            self.crashed = message
        self.crash_event.set()

    def guard(self, fn):
        """Runs a callback body; an exception is a runner crash, never silently dropped."""
        try:
            return fn()
        except ScenarioError as error:
            self.crash(f"invalid scenario: {error}")
        except Exception:  # noqa: BLE001 - reported, then the scenario fails
            self.crash(traceback.format_exc())
        return None

    def wait(self, event: threading.Event):
        while not event.wait(0.05):
            if self.crash_event.is_set():
                raise RuntimeError(self.crashed)

    # -- construction ----------------------------------------------------------------------------

    def build_tool(self, definition):
        spec = {
            "name": definition["name"],
            "label": definition.get("label", definition["name"]),
            "description": definition.get("description", ""),
            "parameters": definition.get("parameters", {"type": "object", "properties": {}}),
        }
        if "executionMode" in definition:
            spec["executionMode"] = definition["executionMode"]

        def execute(_ud, call_id, call_id_len, args_json, args_len, call):
            def body():
                call_id_text = text_at(call_id, call_id_len)
                self.record({"kind": "tool_execute", "toolName": definition["name"],
                             "toolCallId": call_id_text, "args": json.loads(text_at(args_json, args_len))})
                ToolRun(self, definition, call_id_text, call).start()
            if self.guard(body) is None and self.crashed:
                self.lib.fail(call, "runner crashed")

        tool = AgentTool()
        callback = self.lib.hold(ToolExecuteFn(execute))
        data = dumps(spec)
        self.lib.call("agent_tool_new", data, len(data), callback, None, None, ctypes.byref(tool))
        if "prepareArguments" in definition:
            def prepare(_ud, args_json, args_len, call):
                def body():
                    changed = prepare_arguments(definition["prepareArguments"],
                                                json.loads(text_at(args_json, args_len)))
                    self.lib.complete(call, changed)
                self.guard(body)
                if self.crashed:
                    self.lib.fail(call, "runner crashed")
            shim = self.lib.hold(PrepareArgumentsFn(prepare))
            self.lib.call("agent_tool_set_prepare_arguments", tool, shim, None, None)
        return tool

    def build_agent(self):
        s = self.s
        agent = s.get("agent", {})
        for key, definition in self.tool_defs.items():
            self.tools[key] = self.build_tool(definition)
        options = {}
        initial_tools = []
        if "initialState" in agent:
            spec = agent["initialState"]
            init = {}
            for key in ("systemPrompt", "thinkingLevel", "messages"):
                if key in spec:
                    init[key] = spec[key]
            if "model" in spec:
                init["model"] = self.models[spec["model"]]
            initial_tools = spec.get("tools", [])
            options["initialState"] = init
        for key in ("toolExecution", "steeringMode", "followUpMode", "sessionId", "transport",
                    "thinkingBudgets", "maxRetryDelayMs", "identity"):
            if key in agent:
                options[key] = agent[key]
        opts = AgentOptions()
        data = dumps(options)
        self.lib.call("agent_options_new", data, len(data), ctypes.byref(opts))
        for key in initial_tools:
            self.lib.call("agent_options_add_tool", opts, self.tools[key])
        stream_fn = self.lib.hold(StreamFn(self.stream_fn))
        self.lib.call("agent_options_set_stream_fn", opts, stream_fn, None, None)
        for name, rules in s.get("hooks", {}).items():
            if name == "comment":
                continue
            hook = self.lib.hold(HookFn(self.make_hook(name, rules)))
            self.lib.call("agent_options_set_hook", opts, HOOK_KINDS[name], hook, None, None)
        handle = AgentHandle()
        self.lib.call("agent_new", opts, ctypes.byref(handle))
        self.handle = handle

    # -- the scripted model ----------------------------------------------------------------------

    def stream_fn(self, _ud, request_json, request_len, stream):
        def body():
            request = json.loads(text_at(request_json, request_len))
            self.requests += 1
            index = self.requests
            model = request.get("model") or {}
            self.record(defined(kind="request", index=index, model=get(model, "id"),
                                aborted=self.lib.is_aborted(stream), options=request.get("options", {}),
                                messages=get(request, "context", "messages")))
            responses = self.s.get("responses", [])
            response = responses[index - 1] if index <= len(responses) else None
            if response is not None and "throw" in response:
                self.lib.fail(stream, response["throw"])
                return True
            Producer(self, stream, response, model).begin()
            return True
        if self.guard(body) is None:
            self.lib.fail(stream, f"runner crashed: {self.crashed}")

    # -- hooks -----------------------------------------------------------------------------------

    def make_hook(self, name, rules):
        def hook(_ud, input_json, input_len, call):
            def body():
                self.hook_call(name, rules, json.loads(text_at(input_json, input_len)), call)
                return True
            if self.guard(body) is None:
                self.lib.fail(call, f"runner crashed: {self.crashed}")
        return hook

    def hook_call(self, name, rules, value, call):
        index = self.hook_counts[name] = self.hook_counts.get(name, 0) + 1
        facts = {}
        if name in ("beforeToolCall", "afterToolCall"):
            facts = defined(toolName=get(value, "toolCall", "name"), toolCallId=get(value, "toolCall", "id"))
            extra = defined(args=get(value, "args"), contextLength=len(get(value, "context", "messages") or []))
            if name == "beforeToolCall":
                extra.update(defined(rawArgs=get(value, "toolCall", "arguments")))
            else:
                extra.update(defined(result=get(value, "result"), isError=get(value, "isError")))
            details = {**facts, **extra}
        elif name in ("finishTurn", "prepareNextTurnWithContext"):
            details = turn_record(value)
        elif name == "prepareRequest":
            details = defined(model=get(value, "model", "id"), thinkingLevel=get(value, "thinkingLevel"),
                              contextRoles=roles(get(value, "context", "messages") or []))
        elif name in ("transformContext", "convertToLlm"):
            details = {"roles": roles(value)}
        else:
            details = {}
        self.record({"kind": "hook", "hook": name, "index": index, **details})
        rule = next((r for r in rules if all(
            (index if key == "index" else facts.get(key, MISSING)) == want
            for key, want in r.get("match", {}).items() if key != "comment")), None)
        if rule is not None and "ops" in rule:
            self.exec_ops(rule["ops"], f"hook:{name}:{index}", nested=True)
        answer = self.hook_answer(name, rule, value)

        def finish():
            if rule is not None and "throw" in rule:
                self.lib.fail(call, rule["throw"])
            elif not self.lib.complete(call, answer):
                raise RuntimeError("the hook's answer was refused")
        delay = int(rule.get("delayMs", 0)) if rule is not None else 0
        if delay > 0:
            timer = threading.Timer(delay / 1000, lambda: self.guard(finish))
            timer.daemon = True
            timer.start()
        else:
            finish()

    def hook_answer(self, name, rule, value):
        result = rule.get("result", MISSING) if rule is not None else MISSING
        if name == "transformContext":
            return None if rule is None else apply_transform([] if result is MISSING else result, value)
        if name == "convertToLlm":
            return apply_role_map({} if result is MISSING else result, value)
        if result is MISSING:
            return None
        if name in ("prepareRequest", "prepareNextTurn", "prepareNextTurnWithContext"):
            update = {}
            if "model" in result:
                update["model"] = self.models[result["model"]]
            if "thinkingLevel" in result:
                update["thinkingLevel"] = result["thinkingLevel"]
            if "context" in result:
                context = get(value, "context")
                context = dict(context) if isinstance(context, dict) else {}
                context["messages"] = apply_transform(result["context"], context.get("messages") or [])
                # In answers, a context's tools are named (C ABI).
                context["tools"] = [t.get("name") if isinstance(t, dict) else t for t in context.get("tools") or []]
                update["context"] = context
            if "messages" in result:
                update["messages"] = result["messages"]
            return update
        return result

    # -- listeners -------------------------------------------------------------------------------

    def matches(self, on, event):
        if event.get("type") != on["type"]:
            return False
        checks = (("subtype", get(event, "assistantMessageEvent", "type")), ("role", get(event, "message", "role")),
                  ("toolCallId", get(event, "toolCallId")), ("toolName", get(event, "toolName")))
        return all(field not in on or on[field] == actual for field, actual in checks)

    def answer_failure(self, event, message):
        """A listener failing its event: defer it and fail the reply (AGENT_LISTENER_LATER)."""
        reply = AgentReply()
        self.lib.call("agent_event_defer", event, ctypes.byref(reply))
        data = message.encode()
        self.lib.call("agent_reply_fail", reply, data, len(data))
        return AGENT_LISTENER_LATER

    def recorder(self, _ud, event):
        def body():
            value = json.loads(self.lib.event_json(event))
            self.record({"kind": "event", "event": value})
            for trigger in self.triggers:
                if trigger["fired"] or not self.matches(trigger["on"], value):
                    continue
                trigger["seen"] += 1
                if trigger["seen"] != int(trigger["on"].get("nth", 1)):
                    continue
                trigger["fired"] = True
                self.exec_ops(trigger["ops"], f"trigger:{trigger['index']}", nested=True)
            return True
        if self.guard(body) is None:
            return self.answer_failure(event, f"runner crashed: {self.crashed}")
        return AGENT_LISTENER_CONTINUE

    def extra_listener(self, definition):
        seen = [0]

        def listener(_ud, event):
            def body():
                value = json.loads(self.lib.event_json(event))
                self.record({"kind": "listener", "id": definition["id"], "type": value.get("type")})
                throw = definition.get("throwAt")
                if throw is not None and value.get("type") == throw["type"]:
                    seen[0] += 1
                    if seen[0] == int(throw.get("nth", 1)):
                        return throw["message"]
                return ""
            outcome = self.guard(body)
            if outcome is None:
                return self.answer_failure(event, f"runner crashed: {self.crashed}")
            if outcome:
                return self.answer_failure(event, outcome)
            return AGENT_LISTENER_CONTINUE
        return listener

    def subscribe(self, listener_id):
        state = self.listeners[listener_id]
        if state["id"] is not None:
            raise ScenarioError(f"listener {listener_id} is already subscribed")
        out = ctypes.c_uint64()
        self.lib.call("agent_subscribe", self.handle, state["fn"], None, None, ctypes.byref(out))
        state["id"] = out.value

    def unsubscribe(self, listener_id):
        state = self.listeners[listener_id]
        if state["id"] is None:
            raise ScenarioError(f"listener {listener_id} is not subscribed")
        self.lib.call("agent_unsubscribe", self.handle, ctypes.c_uint64(state["id"]))
        state["id"] = None

    # -- host operations -------------------------------------------------------------------------

    def snapshot(self):
        state = self.lib.owned_json("agent_get_state", self.handle)
        return {
            "systemPrompt": get(state, "systemPrompt"),
            "model": get(state, "model", "id"),
            "thinkingLevel": get(state, "thinkingLevel"),
            "tools": [t.get("name") for t in state.get("tools", [])],
            "messages": state.get("messages"),
            "isStreaming": state.get("isStreaming"),
            "streamingMessage": state.get("streamingMessage"),
            "pendingToolCalls": sorted(state.get("pendingToolCalls", [])),
            "errorMessage": state.get("errorMessage"),
            "steeringMode": state.get("steeringMode"),
            "followUpMode": state.get("followUpMode"),
            "steeringQueue": state.get("steeringQueue"),
            "followUpQueue": state.get("followUpQueue"),
        }

    def exec_ops(self, ops, source, nested):
        for index, op in enumerate(ops):
            self.exec_op(op, source, index, nested)

    def start_run(self, op, done):
        lib, handle = self.lib, self.handle
        if op["op"] == "continue":
            return lib.lib.agent_continue(handle, done, None, None)
        if "text" in op:
            text = op["text"].encode()
            images = dumps(op["images"]) if "images" in op else None
            return lib.lib.agent_prompt_text(handle, text, len(text), images,
                                             len(images) if images else 0, done, None, None)
        data = dumps(op["message"] if "message" in op else op["messages"])
        return lib.lib.agent_prompt(handle, data, len(data), done, None, None)

    def exec_op(self, op, source, index, nested):
        name = op["op"]
        line = {"kind": "op", "source": source, "index": index, "op": name}
        if name == "set":
            line["field"] = op["field"]
        if name in ("subscribe", "unsubscribe"):
            line["listener"] = op["listener"]
        lib, handle = self.lib, self.handle
        try:
            if name in ("prompt", "continue"):
                slot = {"event": threading.Event(), "failed": False, "error": ""}

                def done(_ud, _run, outcome, slot=slot):
                    # The promise rejected (a listener failed) or the agent was freed.
                    slot["failed"] = outcome[0].status in (AGENT_RUN_FAILED, AGENT_RUN_FREED)
                    slot["error"] = outcome[0].error_message.text()
                    slot["event"].set()
                callback = lib.hold(DoneFn(done))
                lib.check(self.start_run(op, callback))
                if op.get("await", True) is False or nested:
                    # Nested runs cannot start (a run is active); a non-awaited one is recorded
                    # by the next waitForIdle.
                    self.pending.append((line, slot))
                    return
                self.wait(slot["event"])
                self.record_outcome(line, slot)
                return
            if name in ("steer", "followUp"):
                message = op["message"] if "message" in op else {
                    "role": "user", "content": [{"type": "text", "text": op["text"]}], "timestamp": 0}
                data = dumps(message)
                lib.call("agent_steer" if name == "steer" else "agent_follow_up", handle, data, len(data))
            elif name == "abort":
                lib.call("agent_abort", handle)
            elif name == "waitForIdle":
                lib.call("agent_wait_for_idle", handle, -1, ctypes.byref(ctypes.c_int32()))
                self.flush_pending()
            elif name == "reset":
                lib.call("agent_reset", handle)
            elif name == "set":
                self.set_field(op)
            elif name == "clearSteeringQueue":
                lib.call("agent_clear_steering_queue", handle)
            elif name == "clearFollowUpQueue":
                lib.call("agent_clear_follow_up_queue", handle)
            elif name == "clearAllQueues":
                lib.call("agent_clear_all_queues", handle)
            elif name == "peekQueuedMessages":
                self.record({**line, "ok": True, "result": lib.owned_json("agent_peek_queued_messages", handle)})
                return
            elif name == "hasQueuedMessages":
                out = ctypes.c_bool()
                lib.call("agent_has_queued_messages", handle, ctypes.byref(out))
                self.record({**line, "ok": True, "result": bool(out.value)})
                return
            elif name == "snapshot":
                self.record({"kind": "snapshot", "source": source, "index": index,
                             "label": op.get("label"), "state": self.snapshot()})
                return
            elif name == "subscribe":
                self.subscribe(op["listener"])
            elif name == "unsubscribe":
                self.unsubscribe(op["listener"])
            else:
                raise ScenarioError(f'unsupported operation "{name}"')
            self.record({**line, "ok": True})
        except AgentError as error:
            self.record({**line, "ok": False, "error": error.message})

    def record_outcome(self, line, slot):
        if not slot["failed"]:
            self.record({**line, "ok": True})
        else:
            self.record({**line, "ok": False, "error": slot["error"]})

    def flush_pending(self):
        pending, self.pending = self.pending, []
        for line, slot in pending:
            self.wait(slot["event"])
            self.record_outcome(line, slot)

    def set_field(self, op):
        field, value, lib = op["field"], op["value"], self.lib
        if field == "model":
            data = dumps({"model": self.models[value]})
            lib.call("agent_configure", self.handle, data, len(data))
        elif field == "tools":
            array = (AgentTool * max(1, len(value)))(*[self.tools[k] for k in value])
            lib.call("agent_set_tools", self.handle, array, len(value))
        elif field == "messages":
            data = dumps(value)
            lib.call("agent_set_messages", self.handle, data, len(data))
        else:
            data = dumps({field: value})
            lib.call("agent_configure", self.handle, data, len(data))
        # thenPushToSource changes only the runner's own source array: the agent copied it.

    # -- the whole scenario ----------------------------------------------------------------------

    def execute(self):
        self.record({"kind": "scenario", "name": self.s["name"]})
        self.build_agent()
        self.listeners["L1"] = {"fn": self.lib.hold(ListenerFn(self.recorder)), "id": None}
        for definition in self.s.get("listeners", []):
            self.listeners[definition["id"]] = {
                "fn": self.lib.hold(ListenerFn(self.extra_listener(definition))), "id": None}
        self.subscribe("L1")
        for definition in self.s.get("listeners", []):
            if definition.get("subscribe", True) is not False:
                self.subscribe(definition["id"])
        self.exec_ops(self.s["script"], "script", nested=False)
        if self.pending:
            self.lib.call("agent_wait_for_idle", self.handle, -1, ctypes.byref(ctypes.c_int32()))
            self.flush_pending()
        self.record({"kind": "snapshot", "source": "final", "index": 0, "label": "final",
                     "state": self.snapshot()})
        if self.crashed:
            raise RuntimeError(self.crashed)
        return self.lines


def run_child(lib_path: str, file: str) -> int:
    """Runs one scenario in this process and prints its trace."""
    try:
        scenario = json.loads(Path(file).read_text(encoding="utf-8"))
        check_scenario(scenario)
        expected = Path(file).name.removesuffix(".json")
        if scenario["name"] != expected:
            raise ScenarioError(f'name "{scenario["name"]}" does not match file name "{expected}"')
        lines = Run(Lib(lib_path), scenario).execute()
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        sys.stdout.flush()
        if scripted.TYPED_PUSH:
            sys.stderr.write(f"{TYPED_PUSH_REPORT}{scripted.TYPED_PUSHES[0]}\n")
        code = 0
    except ScenarioError as error:
        sys.stderr.write(f"invalid scenario: {error}\n")
        code = 1
    except Exception:  # noqa: BLE001
        sys.stderr.write(traceback.format_exc())
        code = 1
    sys.stderr.flush()
    # Leave at once: timers and libagent's runtime thread must not outlive the trace.
    os._exit(code)


def scenario_files(args):
    files = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            files.extend(sorted(str(p) for p in path.iterdir() if p.suffix == ".json" and p.is_file()))
        else:
            files.append(arg)
    return files


def main(argv) -> int:
    lib = None
    out = None
    child = False
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--lib":
            i += 1
            lib = argv[i] if i < len(argv) else None
        elif argv[i] == "--out":
            i += 1
            out = argv[i] if i < len(argv) else None
        elif argv[i] == "--child":
            child = True
        elif argv[i] in ("-h", "--help"):
            print("usage: runner.py --lib PATH/libagent.so [--out DIR] SCENARIO.json|DIR ...")
            return 0
        else:
            args.append(argv[i])
        i += 1
    if lib is None:
        lib = str(Path(__file__).resolve().parents[2] / "target" / "debug" / "libagent.so")
    if child:
        return run_child(lib, args[0])
    files = scenario_files(args)
    if not args:
        sys.stderr.write("usage: runner.py --lib PATH/libagent.so [--out DIR] SCENARIO.json|DIR ...\n")
        return 2
    empty = [arg for arg in args if Path(arg).is_dir() and not scenario_files([arg])]
    if empty:
        # An empty or partly copied directory must not pass as a run of nothing.
        sys.stderr.write(f"runner.py: no scenarios (*.json) in {empty[0]}; give a directory that holds some.\n")
        return 2
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
    failures = 0
    typed_pushes = 0
    for file in files:
        try:
            result = subprocess.run([sys.executable, __file__, "--child", "--lib", lib, file],
                                    capture_output=True, timeout=SCENARIO_TIMEOUT_S)
        except subprocess.TimeoutExpired as expired:
            failures += 1
            stderr = (expired.stderr or b"").decode("utf-8", "replace")
            sys.stderr.write(f"{file}: failed\nscenario did not finish within {SCENARIO_TIMEOUT_S} s\n{stderr}")
            continue
        if result.returncode != 0:
            failures += 1
            sys.stderr.write(f"{file}: failed (exit {result.returncode})\n"
                             f"{result.stderr.decode('utf-8', 'replace')}")
            continue
        for line in result.stderr.decode("utf-8", "replace").splitlines():
            if line.startswith(TYPED_PUSH_REPORT):
                typed_pushes += int(line.removeprefix(TYPED_PUSH_REPORT))
        if out:
            name = Path(file).name.removesuffix(".json")
            (Path(out) / f"{name}.jsonl").write_bytes(result.stdout)
        else:
            sys.stdout.buffer.write(result.stdout)
    if scripted.TYPED_PUSH:
        # The mode proves the typed pushes equivalent only if they were used.
        print(f"LIBAGENT_TYPED_PUSH=1: {typed_pushes} events pushed through the typed pushes")
        if typed_pushes == 0:
            failures += 1
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

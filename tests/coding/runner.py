#!/usr/bin/env python3
"""Runs coding-tool fixtures (../shared/coding/README.md) through libagent's C ABI.

    python3 tests/coding/runner.py --lib target/debug/libagent.so --out OUT_DIR FIXTURES_DIR

For each fixture: lay out its tree in a fresh directory (the root), create the coding pack for it
(`agent_coding_tools_new`, bash on, default limits, no consent hook), start an agent with those
tools, sequential tool execution and the built-in scripted model asking for the fixture's calls
one per turn, prompt once, and write the trace: every `tool_execution_end`, the tree afterwards
and, with `recordDefinitions`, the tools' definitions as the agent holds them.

A call's `args` are the arguments the model sent, with each field the tool's `prepareArguments`
rewrote shown as rewritten (the reference's shim rewrites the arguments object in place, so its
traces show edit's `edits` normalized but legacy `oldText`/`newText` kept).
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import json
import os
import shutil
import sys
import tempfile
from ctypes import POINTER, c_char_p, c_size_t, c_void_p

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from ffi import (  # noqa: E402
    AGENT_LISTENER_CONTINUE, AGENT_NTS, HOOK_KINDS, AgentHandle, AgentOptions, AgentTool, DoneFn, HookFn,
    Lib, ListenerFn, dumps, text_at,
)

ALL_TOOLS = ["read", "write", "edit", "ls", "find", "grep", "bash"]
DEFINITION_KEYS = ["name", "label", "description", "parameters", "outputSchema", "constrainedSampling", "executionMode"]
MODEL = {
    "id": "model-1", "name": "Scripted", "api": "scripted-api", "provider": "scripted", "baseUrl": "",
    "reasoning": False, "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 100000, "maxTokens": 4096,
}


def lay_out(root, files):
    for rel, spec in (files or {}).items():
        path = os.path.join(root, rel)
        if rel.endswith("/"):
            os.makedirs(path, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(spec, str):
            open(path, "wb").write(spec.encode())
        elif "base64" in spec:
            open(path, "wb").write(base64.b64decode(spec["base64"]))
        elif "symlink" in spec:
            os.symlink(spec["symlink"], path)
        elif "repeat" in spec:
            open(path, "wb").write((spec["repeat"] * spec["times"]).encode())
        else:
            raise ValueError(f"{rel}: unknown file spec")
        if isinstance(spec, dict) and "mode" in spec:
            os.chmod(path, int(spec["mode"], 8))


def snapshot(root):
    out = {}

    def walk(directory):
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = {"symlink": os.readlink(path)}
            elif os.path.isdir(path):
                if not os.listdir(path):
                    out[rel + "/"] = {}
                walk(path)
            else:
                data = open(path, "rb").read()
                try:
                    text = data.decode("utf-8")
                    out[rel] = {"bytes": len(data)} if len(data) > 4096 else text
                except UnicodeDecodeError:
                    out[rel] = {"base64": base64.b64encode(data).decode()}

    walk(root)
    return out


def replace_root(value, root):
    text = json.dumps(value, ensure_ascii=False)
    real = os.path.realpath(root)
    tmp = tempfile.gettempdir()
    for path in (real, root):
        text = text.replace(json.dumps(path)[1:-1], "<root>")
    text = text.replace(json.dumps(tmp)[1:-1], "<tmp>")
    return json.loads(text)


def in_place(raw, prepared):
    """The raw arguments with the fields the shim rewrote shown rewritten."""
    if not isinstance(raw, dict) or not isinstance(prepared, dict):
        return raw
    return {key: prepared.get(key, value) for key, value in raw.items()}


class Runner:
    def __init__(self, lib_path):
        self.lib = Lib(lib_path)
        self.lib.lib.agent_coding_tools_new.restype = c_void_p
        self.lib.lib.agent_coding_tools_new.argtypes = [
            c_char_p, c_size_t, c_char_p, c_size_t, HookFn, c_void_p, c_void_p, POINTER(AgentTool),
            c_size_t, POINTER(c_size_t)]
        self.lib.lib.agent_tool_free.restype = c_void_p
        self.lib.lib.agent_tool_free.argtypes = [AgentTool]
        self.lib.lib.agent_options_set_scripted_model.restype = c_void_p
        self.lib.lib.agent_options_set_scripted_model.argtypes = [AgentOptions, c_char_p, c_size_t]

    def run(self, fixture):
        root = tempfile.mkdtemp(prefix="coding-kit-")
        try:
            lay_out(root, fixture.get("files"))
            return replace_root(self.trace(fixture, root), root)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def trace(self, fixture, root):
        lib = self.lib
        names = fixture.get("tools") or ALL_TOOLS
        tools = (AgentTool * 8)()
        count = c_size_t()
        options_json = dumps({"tools": names, "bash": True})
        lib.call("agent_coding_tools_new", root.encode(), AGENT_NTS, options_json, len(options_json),
                 HookFn(), None, None, tools, 8, ctypes.byref(count))
        calls = fixture.get("calls", [])
        # "argsText" keeps the keys in the model's order ("arguments" would be sent sorted).
        script = [{"content": [{"type": "toolCall", "id": f"call_{i + 1}", "name": c["tool"], "argsText": json.dumps(c["args"], ensure_ascii=False, separators=(",", ":"))}],
                   "stopReason": "toolUse"} for i, c in enumerate(calls)]
        script.append({"content": [{"type": "text", "text": "done"}]})
        options = AgentOptions()
        options_json = dumps({"initialState": {"systemPrompt": "", "model": MODEL},
                              "toolExecution": "sequential"})
        lib.call("agent_options_new", options_json, len(options_json), ctypes.byref(options))
        for i in range(count.value):
            lib.call("agent_options_add_tool", options, tools[i])
            lib.call("agent_tool_free", tools[i])
        script_json = dumps(script)
        lib.call("agent_options_set_scripted_model", options, script_json, len(script_json))
        prepared = {}

        def before(_ud, input_json, input_len, call):
            value = json.loads(text_at(input_json, input_len))
            prepared[value["toolCall"]["id"]] = value.get("args")
            lib.complete(call)

        lib.call("agent_options_set_hook", options, HOOK_KINDS["beforeToolCall"], lib.hold(HookFn(before)), None, None)
        handle = AgentHandle()
        lib.call("agent_new", options, ctypes.byref(handle))
        results = []
        raw_args = {}

        def listener(_ud, event):
            value = json.loads(lib.event_json(event))
            kind = value.get("type")
            if kind == "tool_execution_start":
                raw_args[value["toolCallId"]] = value.get("args")
            elif kind == "tool_execution_end":
                call_id = value["toolCallId"]
                args = raw_args.get(call_id)
                if call_id in prepared:
                    args = in_place(args, prepared[call_id])
                results.append({"tool": value["toolName"], "args": args, "isError": value["isError"],
                                "result": value["result"]})
            return AGENT_LISTENER_CONTINUE

        lib.call("agent_subscribe", handle, lib.hold(ListenerFn(listener)), None, None, ctypes.byref(ctypes.c_uint64()))
        try:
            lib.call("agent_prompt_text", handle, b"go", 2, None, 0, DoneFn(), None, None)
            lib.call("agent_wait_for_idle", handle, -1, ctypes.byref(ctypes.c_int32()))
            trace = {"name": fixture["name"], "results": results, "tree": snapshot(root)}
            if fixture.get("recordDefinitions"):
                state = lib.owned_json("agent_get_state", handle)
                trace["definitions"] = [{k: t[k] for k in DEFINITION_KEYS if k in t} for t in state["tools"]]
            return trace
        finally:
            lib.call("agent_free", handle)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("fixtures")
    args = parser.parse_args()
    paths = [args.fixtures] if os.path.isfile(args.fixtures) else sorted(
        os.path.join(args.fixtures, f) for f in os.listdir(args.fixtures) if f.endswith(".json"))
    if not paths:
        # An empty or partly copied fixtures directory must not pass as a run of nothing.
        print(f"runner.py: no fixtures (*.json) in {args.fixtures}; give a directory that holds some.", file=sys.stderr)
        return 2
    runner = Runner(args.lib)
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for path in paths:
        fixture = json.load(open(path))
        try:
            trace = runner.run(fixture)
        except Exception as error:  # a broken fixture run is reported, the others still run
            failed += 1
            print(f"{os.path.basename(path)}: runner error: {error}", file=sys.stderr)
            continue
        with open(os.path.join(args.out, os.path.basename(path)), "w") as out:
            json.dump(trace, out, ensure_ascii=False, indent=1)
            out.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""make sessions-interop: session files move between libagent and pi-coding-agent 1.6.0, both ways.

(a) tests/sessions/interop.c runs real agents (the scripted model, host tools) on a new session file:
    a prompt with a tool call, a model change, a thinking-level change, another prompt, a branch back
    to the first answer and a prompt there. pi (tests/sessions/pi.mjs, pi's own SessionManager)
    opens the file and builds the context at the end of the second prompt and at the file's leaf:
    both must equal libagent's, as parsed JSON.
(b) pi writes a session (tool calls and results, model and thinking-level changes, a branch, a label,
    a compaction); libagent opens it (its context must equal pi's), an agent resumes it and is
    prompted once; pi opens the file again and must see the new messages at its leaf, its context
    equal to libagent's.

The reference is installed by tests/sessions/pi.sh (cached in build/sessions-pi). Python 3 standard
library only; the library is target/debug (LIBAGENT_LIBDIR overrides)."""
import glob
import json
import os
import subprocess
import sys
import shutil

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
here = os.path.join(root, "tests", "sessions")
lib = os.environ.get("LIBAGENT_LIBDIR", os.path.join(root, "target", "debug"))
out = os.path.join(root, "build", "sessions-interop")
failures = []
passed = 0


def fail(message):
    sys.exit(f"sessions-interop: {message}")


def first_difference(expected, actual, path="$"):
    """The first JSON path where two parsed documents differ (None when equal). Strict on types:
    true is not 1; numbers compare by value (JSON has one number type)."""
    number = (int, float)
    if isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
        return None if same else f"{path}: pi has {json.dumps(expected)}, libagent {json.dumps(actual)}"
    if isinstance(expected, number) and isinstance(actual, number):
        return None if expected == actual else f"{path}: pi has {expected}, libagent {actual}"
    if type(expected) is not type(actual):
        return f"{path}: pi has {json.dumps(expected)[:200]}, libagent {json.dumps(actual)[:200]}"
    if isinstance(expected, dict):
        for key in expected.keys() | actual.keys():
            if key not in actual:
                return f"{path}.{key}: only pi has it ({json.dumps(expected[key])[:200]})"
            if key not in expected:
                return f"{path}.{key}: only libagent has it ({json.dumps(actual[key])[:200]})"
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list):
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = first_difference(e, a, f"{path}[{i}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{path}: pi has {len(expected)} items, libagent {len(actual)}"
        return None
    return None if expected == actual else f"{path}: pi has {json.dumps(expected)}, libagent {json.dumps(actual)}"


def load(path):
    with open(path) as f:
        return json.load(f)


def same_context(case, pi_context, libagent_context, least_messages):
    """Records a failure unless the two contexts are equal and hold at least `least_messages`."""
    difference = first_difference(pi_context, libagent_context)
    count = len(pi_context.get("messages", []))
    if difference:
        failures.append(f"{case}: the contexts differ at {difference}")
    elif count < least_messages:
        failures.append(f"{case}: pi's context holds {count} messages, expected at least {least_messages}")
    else:
        global passed
        passed += 1
        print(f"ok    {case}: the same context on both sides ({count} messages, thinking level "
              f"{pi_context['thinkingLevel']}, model {json.dumps(pi_context['model'])})")


def pi(pi_dir, *args):
    run = subprocess.run(["node", os.path.join(here, "pi.mjs"), *args], env=dict(os.environ, PI_DIR=pi_dir),
                         capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        fail(f"pi.mjs {' '.join(args)} failed (exit {run.returncode}):\n{run.stdout}{run.stderr}")


def interop(*args):
    run = subprocess.run([os.path.join(out, "interop"), *args], capture_output=True, text=True, timeout=60)
    if run.returncode != 0 or run.stdout.strip() != "ok":
        fail(f"interop {' '.join(args)} failed (exit {run.returncode}):\n{run.stdout}{run.stderr}")


def entries_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f.read().splitlines()]


def libagent_writes_pi_reads(pi_dir, work):
    directory = os.path.join(work, "a")
    os.makedirs(directory)
    interop("run", directory, work)
    files = glob.glob(os.path.join(directory, "*.jsonl"))
    if len(files) != 1:
        fail(f"libagent's run left {len(files)} session files in {directory}, expected 1")
    lines = entries_of(files[0])  # every line must be JSON
    types = [entry["type"] for entry in lines]
    models = [entry.get("modelId") for entry in lines if entry["type"] == "model_change"]
    levels = [entry.get("thinkingLevel") for entry in lines if entry["type"] == "thinking_level_change"]
    if types[0] != "session" or "m2" not in models or "high" not in levels or levels[-1] != "medium":
        failures.append(f"(a) the file lacks what the run did: types {types}, model changes {models}, "
                        f"thinking levels {levels}")
    parents = [entry.get("parentId") for entry in lines[1:]]
    if not any(parents.count(parent) > 1 for parent in parents):
        failures.append("(a) the file holds no branch: no entry has two children")
    main_leaf = load(os.path.join(work, "main-leaf.json"))
    pi(pi_dir, "context", files[0], os.path.join(work, "pi-main.json"), main_leaf)
    pi(pi_dir, "context", files[0], os.path.join(work, "pi-final.json"))
    same_context("(a) libagent's file, at the end of the second prompt", load(os.path.join(work, "pi-main.json"))["context"],
                 load(os.path.join(work, "main.json")), 6)
    same_context("(a) libagent's file, at its leaf on the branch", load(os.path.join(work, "pi-final.json"))["context"],
                 load(os.path.join(work, "final.json")), 8)


def pi_writes_libagent_resumes(pi_dir, work):
    file = os.path.join(work, "b", "pi-session.jsonl")
    os.makedirs(os.path.dirname(file))
    pi(pi_dir, "write", file, os.path.join(work, "pi-before.json"))
    written = load(os.path.join(work, "pi-before.json"))
    types = {entry["type"] for entry in entries_of(file)}
    if not {"model_change", "thinking_level_change", "label", "compaction"} <= types:
        fail(f"pi.mjs wrote no model change, thinking-level change, label or compaction: {sorted(types)}")
    interop("resume", file, work)
    same_context("(b) pi's file opened by libagent", written["context"], load(os.path.join(work, "before.json")), 5)
    pi(pi_dir, "context", file, os.path.join(work, "pi-after.json"))
    after = load(os.path.join(work, "pi-after.json"))
    same_context("(b) pi's file after libagent's resumed run, reopened by pi", after["context"],
                 load(os.path.join(work, "after.json")), 7)
    tail = after["context"]["messages"][-2:]
    roles = [m.get("role") for m in tail]
    texts = json.dumps(tail)
    if after["entryCount"] <= written["entryCount"] or roles != ["user", "assistant"] \
            or "are you still there?" not in texts or "Resumed here." not in texts:
        failures.append(f"(b) pi does not see libagent's new messages at its leaf: {after['entryCount']} entries "
                        f"(before: {written['entryCount']}), last messages {texts[:400]}")


def main():
    if not os.path.exists(os.path.join(lib, "libagent.so")):
        fail(f"no {lib}/libagent.so: run `make build` first")
    os.makedirs(out, exist_ok=True)
    pi_dir = subprocess.run(["bash", os.path.join(here, "pi.sh")], check=True, stdout=subprocess.PIPE,
                            text=True).stdout.strip().splitlines()[-1]
    subprocess.run(["cc", "-Wall", "-Wextra", "-Werror", "-std=c11", "-g", "-Iinclude", "-Itests/c",
                    "tests/sessions/interop.c", f"-L{lib}", "-lagent", f"-Wl,-rpath,{lib}", "-lpthread",
                    "-o", os.path.join(out, "interop")], cwd=root, check=True)
    # The files stay in build/sessions-interop/work for a look after a failure.
    work = os.path.join(out, "work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    libagent_writes_pi_reads(pi_dir, work)
    pi_writes_libagent_resumes(pi_dir, work)
    for failure in failures:
        print(f"FAIL  {failure}")
    print(f"sessions-interop: {passed} passed, {len(failures)} failed")
    if passed != 4 and not failures:
        fail(f"{passed} comparisons were made, expected 4")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

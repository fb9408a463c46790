#!/usr/bin/env python3
"""make sessions-crash: a process running an agent on a session file, killed with SIGKILL at random
moments, never loses a committed message nor leaves a file that does not open.

ROUNDS times (CRASH_ROUNDS, default 200; seeds 0..ROUNDS-1), a child (tests/sessions/crash_child.c) resumes the
round's session file and prompts its agent in a loop (a tool call per prompt), printing each message
it saw committed (message_end); the parent kills it after a random delay (from its start, or from the
moment its agent is ready, up to a few prompts in), then:

- every line of the file parses as JSON, except a last line cut off without its newline (the
  reference's tolerance; the next open appends the newline, and that cut line stays unparsable in
  the file, so it is remembered and tolerated afterwards);
- the file opens with agent_session_open (through ctypes, the real library);
- every message the child reported is in the file, in order, and at most one more of that child
  (the one in flight).

The rounds share a file in groups of GROUP (20): each child resumes what the killed ones left.
Python 3 standard library only; the library is target/debug (LIBAGENT_LIBDIR overrides)."""
import ctypes
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
lib_dir = os.environ.get("LIBAGENT_LIBDIR", os.path.join(root, "target", "debug"))
out = os.path.join(root, "build", "sessions-crash")
ROUNDS = int(os.environ.get("CRASH_ROUNDS", "200"))
GROUP = 20
HEADER = {"type": "session", "version": 3, "id": "0190d0c0-0000-7000-8000-00000000c0de",
          "timestamp": "2026-12-02T00:00:00.000Z", "cwd": "/crash/cwd"}


def fail(message):
    sys.exit(f"sessions-crash: {message}")


class Session(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64)]


lib = None


def open_entries(path):
    """agent_session_open, then the entries (AGENT_SESSION_ENTRIES) as parsed JSON."""
    session = Session()
    error = lib.agent_session_open(path.encode(), len(path.encode()), None, 0, ctypes.byref(session))
    if error:
        message = lib.agent_error_message(error, None).decode()
        lib.agent_error_free(error)
        return None, message
    text = ctypes.c_char_p()
    error = lib.agent_session_get(session, 1, ctypes.byref(text), None)
    if error:
        fail(f"agent_session_get(ENTRIES) failed: {lib.agent_error_message(error, None).decode()}")
    entries = json.loads(ctypes.string_at(text).decode())
    lib.agent_string_free(text)
    if lib.agent_session_free(session):
        fail("agent_session_free failed")
    return entries, None


def message_key(message):
    """(role, key) of a message the child wrote: its text, tool call id, or tool result's call id."""
    role = message.get("role")
    if role == "toolResult":
        return role, message.get("toolCallId")
    for block in message.get("content") or []:
        if block.get("type") == "toolCall":
            return role, block.get("id")
        if block.get("type") == "text":
            return role, block.get("text")
    return role, None


def run_child(binary, path, seed, rng):
    """Starts a child, kills it at a random moment; its committed lines (role, key) in order."""
    child = subprocess.Popen([binary, path, str(seed)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines, ready = [], threading.Event()

    def read():
        for raw in child.stdout:
            line = raw.decode().rstrip("\n")
            if line == "ready":
                ready.set()
            else:
                lines.append(line)
        ready.set()

    reader = threading.Thread(target=read)
    reader.start()
    if rng.random() < 0.15:
        time.sleep(rng.uniform(0, 0.02))  # early: while it opens (and repairs) the file
    else:
        if not ready.wait(30):
            child.kill()
            fail(f"round {seed}: the child was not ready after 30 s")
        time.sleep(rng.uniform(0, 0.04))  # mid-run: a few prompts in at most
    alive = child.poll() is None
    child.send_signal(signal.SIGKILL)
    child.wait()
    reader.join()
    stderr = child.stderr.read().decode()
    if not alive or child.returncode != -signal.SIGKILL:
        fail(f"round {seed}: the child ended by itself (exit {child.returncode}) before it was killed:\n{stderr}")
    committed = []
    for n, line in enumerate(lines, 1):
        count, role, key = line.split(" ")
        if int(count) != n:
            fail(f"round {seed}: the child's line {n} is {line!r}")
        committed.append((role, key))
    return committed


def check_file_lines(path, seed, cut_lines):
    """Every line parses, but a cut-off last one; returns the index of that cut line, or None."""
    data = open(path, "rb").read()
    pieces = data.split(b"\n")
    last = pieces.pop()  # after the final newline: b"" unless the last line was cut off
    for index, piece in enumerate(pieces):
        if index in cut_lines:
            continue
        try:
            json.loads(piece)
        except ValueError:
            fail(f"round {seed}: line {index + 1} of {path} is not JSON and not a cut-off last line: {piece[:200]!r}")
    return len(pieces) if last else None


def main():
    global lib
    if not os.path.exists(os.path.join(lib_dir, "libagent.so")):
        fail(f"no {lib_dir}/libagent.so: run `make build` first")
    os.makedirs(out, exist_ok=True)
    binary = os.path.join(out, "crash_child")
    subprocess.run(["cc", "-Wall", "-Wextra", "-Werror", "-std=c11", "-O1", "-g", "-Iinclude", "-Itests/c",
                    "tests/sessions/crash_child.c", f"-L{lib_dir}", "-lagent", f"-Wl,-rpath,{lib_dir}", "-lpthread",
                    "-o", binary], cwd=root, check=True)
    lib = ctypes.CDLL(os.path.join(lib_dir, "libagent.so"))
    lib.agent_session_open.restype = ctypes.c_void_p
    lib.agent_session_open.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.POINTER(Session)]
    lib.agent_session_get.restype = ctypes.c_void_p
    lib.agent_session_get.argtypes = [Session, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p]
    lib.agent_session_free.restype = ctypes.c_void_p
    lib.agent_session_free.argtypes = [Session]
    lib.agent_error_message.restype = ctypes.c_char_p
    lib.agent_error_message.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.agent_error_free.argtypes = [ctypes.c_void_p]
    lib.agent_string_free.argtypes = [ctypes.c_char_p]

    started = time.monotonic()
    total_committed = in_flight = cut_total = mid_run = 0
    with tempfile.TemporaryDirectory(prefix="sessions-crash-") as work:
        for seed in range(ROUNDS):
            if seed % GROUP == 0:
                path = os.path.join(work, f"group-{seed // GROUP}.jsonl")
                with open(path, "w") as f:
                    f.write(json.dumps(HEADER, separators=(",", ":")) + "\n")
                cut_lines = set()
            rng = random.Random(seed)
            committed = run_child(binary, path, seed, rng)
            cut = check_file_lines(path, seed, cut_lines)
            entries, error = open_entries(path)
            if entries is None:
                fail(f"round {seed}: agent_session_open refused the file after the kill: {error}")
            if cut is not None:
                cut_lines.add(cut)  # the open appended a newline after it; it stays unparsable
                cut_total += 1
                if not open(path, "rb").read().endswith(b"\n"):
                    fail(f"round {seed}: the open did not end the cut-off last line with a newline")
            ours = [message_key(e["message"]) for e in entries if e.get("type") == "message"]
            ours = [(role, key) for role, key in ours if key and key.split("-")[1] == str(seed)]
            if ours[:len(committed)] != committed:
                missing = [c for c in committed if c not in ours]
                fail(f"round {seed}: the child reported {len(committed)} committed messages, the file holds "
                     f"{len(ours)} of them; first missing or out of order: {missing[:3] or ours[:len(committed)]}")
            if len(ours) - len(committed) > 1:
                fail(f"round {seed}: the file holds {len(ours)} of the child's messages, it reported "
                     f"{len(committed)}: more than the one in flight")
            total_committed += len(committed)
            in_flight += len(ours) - len(committed)
            mid_run += bool(committed)
    seconds = time.monotonic() - started
    if mid_run < ROUNDS // 2:
        fail(f"only {mid_run} of {ROUNDS} kills came after a committed message: the delays do not cover the run")
    print(f"sessions-crash: {ROUNDS} kills ({mid_run} mid-run), every file opened; {total_committed} committed "
          f"messages all in their file, {in_flight} in-flight messages written too, {cut_total} cut-off last lines; "
          f"{seconds:.1f} s")


if __name__ == "__main__":
    main()

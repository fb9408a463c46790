#!/usr/bin/env python3
"""A hostile MCP server over stdio (stdlib only), for tests/mcp/test_mcp.c. The first argument
picks how it misbehaves:

  no-init       never answers initialize
  exit          writes to stderr and exits at once
  garbage       writes lines that are not JSON to stdout and never answers
  endless-line  writes one line without end
  tools         a working server whose tools misbehave: echo (works), hang (never answers),
                huge (a 1 GB result on one line), flood (starts an endless stream of
                notifications, then answers), and bad_schema (an input schema that is not a
                valid JSON Schema); and grow, which adds the tool `extra`, announces it with
                notifications/tools/list_changed and answers once the list was read again
  stubborn      like tools, but ignores SIGTERM and stdin's end, and has a child that does too
  progress      one tool, slow: answers after 6 s, with a progress notification every 0.5 s
                (so a call outlives a shorter timeout only if progress restarts it)

Its pid (and its child's) is appended to $MCP_PID_FILE, so the test can check none outlives close.
"""
import json
import os
import signal
import sys
import threading

mode = sys.argv[1]
out = sys.stdout.buffer
lock = threading.Lock()


def note_pid(pid):
    path = os.environ.get("MCP_PID_FILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid}\n")


def send(message):
    data = (json.dumps(message) + "\n").encode()
    with lock:
        out.write(data)
        out.flush()


note_pid(os.getpid())
if mode == "exit":
    sys.stderr.write("hostile: refusing to start (exit mode)\n")
    sys.exit(3)
if mode == "garbage":
    for i in range(5):
        out.write(b"Starting hostile server, this is not JSON\n")
    out.flush()
    sys.stdin.read()
    sys.exit(0)
if mode == "endless-line":
    chunk = b"x" * 65536
    try:
        while True:
            out.write(chunk)
    except BrokenPipeError:
        sys.exit(0)
if mode == "stubborn":
    import subprocess  # only here: it is slow to import, and a loaded machine starts the rest first

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)"]
    )
    note_pid(child.pid)

TOOLS = [
    {"name": "echo", "description": "Echoes its text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "huge", "description": "Answers with 1 GB of text.", "inputSchema": {"type": "object"}},
    {"name": "flood", "description": "Starts an endless stream of notifications.", "inputSchema": {"type": "object"}},
    {"name": "grow", "description": "Adds the tool extra.", "inputSchema": {"type": "object"}},
    {"name": "bad_schema", "description": "Its schema's pattern is not a regular expression.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}},
]


def flood():
    n = 0
    try:
        while True:
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": f"flood {n}"}})
            n += 1
    except (BrokenPipeError, ValueError):
        pass


def huge(id_):
    head = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(id_)).encode()
    chunk = b"y" * (1 << 20)
    try:
        with lock:
            out.write(head)
            for _ in range(1024):
                out.write(chunk)
            out.write(b'"}]}}\n')
            out.flush()
    except BrokenPipeError:
        pass


if mode == "progress":
    TOOLS = [{"name": "slow", "description": "Answers after 6 s, reporting progress.", "inputSchema": {"type": "object"}}]


def slow(id_, token):
    import time
    for step in range(12):
        time.sleep(0.5)
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": step + 1, "total": 12}})
    send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": "slow done"}]}})


grow_call = None
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        if mode == "no-init":
            continue
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "hostile", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}})
        if grow_call is not None:
            # The client read the new list: give it a moment to take it in, then answer grow.
            threading.Timer(0.3, send, [{"jsonrpc": "2.0", "id": grow_call, "result": {
                "content": [{"type": "text", "text": "grown"}]}}]).start()
            grow_call = None
    elif method == "tools/call":
        name = message["params"]["name"]
        args = message["params"].get("arguments") or {}
        if name == "echo":
            send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": "echo: " + args.get("text", "")}]}})
        elif name == "huge":
            threading.Thread(target=huge, args=(id_,), daemon=True).start()
        elif name == "grow":
            TOOLS.append({"name": "extra", "description": "Added by grow.", "inputSchema": {"type": "object"}})
            grow_call = id_
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif name == "extra":
            send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": "extra works"}]}})
        elif name == "slow":
            token = (message["params"].get("_meta") or {}).get("progressToken")
            threading.Thread(target=slow, args=(id_, token), daemon=True).start()
        elif name == "flood":
            threading.Thread(target=flood, daemon=True).start()
            send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": "flooding"}]}})
        # hang: no answer
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no such method"}})
if mode == "stubborn":
    threading.Event().wait()

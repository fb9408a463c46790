#!/usr/bin/env python3
"""The Python and Go assistants (examples/python/assistant.py, bindings/go/examples/assistant) on a
loopback openai-completions endpoint that is overloaded once (529) and then answers: each prints
one retry line ("[retrying in Ns: <error>]") and then the answer, and names
LIBAGENT_RETRY_BASE_DELAY_MS in its usage text; and on one whose answers near the context window:
each prints one "[compacted: N tokens -> M]" line and goes on from the model's summary. Then all
three assistants (C, Python, Go) with --mcp FILE (two servers of tests/mcp/hostile/server.py: one
working, one that exits at once): each prints both servers' states, the scripted model calls the
working server's tool, and no server process outlives the assistant.

usage: test_binding_assistants.py LIBAGENT_SO [GO_ASSISTANT_BINARY]
(the Python assistant runs with the binding's sources and LIBAGENT_SO; without a Go binary the Go
assistant is reported as skipped and the run fails.)

Prints one line per test and "binding-assistant-tests: N passed, M failed"; exits 1 on any failure.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_assistant import (COMPACTION_INPUT, OVERLOADED, Failed, Mock, check, check_compacted, clean_env,  # noqa: E402
                            compaction_responses, contains, text_response)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TIMEOUT = 120  # a guard against hangs only


def assistant_env(mock, library):
    return clean_env(LIBAGENT_API="openai-completions", LIBAGENT_BASE_URL=mock.base_url, LIBAGENT_MODEL="mock-model",
                     LIBAGENT_API_KEY="k", LIBAGENT_RETRY_BASE_DELAY_MS="3", LIBAGENT_LIBRARY=library,
                     PYTHONPATH=os.path.join(REPO, "bindings", "python", "src"))


def check_retried(command, library, flag_help):
    root = tempfile.mkdtemp(prefix="binding-assistant-")
    try:
        with Mock([OVERLOADED, text_response("Answered after a retry.")]) as mock:
            proc = subprocess.run(command + ["--root" if flag_help == "--help" else "-root", root], input="hello\n",
                                  capture_output=True, text=True, timeout=TIMEOUT, env=assistant_env(mock, library))
        both = proc.stdout + proc.stderr
        check(proc.returncode == 0, "exit 0", both)
        check("error:" not in both, "no error line for a request that was retried", both)
        check(both.count("[retrying in ") == 1, "one retry line", both)
        contains(both, "[retrying in 0.003s: 529", both)
        contains(both, "verloaded", both)
        contains(proc.stdout, "Answered after a retry.\n", both)
        check(len(mock.requests) == 2, "two requests", mock.requests)
        usage = subprocess.run(command + [flag_help], capture_output=True, text=True, timeout=TIMEOUT,
                               env=clean_env(LIBAGENT_LIBRARY=library,
                                             PYTHONPATH=os.path.join(REPO, "bindings", "python", "src")))
        contains(usage.stdout + usage.stderr, "LIBAGENT_RETRY_BASE_DELAY_MS")
    finally:
        shutil.rmtree(root)


def check_compacts(command, library, root_flag):
    root = tempfile.mkdtemp(prefix="binding-assistant-")
    try:
        with Mock(compaction_responses()) as mock:
            proc = subprocess.run(command + [root_flag, root], input=COMPACTION_INPUT, capture_output=True, text=True,
                                  timeout=TIMEOUT, env=dict(assistant_env(mock, library), LIBAGENT_CONTEXT_WINDOW="16500"))
        both = proc.stdout + proc.stderr
        check(proc.returncode == 0 and "error" not in both.lower(), "exit 0, no error", both[-2000:])
        check_compacted(both, mock)
    finally:
        shutil.rmtree(root)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def check_mcp(command, library, dash):
    root = tempfile.mkdtemp(prefix="binding-assistant-")
    try:
        hostile = os.path.join(REPO, "tests", "mcp", "hostile", "server.py")
        pids = os.path.join(root, "pids")
        server = {"command": sys.executable, "env": {"MCP_PID_FILE": pids}, "timeout": 30}  # slow starts are not failures
        with open(os.path.join(root, "mcp.json"), "w") as f:
            json.dump({"mcpServers": {"tools": dict(server, args=[hostile, "tools"]),
                                      "exits": dict(server, args=[hostile, "exit"])}}, f)
        with open(os.path.join(root, "script.json"), "w") as f:
            json.dump([{"content": [{"type": "toolCall", "id": "c1", "name": "mcp__tools__echo",
                                     "arguments": {"text": "from the MCP server"}}]},
                       {"content": [{"type": "text", "text": "Done."}]}], f)
        proc = subprocess.run(command + [dash + "root", root, dash + "mcp", os.path.join(root, "mcp.json"),
                                         dash + "script", os.path.join(root, "script.json")],
                              input="hello\n", capture_output=True, text=True, timeout=TIMEOUT,
                              env=clean_env(LIBAGENT_LIBRARY=library,
                                            PYTHONPATH=os.path.join(REPO, "bindings", "python", "src")))
        both = proc.stdout + proc.stderr
        check(proc.returncode == 0, "exit 0", both)
        contains(both, "mcp: tools: ready, 5 tools", both)
        contains(both, "mcp: exits: failed: ", both)
        contains(both, "hostile: refusing to start (exit mode)", both)
        contains(proc.stdout, "[result] echo: from the MCP server", both)
        with open(pids) as f:
            started = [int(line) for line in f.read().split()]
        check(len(started) >= 2, "both servers started", started)
        deadline = time.monotonic() + 5  # a SIGKILLed process may still be finishing its exit
        while any(alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.01)
        check(not [pid for pid in started if alive(pid)], "no server process outlives the assistant", started)
    finally:
        shutil.rmtree(root)


def main():
    library = os.path.abspath(sys.argv[1])
    go_binary = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
    tests = [("python_assistant_retries_an_overloaded_request",
              lambda: check_retried([sys.executable, os.path.join(REPO, "examples", "python", "assistant.py")],
                                    library, "--help")),
             ("python_assistant_compacts_near_the_window",
              lambda: check_compacts([sys.executable, os.path.join(REPO, "examples", "python", "assistant.py")],
                                     library, "--root"))]
    c_binary = os.path.join(REPO, "build", "assistant")  # tests/assistant/run.sh built it
    tests.append(("c_assistant_takes_mcp_servers", lambda: check_mcp([c_binary], library, "--")))
    tests.append(("python_assistant_takes_mcp_servers",
                  lambda: check_mcp([sys.executable, os.path.join(REPO, "examples", "python", "assistant.py")],
                                    library, "--")))
    if go_binary:
        tests.append(("go_assistant_takes_mcp_servers", lambda: check_mcp([go_binary], library, "-")))
        tests.append(("go_assistant_retries_an_overloaded_request",
                      lambda: check_retried([go_binary], library, "-help")))
        tests.append(("go_assistant_compacts_near_the_window", lambda: check_compacts([go_binary], library, "-root")))
    passed = failed = 0
    for name, test in tests:
        try:
            test()
            passed += 1
            print("ok    %s" % name, flush=True)
        except Exception as error:  # noqa: BLE001 - report every failure the same way
            failed += 1
            print("FAIL  %s: %s" % (name, error if isinstance(error, Failed) else traceback.format_exc()), flush=True)
    if not go_binary:
        failed += 1
        print("FAIL  go_assistant_retries_an_overloaded_request: no Go assistant binary given (is go installed?)")
    print("binding-assistant-tests: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

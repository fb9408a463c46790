#!/usr/bin/env python3
"""Tests of examples/c/assistant.c: the built binary, run as a user would (stdin lines in,
stdout/stderr out), against the scripted model and against mock openai-completions,
anthropic-messages, openai-responses and google-generative-ai endpoints.

usage: test_assistant.py ASSISTANT_BINARY [--valgrind SUPPRESSIONS] [-k NAME]
(--valgrind runs VALGRIND_TESTS under valgrind; -k selects the tests whose name contains NAME.)

The mock endpoint is http.server on 127.0.0.1, port 0: it answers each POST with the next
scripted response, streamed as server-sent events in the OpenAI chat-completions chunk format
(the shapes of the provider kit's fixture 002), and records every request it received. Nothing
leaves the loopback interface. Every child runs in a new session (no controlling terminal), so
the assistant reads write approvals from stdin.

Prints one line per test and "assistant-tests: N passed, M failed"; exits 1 on any failure.
"""

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

BINARY = None
VALGRIND = None  # the suppressions file when running under valgrind
TIMEOUT = 120  # a guard against hangs only (valgrind is slow); nothing asserts on time


# ---- the mock endpoint ------------------------------------------------------------------------

def sse(obj):
    return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"


def chunk(delta, finish=None):
    return sse({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1750000000,
        "model": "mock-model", "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                            "finish_reason": finish}], "usage": None})


def usage_chunk(prompt_tokens=120):
    return sse({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1750000000,
        "model": "mock-model", "choices": [],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20}})


def pieces(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def text_response(text, prompt_tokens=120):
    """A streamed text answer: role chunk, content in pieces, finish_reason stop, usage, [DONE]."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in pieces(text, 9)]
    chunks += [chunk({}, "stop"), usage_chunk(prompt_tokens), "data: [DONE]\n\n"]
    return chunks


# Two long requests then a short one, on a 16,500-token window (compaction keeps 20,000 recent
# tokens and reserves 16,384): the second answer's usage passes the threshold, and the first
# exchange, older than what is kept, is summarized by the model (the third response).
LONG_REQUEST = "word " * 18000
COMPACTION_INPUT = LONG_REQUEST + "\n" + LONG_REQUEST + "\nand now?\n"


def compaction_responses():
    return [text_response("Answer one.", 16000), text_response("Answer two.", 16100),
            text_response("The summary of the session.", 50), text_response("Answer three.", 300)]


def check_compacted(output, mock):
    """The compaction line, the summary request between the second and third prompts, and a third
    request that starts from the summary instead of the first exchange."""
    check(output.count("[compacted: ") == 1, "one compaction line", output)
    contains(output, "[compacted: 16120 tokens -> ", output)
    contains(output, "Answer three.", output)
    check(len(mock.requests) == 4, "four requests (one of them the summary's)", [r["body"]["messages"][0] for r in mock.requests])
    summary_request = json.dumps(mock.requests[2]["body"]["messages"])
    contains(summary_request, "Answer one.")
    last = json.dumps(mock.requests[3]["body"]["messages"])
    contains(last, "The summary of the session.")
    check("Answer one." not in last, "the first exchange is summarized, not sent", last[:400])


def tool_call_response(calls):
    """Tool calls as OpenAI streams them: an opening chunk per call (id, name, empty arguments),
    then the arguments in fragments, then finish_reason tool_calls, usage, [DONE]."""
    chunks = []
    for index, (call_id, name, args) in enumerate(calls):
        opening = {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}
        if index == 0:
            opening = dict(role="assistant", content=None, **opening)
        chunks.append(chunk(opening))
        for piece in pieces(json.dumps(args), 7):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    chunks += [chunk({}, "tool_calls"), usage_chunk(), "data: [DONE]\n\n"]
    return chunks


def am_event(obj):
    return "event: %s\ndata: %s\n\n" % (obj["type"], json.dumps(obj, separators=(",", ":")))


def am_response(blocks, stop_reason):
    """An anthropic-messages stream: message_start, each block (text or tool_use, its input as
    input_json_delta fragments), message_delta with the stop reason, message_stop."""
    events = [am_event({"type": "message_start", "message": {
        "model": "mock-claude", "id": "msg_mock", "type": "message", "role": "assistant", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": 1}}})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            events.append(am_event({"type": "content_block_start", "index": index,
                                    "content_block": {"type": "text", "text": ""}}))
            for piece in pieces(block["text"], 9):
                events.append(am_event({"type": "content_block_delta", "index": index,
                                        "delta": {"type": "text_delta", "text": piece}}))
        else:
            events.append(am_event({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            for piece in pieces(json.dumps(block["input"]), 6):
                events.append(am_event({"type": "content_block_delta", "index": index,
                                        "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(am_event({"type": "content_block_stop", "index": index}))
    events.append(am_event({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                            "usage": {"output_tokens": 20}}))
    events.append(am_event({"type": "message_stop"}))
    return events


def gg_response(parts, finish="STOP"):
    """A google-generative-ai stream: the text of each text part in pieces, each function call
    whole, then the finish reason with the usage."""
    chunks = []
    for part in parts:
        if "text" in part:
            chunks += [{"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}]}
                       for piece in pieces(part["text"], 9)]
        else:
            chunks.append({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]})
    chunks.append({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": finish,
                                   "index": 0}],
                   "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
                   "responseId": "mock-gemini-response"})
    return ["data: %s\r\n\r\n" % json.dumps(c, separators=(",", ":")) for c in chunks]


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 for `handler`, serving inside a `with` block."""

    def __init__(self, handler):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers in one call: `reply(status, content_type,
    pieces)` writes each piece as it comes (a stream), then closes the connection."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, content_type, pieces):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("connection", "close")
        if status != 200:
            self.send_header("content-length", str(sum(len(p) for p in pieces)))
        self.end_headers()
        for piece in pieces:
            self.wfile.write(piece)
            self.wfile.flush()
        self.close_connection = True


class Refusal:
    """A mock response that is an HTTP error: `status` with a JSON `body`."""

    def __init__(self, status, body):
        self.status, self.body = status, body


OVERLOADED = Refusal(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


class Mock(LoopbackServer):
    """An openai-completions endpoint replaying `responses`, one per request (a Refusal answers
    with its HTTP error)."""

    def __init__(self, responses, observe=None):
        self.responses = list(responses)
        self.requests = []
        self.observe = observe  # called at each request; its value is recorded as "observed"
        mock = self

        class Handler(QuietHandler):
            def handle_any(self):
                if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                    raw = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        raw += self.rfile.read(size) if size else b""
                        self.rfile.readline()  # the CRLF after the chunk (or the trailer's end)
                        if size == 0:
                            break
                else:
                    length = int(self.headers.get("content-length") or 0)
                    raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                record = {"method": self.command, "path": self.path,
                          "headers": {k.lower(): v for k, v in self.headers.items()},
                          "body": body,
                          "observed": mock.observe() if mock.observe else None}
                mock.requests.append(record)
                if not mock.responses:
                    payload = b'{"error":{"message":"mock: no response left"}}'
                    return self.reply(500, "application/json", [payload])
                chunks = mock.responses.pop(0)
                if isinstance(chunks, Refusal):
                    return self.reply(chunks.status, "application/json", [json.dumps(chunks.body).encode()])
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for piece in chunks:
                    self.wfile.write(piece.encode())
                    self.wfile.flush()
                self.close_connection = True

            do_POST = handle_any
            do_GET = handle_any

        super().__init__(Handler)

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.port

    @property
    def root_url(self):
        return "http://127.0.0.1:%d" % self.port


# ---- running the assistant --------------------------------------------------------------------

class Result:
    def __init__(self, proc):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return "exit %s\n--- stdout\n%s--- stderr\n%s" % (self.code, self.out, self.err)


def or_event(data):
    return "event: %s\ndata: %s\n\n" % (data["type"], json.dumps(data))


def or_response(items):
    """An openai-responses stream: response.created, each item (a message with output_text deltas
    or a function_call with argument deltas) added, streamed and done, then response.completed."""
    events = [or_event({"type": "response.created", "response": {"id": "resp_mock", "status": "in_progress"}})]
    for index, item in enumerate(items):
        if item["type"] == "text":
            wire = {"id": "msg_mock_%d" % index, "type": "message", "role": "assistant", "content": []}
            events.append(or_event({"type": "response.output_item.added", "output_index": index, "item": wire}))
            for piece in pieces(item["text"], 9):
                events.append(or_event({"type": "response.output_text.delta", "output_index": index, "delta": piece}))
            wire = dict(wire, status="completed", content=[{"type": "output_text", "text": item["text"], "annotations": []}])
        else:
            wire = {"id": "fc_mock_%d" % index, "type": "function_call", "call_id": item["id"], "name": item["name"],
                    "arguments": ""}
            events.append(or_event({"type": "response.output_item.added", "output_index": index, "item": wire}))
            arguments = json.dumps(item["input"])
            for piece in pieces(arguments, 6):
                events.append(or_event({"type": "response.function_call_arguments.delta", "output_index": index,
                                        "delta": piece}))
            wire = dict(wire, status="completed", arguments=arguments)
        events.append(or_event({"type": "response.output_item.done", "output_index": index, "item": wire}))
    events.append(or_event({"type": "response.completed", "response": {"id": "resp_mock", "status": "completed",
        "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}}}))
    return events


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LIBAGENT_", "OPENAI_", "ANTHROPIC_")) and "proxy" not in k.lower()}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra)
    return env


def run(args, stdin, env=None, cwd=None):
    cmd = [BINARY] + args
    if VALGRIND:
        cmd = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
               "--suppressions=" + VALGRIND] + cmd
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=TIMEOUT,
                          env=env or clean_env(), cwd=cwd, start_new_session=True)
    result = Result(proc)
    check(result.code != 99, "valgrind reported errors", result)
    return result


class Failed(Exception):
    pass


def check(condition, what, context=None):
    if not condition:
        raise Failed(what + ("\n" + repr(context) if context is not None else ""))


def contains(haystack, needle, context=None):
    check(needle in haystack, "expected to find %r" % needle, context if context is not None else haystack)


def write_script(top, script):
    """Writes a scripted model (a list of responses) to top/script.json; returns its path."""
    path = os.path.join(top, "script.json")
    with open(path, "w") as f:
        json.dump(script, f)
    return path


def make_root():
    """A temporary project: root/ with notes.txt, src/main.c and a hidden .git/, next to a file
    outside the root that must never be read."""
    top = tempfile.mkdtemp(prefix="assistant-test-")
    root = os.path.join(top, "root")
    os.makedirs(os.path.join(root, "src"))
    os.makedirs(os.path.join(root, ".git"))
    with open(os.path.join(top, "outside.txt"), "w") as f:
        f.write("TOP SECRET outside the root\n")
    with open(os.path.join(root, "notes.txt"), "w") as f:
        f.write("Project notes\nThe magic word is xyzzy.\nEnd of notes\n")
    with open(os.path.join(root, "src", "main.c"), "w") as f:
        f.write("int main(void) {\n    return magic(); /* xyzzy */\n}\n")
    with open(os.path.join(root, ".git", "config"), "w") as f:
        f.write("xyzzy in a hidden directory\n")
    os.symlink(os.path.join(top, "outside.txt"), os.path.join(root, "escape.txt"))
    return top, root


def oc_env(mock, **extra):
    return clean_env(LIBAGENT_API="openai-completions", LIBAGENT_BASE_URL=mock.base_url,
                     LIBAGENT_MODEL="mock-model", **extra)


def tool_messages(request):
    return [m for m in request["body"]["messages"] if m.get("role") == "tool"]


# The pack's tools the assistant gives the model (agent_coding_tools_new, without bash).
CODING_TOOLS = ["edit", "find", "grep", "ls", "read", "write"]


def check_common_request(request, root, key):
    check(request["method"] == "POST", "method is POST", request)
    check(request["path"] == "/v1/chat/completions", "path is /v1/chat/completions", request["path"])
    check(request["headers"].get("authorization") == "Bearer " + key,
          "authorization: Bearer " + key, request["headers"])
    body = request["body"]
    check(body.get("model") == "mock-model", "model is mock-model", body.get("model"))
    check(body.get("stream") is True, "stream is true", body.get("stream"))
    tools = {t["function"]["name"]: t for t in body.get("tools", []) if t.get("type") == "function"}
    check(sorted(tools) == CODING_TOOLS, "the coding tools are declared", body.get("tools"))
    read = tools["read"]["function"]
    check(read["parameters"]["required"] == ["path"], "read requires path", read)
    check(read["parameters"]["properties"]["offset"]["type"] == "number", "read offset", read)
    check(tools["write"]["function"]["parameters"]["required"] == ["path", "content"],
          "write requires path and content", tools["write"])
    system = body["messages"][0]
    check(system["role"] in ("system", "developer"), "the system prompt comes first", system)
    contains(json.dumps(system), json.dumps(root)[1:-1], system)


# ---- tests --------------------------------------------------------------------------------------

def test_scripted_demo():
    """No configuration: the built-in scripted demo lists the root (ls), then answers."""
    top, root = make_root()
    try:
        r = run(["--root", root], "What is in this project?\n")
        check(r.code == 0, "exit 0", r)
        contains(r.out, "> What is in this project?\n", r)
        contains(r.out, '[tool] ls {}\n', r)
        contains(r.out, "[result] .git/ ... (4 lines)\n", r)  # .git/ escape.txt notes.txt src/
        contains(r.out, "scripted demo model", r)
    finally:
        shutil.rmtree(top)


def test_scripted_tools_and_refusals():
    """The read-only tools, and every way out of the root refused by the pack (scripted model)."""
    top, root = make_root()
    script = [
        {"content": [
            {"type": "toolCall", "id": "c1", "name": "read",
             "arguments": {"path": "notes.txt", "offset": 2, "limit": 1}},
            {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "../outside.txt"}},
            {"type": "toolCall", "id": "c3", "name": "read", "arguments": {"path": "escape.txt"}},
            {"type": "toolCall", "id": "c4", "name": "read",
             "arguments": {"path": os.path.join(top, "outside.txt")}},
            {"type": "toolCall", "id": "c5", "name": "grep", "arguments": {"pattern": "xyzzy", "glob": "*.txt"}},
            {"type": "toolCall", "id": "c6", "name": "ls", "arguments": {"path": "src/.."}},
            {"type": "toolCall", "id": "c7", "name": "read", "arguments": {"path": "missing.txt"}},
            {"type": "toolCall", "id": "c8", "name": "ls", "arguments": {"path": ".."}},
        ]},
        {"content": [{"type": "text", "text": "All read."}]},
    ]
    path = write_script(top, script)
    try:
        r = run(["--root", root, "--script", path], "look around\n")
        check(r.code == 0, "exit 0", r)
        contains(r.out, "[result] The magic word is xyzzy. ... (3 lines)", r)  # and the continuation notice
        contains(r.out, "[error] Path ../outside.txt is outside the root directory", r)
        contains(r.out, "[error] Path escape.txt leads outside the root directory through a symbolic link", r)
        contains(r.out, "[error] Path %s is outside the root directory" % os.path.join(top, "outside.txt"), r)
        contains(r.out, "[result] notes.txt:2: The magic word is xyzzy.\n", r)
        contains(r.out, "[result] .git/ ... (4 lines)", r)
        contains(r.out, "[error] ENOENT: no such file or directory, access '%s'" % os.path.join(root, "missing.txt"), r)
        contains(r.out, "[error] Path .. is outside the root directory", r)
        contains(r.out, "All read.\n", r)
        check("TOP SECRET" not in r.out, "nothing outside the root is shown", r)
        check("error:" not in r.err, "no error", r)
    finally:
        shutil.rmtree(top)


def test_scripted_write_flags():
    """--no-write refuses without asking; --yes writes without asking."""
    top, root = make_root()
    script = [
        {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                      "arguments": {"path": "src/new.c", "content": "int x;\n"}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ]
    path = write_script(top, script)
    target = os.path.join(root, "src", "new.c")
    try:
        r = run(["--root", root, "--script", path, "--no-write"], "write\ny\n")
        check(r.code == 0, "exit 0", r)
        contains(r.out, "[error] writing files is disabled in this session (--no-write)", r)
        check("[y/N]" not in r.out, "--no-write does not ask", r)
        check(not os.path.exists(target), "--no-write wrote nothing", r)

        r = run(["--root", root, "--script", path, "--yes"], "write\n")
        check(r.code == 0, "exit 0", r)
        contains(r.out, "[write] src/new.c: 7 bytes, 1 line (new file)\n  | int x;\n[write] approved (--yes)", r)
        check("[y/N]" not in r.out, "--yes does not ask", r)
        contains(r.out, "[result] Successfully wrote to src/new.c", r)
        with open(target) as f:
            check(f.read() == "int x;\n", "--yes wrote the content")
    finally:
        shutil.rmtree(top)


def read_until(stream, marker, seen=b""):
    """Reads the pipe `stream` until `marker` appeared; returns everything read."""
    import select
    while marker not in seen:
        ready, _, _ = select.select([stream], [], [], TIMEOUT)
        check(ready, "expected %r (timed out)" % marker, seen)
        data = os.read(stream.fileno(), 4096)
        check(data, "expected %r before the end of the output" % marker, seen)
        seen += data
    return seen


def interactive(args):
    return subprocess.Popen([BINARY] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env(), start_new_session=True)


def finish(proc, stdin, seen_out=b"", seen_err=b""):
    out, err = proc.communicate(stdin, timeout=TIMEOUT)
    return Result(subprocess.CompletedProcess(proc.args, proc.returncode, (seen_out + out).decode(),
                                              (seen_err + err).decode()))


def test_ctrl_c_aborts_the_answer():
    """SIGINT during an answer aborts it (the run ends, the session goes on: the next request is
    answered); SIGINT while a write waits for approval: nothing is written, even after a 'y'."""
    import signal
    top, root = make_root()
    script = [
        {"content": [{"type": "text", "text": "Working on it...", "chunks": 2}], "waitForAbort": True},
        {"content": [{"type": "text", "text": "Fresh answer after the abort."}]},
        {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                      "arguments": {"path": "late.txt", "content": "too late\n"}}]},
        {"content": [{"type": "text", "text": "unused"}]},
    ]
    path = write_script(top, script)
    proc = interactive(["--root", root, "--script", path])
    try:
        proc.stdin.write(b"start a long answer\n")
        proc.stdin.flush()
        out = read_until(proc.stdout, b"Working on it...")  # streaming, then waiting for the abort
        proc.send_signal(signal.SIGINT)
        err = read_until(proc.stderr, b"[aborted]")
        proc.stdin.write(b"next question\nwrite late.txt\n")
        proc.stdin.flush()
        out = read_until(proc.stdout, b"Write late.txt? [y/N] ", out)
        proc.send_signal(signal.SIGINT)
        err = read_until(proc.stderr, b"[interrupt: aborting the answer]", err.split(b"[aborted]", 1)[1])
        r = finish(proc, b"y\n", out, err)
        check(r.code == 0, "exit 0 after Ctrl-D", r)
        contains(r.out, "> next question\nFresh answer after the abort.\n", r)
        contains(r.out, "[error] aborted: 'late.txt' was not written", r)
        check(not os.path.exists(os.path.join(root, "late.txt")), "nothing written after the abort", r)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(top)


def test_configuration_errors():
    r = run([], "hi\n", env=clean_env(LIBAGENT_API="openai-completions"))
    check(r.code == 2, "exit 2 on incomplete configuration", r)
    contains(r.err, "error: set all of LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL "
                    "(missing: LIBAGENT_BASE_URL LIBAGENT_MODEL)", r)
    r = run([], "hi\n", env=clean_env(LIBAGENT_API="gemini", LIBAGENT_BASE_URL="http://127.0.0.1:9",
                                      LIBAGENT_MODEL="m"))
    check(r.code == 2, "exit 2 on an unknown API", r)
    contains(r.err, "error: LIBAGENT_API must be openai-completions, anthropic-messages, openai-responses or "
                    "google-generative-ai, not 'gemini'", r)
    r = run(["--root", "/nonexistent/dir"], "")
    check(r.code == 2, "exit 2 on a missing root", r)
    contains(r.err, "error: --root /nonexistent/dir: No such file or directory", r)


def test_endpoint_read_file():
    """openai-completions: the model calls the read-only tools in parallel (read a file, list the
    root, search, and two reads outside the root); the second request carries every tool result;
    the answer quotes the file."""
    top, root = make_root()
    responses = [
        tool_call_response([("call_read_1", "read", {"path": "notes.txt"}),
                            ("call_read_2", "read", {"path": "../outside.txt"}),
                            ("call_read_3", "read", {"path": "escape.txt"}),
                            ("call_list", "ls", {"path": "."}),
                            ("call_search", "grep", {"pattern": "xyzzy", "glob": "!.git"})]),
        text_response("The notes say: The magic word is xyzzy."),
    ]
    try:
        with Mock(responses) as mock:
            r = run(["--root", root], "What do the notes say?\n",
                    env=oc_env(mock, LIBAGENT_API_KEY="test-key-123"))
        check(r.code == 0, "exit 0", r)
        check("error:" not in r.err, "no error", r)
        contains(r.out, '[tool] read {"path":"notes.txt"}\n', r)
        contains(r.out, '[tool] read {"path":"../outside.txt"}\n', r)
        contains(r.out, '[tool] grep {"pattern":"xyzzy","glob":"!.git"}\n', r)
        contains(r.out, "[result] Project notes ... (3 lines)\n", r)
        contains(r.out, "[error] Path ../outside.txt is outside the root directory", r)
        contains(r.out, "[error] Path escape.txt leads outside the root directory through a symbolic link", r)
        contains(r.out, "The notes say: The magic word is xyzzy.\n", r)
        check(len(mock.requests) == 2, "two requests", mock.requests)
        for request in mock.requests:
            check_common_request(request, root, "test-key-123")
        first, second = mock.requests
        check([m["role"] for m in first["body"]["messages"]][1:] == ["user"], "request 1: the prompt",
              first["body"]["messages"])
        contains(json.dumps(first["body"]["messages"][-1]), "What do the notes say?")
        assistant = [m for m in second["body"]["messages"] if m.get("role") == "assistant"]
        check(len(assistant) == 1, "request 2 replays the assistant turn", second["body"]["messages"])
        ids = [c["id"] for c in assistant[0].get("tool_calls", [])]
        check(ids == ["call_read_1", "call_read_2", "call_read_3", "call_list", "call_search"],
              "with every tool call", assistant[0])
        results = {m["tool_call_id"]: m["content"] for m in tool_messages(second)}
        check(all(isinstance(v, str) for v in results.values()), "tool results go out as text", results)
        check(sorted(results) == sorted(ids), "request 2 has every tool result", results)
        contains(results["call_read_1"], "Project notes\nThe magic word is xyzzy.\nEnd of notes\n", results)
        contains(results["call_read_2"], "outside the root directory", results)
        contains(results["call_read_3"], "outside the root directory", results)
        check(results["call_list"] == ".git/\nescape.txt\nnotes.txt\nsrc/", "ls lists the root", results)
        check(results["call_search"] == "notes.txt:2: The magic word is xyzzy.\n"
                                       "src/main.c:2:     return magic(); /* xyzzy */", "grep finds both", results)
        check("TOP SECRET" not in json.dumps(second["body"]), "the outside file never reached the model")
    finally:
        shutil.rmtree(top)


def test_endpoint_write_file_asks():
    """openai-completions: write asks; 'n' leaves the file alone, 'y' writes it; the key comes
    from OPENAI_API_KEY."""
    top, root = make_root()
    target = os.path.join(root, "hello.txt")
    content = "Hello from the assistant\nsecond line \u00e9\n"
    responses = [
        tool_call_response([("call_w1", "write", {"path": "hello.txt", "content": content})]),
        text_response("Understood, I did not write it."),
        tool_call_response([("call_w2", "write", {"path": "hello.txt", "content": content})]),
        text_response("Written."),
    ]
    try:
        with Mock(responses, observe=lambda: os.path.exists(target)) as mock:
            r = run(["--root", root], "Create hello.txt\nn\nPlease create it now\ny\n",
                    env=oc_env(mock, OPENAI_API_KEY="sk-env-key"))
        check(r.code == 0, "exit 0", r)
        preview = "[write] hello.txt: %d bytes, 2 lines (new file)\n  | Hello from the assistant\n" \
                  "  | second line \u00e9\nWrite hello.txt? [y/N] " % len(content.encode())
        contains(r.out, preview + "n\n[error] the user declined: 'hello.txt' was not written\n", r)
        contains(r.out, "Understood, I did not write it.\n", r)
        contains(r.out, preview + "y\n[result] Successfully wrote to hello.txt\n", r)
        contains(r.out, "Written.\n", r)
        check(len(mock.requests) == 4, "four requests", mock.requests)
        for request in mock.requests:
            check_common_request(request, root, "sk-env-key")
        check([q["observed"] for q in mock.requests] == [False, False, False, True],
              "the file exists only after the 'y'", [q["observed"] for q in mock.requests])
        declined = {m["tool_call_id"]: json.dumps(m["content"]) for m in tool_messages(mock.requests[1])}
        contains(declined.get("call_w1", ""), "the user declined", declined)
        written = {m["tool_call_id"]: json.dumps(m["content"]) for m in tool_messages(mock.requests[3])}
        contains(written.get("call_w2", ""), "Successfully wrote to hello.txt", written)
        with open(target, encoding="utf-8") as f:
            check(f.read() == content, "the file holds the content")
    finally:
        shutil.rmtree(top)


def test_endpoint_anthropic_messages():
    """anthropic-messages: provider anthropic by default, key from ANTHROPIC_API_KEY in x-api-key;
    a read tool call, then the tool result goes back as a tool_result block."""
    top, root = make_root()
    responses = [
        am_response([{"type": "text", "text": "Reading it."},
                     {"type": "tool_use", "id": "toolu_read", "name": "read", "input": {"path": "notes.txt"}}],
                    "tool_use"),
        am_response([{"type": "text", "text": "It says: The magic word is xyzzy."}], "end_turn"),
    ]
    try:
        with Mock(responses) as mock:
            r = run(["--root", root], "Summarize notes.txt\n",
                    env=clean_env(LIBAGENT_API="anthropic-messages", LIBAGENT_BASE_URL=mock.root_url,
                                  LIBAGENT_MODEL="mock-claude", ANTHROPIC_API_KEY="sk-ant-test"))
        check(r.code == 0, "exit 0", r)
        check("error:" not in r.err, "no error", r)
        contains(r.err, "(anthropic-messages, provider anthropic)", r)
        contains(r.out, 'Reading it.\n[tool] read {"path":"notes.txt"}\n[result] Project notes', r)
        contains(r.out, "It says: The magic word is xyzzy.\n", r)
        check(len(mock.requests) == 2, "two requests", mock.requests)
        for request in mock.requests:
            check(request["method"] == "POST", "method is POST", request)
            check(request["path"].split("?")[0] == "/v1/messages", "path /v1/messages", request["path"])
            check(request["headers"].get("x-api-key") == "sk-ant-test", "x-api-key", request["headers"])
            body = request["body"]
            check(body.get("model") == "mock-claude" and body.get("stream") is True, "model, stream", body)
            check(sorted(t["name"] for t in body.get("tools", [])) == CODING_TOOLS,
                  "the coding tools are declared", body.get("tools"))
            contains(json.dumps(body.get("system")), json.dumps(root)[1:-1], body.get("system"))
        blocks = [b for m in mock.requests[1]["body"]["messages"] if isinstance(m.get("content"), list)
                  for b in m["content"] if b.get("type") == "tool_result"]
        check(len(blocks) == 1 and blocks[0].get("tool_use_id") == "toolu_read", "one tool_result", blocks)
        contains(json.dumps(blocks[0].get("content")), "The magic word is xyzzy.", blocks)
    finally:
        shutil.rmtree(top)


def test_endpoint_catalogue_model():
    """LIBAGENT_MODEL names a model of libagent's catalogue: the api (anthropic-messages), the
    provider (whose key variable is read), the limits and the id come from the catalogue;
    LIBAGENT_BASE_URL (the mock, as the real host is out of reach) and LIBAGENT_MAX_TOKENS
    override theirs. An unknown catalogue name is a configuration error naming it."""
    top, root = make_root()
    answer = [{"type": "text", "text": "Hello from the catalogue."}]
    try:
        with Mock([am_response(answer, "end_turn"), am_response(answer, "end_turn")]) as mock:
            env = clean_env(LIBAGENT_MODEL="anthropic/claude-sonnet-4-5", LIBAGENT_BASE_URL=mock.root_url,
                            ANTHROPIC_API_KEY="sk-ant-catalogue")
            r = run(["--root", root], "hi\n", env=env)
            limited = run(["--root", root], "hi\n", env=dict(env, LIBAGENT_MAX_TOKENS="1000"))
        check(r.code == 0 and "error:" not in r.err, "exit 0, no error", r)
        contains(r.err, "claude-sonnet-4-5 at %s (anthropic-messages, provider anthropic; from the model catalogue: "
                        "context window 200000, max tokens 64000)" % mock.root_url, r)
        contains(r.out, "Hello from the catalogue.", r)
        check(len(mock.requests) == 2, "two requests", mock.requests)
        request, body = mock.requests[0], mock.requests[0]["body"]
        check(request["path"].split("?")[0] == "/v1/messages", "path /v1/messages (anthropic-messages)", request["path"])
        check(request["headers"].get("x-api-key") == "sk-ant-catalogue", "the anthropic provider's key", request["headers"])
        check(body.get("model") == "claude-sonnet-4-5", "the catalogue's id", body)
        check(body.get("max_tokens") == 64000, "the catalogue's maxTokens (the assistant's own default is 4096)", body)
        check(limited.code == 0, "exit 0 with LIBAGENT_MAX_TOKENS", limited)
        contains(limited.err, "context window 200000, max tokens 1000)", limited)
        check(mock.requests[1]["body"].get("max_tokens") == 1000, "LIBAGENT_MAX_TOKENS overrides", mock.requests[1]["body"])
        r = run([], "hi\n", env=clean_env(LIBAGENT_MODEL="anthropic/claude-nonexistent"))
        check(r.code == 2, "exit 2 for an unknown catalogue name", r)
        contains(r.err, "error: LIBAGENT_MODEL: Unknown model 'anthropic/claude-nonexistent': the model catalogue "
                        "(@earendil-works/pi-ai 1.6.0) has no model 'claude-nonexistent' for provider 'anthropic'; or "
                        "describe the model with all of LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL\n", r)
    finally:
        shutil.rmtree(top)


def test_endpoint_google_generative_ai():
    """google-generative-ai: provider google by default, key from GEMINI_API_KEY in x-goog-api-key;
    a function call without an id (Gemini 2.x), then its result goes back as a functionResponse."""
    top, root = make_root()
    responses = [
        gg_response([{"text": "Reading it."}, {"functionCall": {"name": "read", "args": {"path": "notes.txt"}}}]),
        gg_response([{"text": "It says: The magic word is xyzzy."}]),
    ]
    try:
        with Mock(responses) as mock:
            r = run(["--root", root], "Summarize notes.txt\n",
                    env=clean_env(LIBAGENT_API="google-generative-ai", LIBAGENT_BASE_URL=mock.root_url + "/v1beta",
                                  LIBAGENT_MODEL="mock-gemini", GEMINI_API_KEY="AIza-test"))
        check(r.code == 0, "exit 0", r)
        check("error:" not in r.err, "no error", r)
        contains(r.err, "(google-generative-ai, provider google)", r)
        contains(r.out, 'Reading it.\n[tool] read {"path":"notes.txt"}\n[result] Project notes', r)
        contains(r.out, "It says: The magic word is xyzzy.\n", r)
        check(len(mock.requests) == 2, "two requests", mock.requests)
        for request in mock.requests:
            check(request["method"] == "POST", "method is POST", request)
            check(request["path"] == "/v1beta/models/mock-gemini:streamGenerateContent?alt=sse",
                  "the streamGenerateContent path", request["path"])
            check(request["headers"].get("x-goog-api-key") == "AIza-test", "x-goog-api-key", request["headers"])
            body = request["body"]
            declared = sorted(d["name"] for t in body.get("tools", []) for d in t["functionDeclarations"])
            check(declared == CODING_TOOLS, "the coding tools are declared", body.get("tools"))
            contains(json.dumps(body.get("systemInstruction")), json.dumps(root)[1:-1], body.get("systemInstruction"))
        responses = [p["functionResponse"] for c in mock.requests[1]["body"]["contents"] for p in c["parts"]
                     if "functionResponse" in p]
        check(len(responses) == 1 and responses[0].get("name") == "read", "one functionResponse", responses)
        contains(json.dumps(responses[0].get("response")), "The magic word is xyzzy.", responses)
    finally:
        shutil.rmtree(top)


def test_endpoint_openai_responses():
    """openai-responses: provider openai by default, key from OPENAI_API_KEY; a read function
    call, then its output goes back as a function_call_output item with the call's id."""
    top, root = make_root()
    responses = [
        or_response([{"type": "text", "text": "Reading it."},
                     {"type": "call", "id": "call_read", "name": "read", "input": {"path": "notes.txt"}}]),
        or_response([{"type": "text", "text": "It says: The magic word is xyzzy."}]),
    ]
    try:
        with Mock(responses) as mock:
            r = run(["--root", root], "Summarize notes.txt\n",
                    env=clean_env(LIBAGENT_API="openai-responses", LIBAGENT_BASE_URL=mock.base_url,
                                  LIBAGENT_MODEL="mock-gpt", OPENAI_API_KEY="sk-test-responses"))
        check(r.code == 0, "exit 0", r)
        check("error:" not in r.err, "no error", r)
        contains(r.err, "(openai-responses, provider openai)", r)
        contains(r.out, 'Reading it.\n[tool] read {"path":"notes.txt"}\n[result] Project notes', r)
        contains(r.out, "It says: The magic word is xyzzy.\n", r)
        check(len(mock.requests) == 2, "two requests", mock.requests)
        for request in mock.requests:
            check(request["path"] == "/v1/responses", "path /v1/responses", request["path"])
            check(request["headers"].get("authorization") == "Bearer sk-test-responses", "bearer key",
                  request["headers"])
            body = request["body"]
            check(body.get("model") == "mock-gpt" and body.get("stream") is True, "model, stream", body)
            check(sorted(t["name"] for t in body.get("tools", [])) == CODING_TOOLS,
                  "the coding tools are declared", body.get("tools"))
        outputs = [i for i in mock.requests[1]["body"]["input"] if i.get("type") == "function_call_output"]
        check(len(outputs) == 1 and outputs[0].get("call_id") == "call_read", "one function_call_output", outputs)
        contains(json.dumps(outputs[0].get("output")), "The magic word is xyzzy.", outputs)
    finally:
        shutil.rmtree(top)


def test_endpoint_errors_are_reported():
    """A server error (retried three times, then said once) and a missing API key (not retried) end
    the answer with an error line, not a crash."""
    top, root = make_root()
    try:
        with Mock([]) as mock:  # answers 500
            r = run(["--root", root], "hello\nhello again\n",
                    env=oc_env(mock, LIBAGENT_API_KEY="k", LIBAGENT_RETRY_BASE_DELAY_MS="1"))
        check(r.code == 0, "exit 0", r)
        check(r.err.count("error: ") == 2, "one error per prompt", r)
        contains(r.err, "error: 500", r)
        check(r.err.count("[retrying in ") == 6, "three retries per prompt", r)
        contains(r.err, "[retrying in 0.001s: 500", r)
        contains(r.err, "[retrying in 0.004s: 500", r)
        check(len(mock.requests) == 8, "four requests per prompt", mock.requests)
        with Mock([]) as mock:
            r = run(["--root", root], "hello\n", env=oc_env(mock))
        check(r.code == 0, "exit 0", r)
        contains(r.err, "error: No API key for provider: openai", r)
        check(mock.requests == [], "no request without a key", mock.requests)
    finally:
        shutil.rmtree(top)


def test_endpoint_overloaded_is_retried():
    """An overloaded server (529) then an answer: one retry line with the wait and the error, the
    answer arrives, no error line; the usage text names the variable that sets the wait."""
    top, root = make_root()
    try:
        with Mock([OVERLOADED, text_response("Answered after a retry.")]) as mock:
            r = run(["--root", root], "hello\n", env=oc_env(mock, LIBAGENT_API_KEY="k", LIBAGENT_RETRY_BASE_DELAY_MS="3"))
        check(r.code == 0, "exit 0", r)
        check("error:" not in r.err, "no error line for a request that was retried", r)
        check(r.err.count("[retrying in ") == 1, "one retry line", r)
        contains(r.err, "[retrying in 0.003s: 529", r)
        contains(r.err, "verloaded", r)
        contains(r.out, "Answered after a retry.\n", r)
        check(len(mock.requests) == 2, "two requests", mock.requests)
        check(mock.requests[0]["body"] == mock.requests[1]["body"], "the retry sends the same request", mock.requests)
        bad = run(["--root", root], "hello\n", env=oc_env(mock, LIBAGENT_RETRY_BASE_DELAY_MS="soon"))
        check(bad.code == 2, "exit 2 for a wait that is not a number", bad)
        contains(bad.err, "error: LIBAGENT_RETRY_BASE_DELAY_MS must be a positive integer, not 'soon'", bad)
        contains(run(["--help"], "").out, "LIBAGENT_RETRY_BASE_DELAY_MS")
    finally:
        shutil.rmtree(top)


def test_endpoint_compacts_near_the_window():
    """A real model's conversation is compacted when it nears the context window (here
    LIBAGENT_CONTEXT_WINDOW): one "[compacted: N tokens -> M]" line, and the next request starts
    from the model's summary."""
    top, root = make_root()
    try:
        with Mock(compaction_responses()) as mock:
            r = run(["--root", root], COMPACTION_INPUT,
                    env=oc_env(mock, LIBAGENT_API_KEY="k", LIBAGENT_CONTEXT_WINDOW="16500"))
        check(r.code == 0 and "error:" not in r.err, "exit 0, no error", r)
        check_compacted(r.err + r.out, mock)
    finally:
        shutil.rmtree(top)


def session_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def conversation(lines):
    """The roles of a session file's messages, but the system prompt's."""
    return [e["message"]["role"] for e in lines if e["type"] == "message" and e["message"]["role"] != "system"]


def test_session_resumes_the_conversation():
    """--session FILE: the first run writes the file (header, both messages); the second resumes it
    ("resumed 2 messages from FILE") and its model request starts with the first run's messages."""
    top, root = make_root()
    path = os.path.join(top, "chat.jsonl")
    try:
        with Mock([text_response("Noted: xyzzy.")]) as mock:
            first = run(["--root", root, "--session", path], "Remember the word xyzzy.\n",
                        env=oc_env(mock, LIBAGENT_API_KEY="k"))
        check(first.code == 0, "exit 0", first)
        contains(first.err, "new session %s\n" % path, first)
        lines = session_lines(path)
        check(lines[0]["type"] == "session" and conversation(lines) == ["user", "assistant"], "header and two messages",
              lines)
        check(lines[0]["version"] == 3 and lines[0]["cwd"] == os.path.realpath(root), "a version 3 header for the root",
              lines[0])
        with Mock([text_response("The word was xyzzy.")]) as mock:
            second = run(["--root", root, "--session", path], "What was the word?\n",
                         env=oc_env(mock, LIBAGENT_API_KEY="k"))
        check(second.code == 0, "exit 0", second)
        contains(second.err, "resumed 2 messages from %s\n" % path, second)
        contains(second.out, "The word was xyzzy.\n", second)
        check(len(mock.requests) == 1, "one request", mock.requests)
        messages = [m for m in mock.requests[0]["body"]["messages"] if m["role"] != "system"]
        check([m["role"] for m in messages] == ["user", "assistant", "user"], "the request resumes", messages)
        contains(json.dumps(messages[0]), "Remember the word xyzzy.", messages)
        contains(json.dumps(messages[1]), "Noted: xyzzy.", messages)
        lines = session_lines(path)
        check(conversation(lines) == ["user", "assistant"] * 2, "the file holds both runs", lines)
        ids = [e["id"] for e in lines[1:]]
        check([e["parentId"] for e in lines[1:]] == [None] + ids[:-1], "one chain of entries", lines)
    finally:
        shutil.rmtree(top)


def test_continue_resumes_the_newest_session_of_the_root():
    """--continue: a new session under --sessions-dir in pi's per-directory layout, resumed by the
    next --continue (here through LIBAGENT_SESSIONS_DIR); --session and --continue exclude each other."""
    top, root = make_root()
    sessions = os.path.join(top, "sessions")
    layout = os.path.join(sessions, "--" + os.path.realpath(root).lstrip("/").replace("/", "-") + "--")
    path = write_script(top, [{"content": [{"type": "text", "text": "Hello."}]}])
    try:
        first = run(["--root", root, "--script", path, "--continue", "--sessions-dir", sessions], "hi\n")
        check(first.code == 0, "exit 0", first)
        files = os.listdir(layout)
        check(len(files) == 1 and files[0].endswith(".jsonl"), "one session file in the layout", files)
        file = os.path.join(layout, files[0])
        contains(first.err, "new session %s\n" % file, first)
        second = run(["--root", root, "--script", path, "--continue"], "again\n",
                     env=clean_env(LIBAGENT_SESSIONS_DIR=sessions))
        check(second.code == 0, "exit 0", second)
        contains(second.err, "resumed 2 messages from %s\n" % file, second)
        check(os.listdir(layout) == files, "still one session file", os.listdir(layout))
        roles = conversation(session_lines(file))
        check(roles == ["user", "assistant"] * 2, "both runs in the file", roles)
        both = run(["--root", root, "--continue", "--session", file], "")
        check(both.code == 2, "exit 2", both)
        contains(both.err, "--session and --continue exclude each other", both)
    finally:
        shutil.rmtree(top)


def test_session_errors_are_reported():
    """A file that is not a session, and one another assistant holds open: a clear error, exit 1,
    the file untouched."""
    top, root = make_root()
    notes = os.path.join(root, "notes.txt")
    try:
        r = run(["--root", root, "--session", notes], "hi\n")
        check(r.code == 1, "exit 1", r)
        contains(r.err, "error: %s is not a session file" % notes, r)
        with open(notes) as f:
            check(f.read() == "Project notes\nThe magic word is xyzzy.\nEnd of notes\n", "notes.txt untouched")
    finally:
        shutil.rmtree(top)


TESTS = [test_scripted_demo, test_scripted_tools_and_refusals, test_scripted_write_flags,
         test_ctrl_c_aborts_the_answer, test_configuration_errors, test_endpoint_read_file, test_endpoint_write_file_asks,
         test_endpoint_anthropic_messages, test_endpoint_openai_responses, test_endpoint_google_generative_ai,
         test_endpoint_errors_are_reported, test_endpoint_overloaded_is_retried,
         test_endpoint_compacts_near_the_window, test_endpoint_catalogue_model, test_session_resumes_the_conversation,
         test_continue_resumes_the_newest_session_of_the_root, test_session_errors_are_reported]

# Under valgrind (several seconds per start of the debug library), the two tests that together run
# every tool, the refusals, both approval answers and the provider path, a resumed session and a retry.
VALGRIND_TESTS = [test_endpoint_read_file, test_endpoint_write_file_asks, test_session_resumes_the_conversation,
                  test_endpoint_overloaded_is_retried]


def main():
    global BINARY, VALGRIND
    args = sys.argv[1:]
    selected = None
    while len(args) > 1 and args[-2] in ("--valgrind", "-k"):
        if args[-2] == "--valgrind":
            VALGRIND = args[-1]
        else:
            selected = args[-1]
        args = args[:-2]
    BINARY = os.path.abspath(args[0])
    passed = failed = 0
    suffix = " (valgrind)" if VALGRIND else ""
    for test in VALGRIND_TESTS if VALGRIND else TESTS:
        if selected and selected not in test.__name__:
            continue
        try:
            test()
            passed += 1
            print("ok    %s%s" % (test.__name__, suffix), flush=True)
        except Exception as error:  # noqa: BLE001 - report every failure the same way
            failed += 1
            print("FAIL  %s%s: %s" % (test.__name__, suffix,
                                      error if isinstance(error, Failed) else traceback.format_exc()),
                  flush=True)
    print("assistant-tests%s: %d passed, %d failed" % (suffix, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

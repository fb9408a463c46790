#!/usr/bin/env python3
"""The loopback model server of workload W5 (bench/README in BENCHMARKS.md, "W5").

Answers POST .../v1/chat/completions with an OpenAI chat-completions SSE stream and POST
.../v1/messages with an Anthropic messages SSE stream. The number of text deltas N comes from the
path: the model's baseUrl is http://127.0.0.1:PORT/nN/v1 (OpenAI) or http://127.0.0.1:PORT/nN
(Anthropic). A first request is answered with N text deltas (delta k = "d" + k zero-padded to 7
digits) and one `add` tool call ({"a":1,"b":2}); a request whose transcript ends with the tool's
result (it holds a tool message) is answered with the text "ok".

It must never be the bottleneck: every response (head and body) is built once per (format, N,
answer) and written with one write; requests are read with large reads and never parsed as JSON.
HTTP/1.1 with keep-alive; responses are chunked (one chunk per SSE event), request bodies may be
either.

    python3 bench/sse_server.py [--port 0]     prints the port it listens on, then serves
"""
import asyncio
import json
import re
import sys

PATH = re.compile(rb"^/n(\d+)(/v1/chat/completions|/v1/messages)(\?.*)?$")


def compact(value):
    return json.dumps(value, separators=(",", ":"))


# Where a delta's text goes in a chunk built once as a template.
HOLE = "@DELTA@"


def delta_text(k):
    return "d%07d" % (k % 10000000)


# ---- OpenAI chat completions --------------------------------------------------------------------


def openai_chunk(delta, finish=None):
    return "data: " + compact({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1750000000,
        "model": "bench-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }) + "\n\n"


def openai_usage(prompt, completion):
    return "data: " + compact({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1750000000,
        "model": "bench-model", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }) + "\n\n"


def openai_body(n, follow_up):
    if follow_up:
        parts = [openai_chunk({"role": "assistant", "content": "ok"}), openai_chunk({}, "stop"),
                 openai_usage(20, 1)]
    else:
        # The per-delta chunk differs only in its 7 digits: format it from one template.
        head, tail = openai_chunk({"content": HOLE}).split(HOLE)
        parts = [openai_chunk({"role": "assistant", "content": ""})]
        parts += [head + delta_text(k) + tail for k in range(n)]
        parts.append(openai_chunk({"tool_calls": [{"index": 0, "id": "call_bench_add", "type": "function",
                                                   "function": {"name": "add", "arguments": ""}}]}))
        parts.append(openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":1,"b":2}'}}]}))
        parts.append(openai_chunk({}, "tool_calls"))
        parts.append(openai_usage(20, n + 5))
    parts.append("data: [DONE]\n\n")
    return parts


# ---- Anthropic messages ---------------------------------------------------------------------------


def sse(name, data):
    return "event: %s\ndata: %s\n\n" % (name, compact(data))


def anthropic_body(n, follow_up):
    start = sse("message_start", {"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "bench-model", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": 1}}})
    text_start = sse("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}})
    text_stop = sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    stop = sse("message_stop", {"type": "message_stop"})

    def message_delta(reason, output):
        return sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": reason, "stop_sequence": None},
                                     "usage": {"output_tokens": output}})

    def text_delta(text):
        return sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": text}})

    if follow_up:
        parts = [start, text_start, text_delta("ok"), text_stop, message_delta("end_turn", 1), stop]
    else:
        head, tail = text_delta(HOLE).split(HOLE)
        parts = [start, text_start]
        parts += [head + delta_text(k) + tail for k in range(n)]
        parts += [text_stop,
                  sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
                      "type": "tool_use", "id": "toolu_bench_add", "name": "add", "input": {}}}),
                  sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
                      "type": "input_json_delta", "partial_json": '{"a":1,"b":2}'}}),
                  sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
                  message_delta("tool_use", n + 5), stop]
    return parts


# ---- HTTP -----------------------------------------------------------------------------------------

_responses = {}


def response(kind, n, follow_up):
    """The whole HTTP response (head and body), built once per (kind, N, answer). The body is
    chunked, one chunk per SSE event, as a real server flushes each event."""
    key = (kind, n, follow_up)
    if key not in _responses:
        events = (openai_body if kind == "openai" else anthropic_body)(n, follow_up)
        chunks = [b"%x\r\n%s\r\n" % (len(e), e) for e in (event.encode() for event in events)]
        head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
                b"transfer-encoding: chunked\r\n\r\n")
        _responses[key] = head + b"".join(chunks) + b"0\r\n\r\n"
    return _responses[key]


def error_response(status, message):
    body = compact({"error": {"type": "bench_server", "message": message}}).encode()
    return ("HTTP/1.1 %d Error\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
            % (status, len(body))).encode() + body


async def read_body(reader, headers):
    length = headers.get(b"content-length")
    if length is not None:
        return await reader.readexactly(int(length))
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return b"".join(chunks)
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
    return b""


async def serve(reader, writer):
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.split(b"\r\n")
            method, target = lines[0].split(b" ")[:2]
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            body = await read_body(reader, headers)
            match = PATH.match(target)
            if method != b"POST" or not match:
                writer.write(error_response(404, "no such endpoint: %s" % target.decode(errors="replace")))
            else:
                n = int(match.group(1))
                if match.group(2) == b"/v1/chat/completions":
                    writer.write(response("openai", n, b'"role":"tool"' in body))
                else:
                    writer.write(response("anthropic", n, b'"tool_result"' in body))
            await writer.drain()
            if headers.get(b"connection", b"").lower() == b"close":
                return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


async def main():
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    # A deep backlog: 200 agents connect at once.
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=2048, limit=1 << 20)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

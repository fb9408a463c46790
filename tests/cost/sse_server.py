#!/usr/bin/env python3
"""The loopback model endpoint of the cost test's provider scenarios (tests/cost/run.py), a
process of its own so that callgrind counts only the client. Every POST is answered with a
streamed text of N deltas of 8 bytes, N taken from the request's model id (`cost-N`):
openai-completions chunks for .../chat/completions, anthropic-messages events for .../messages.
The whole body is built first and written at once, so the client's reads do not depend on how
fast this process is.

    python3 sse_server.py   # prints "PORT <n>" once listening, serves until stdin closes
"""

import http.server
import json
import re
import sys
import threading


def sse(obj, event=None):
    head = f"event: {event}\n" if event else ""
    return head + "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"


def delta_text(i):
    return f"d{i:07d}"  # 8 bytes: the client checks it saw 8 * N bytes of text


def openai_body(n):
    def chunk(delta, finish=None):
        return sse({"id": "chatcmpl-cost", "object": "chat.completion.chunk", "created": 1750000000,
                    "model": "cost", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": delta_text(i)}) for i in range(n)]
    parts += [chunk({}, "stop"), "data: [DONE]\n\n"]
    return "".join(parts)


def anthropic_body(n):
    def event(obj):
        return sse(obj, obj["type"])
    parts = [event({"type": "message_start", "message": {
        "model": "cost", "id": "msg_cost", "type": "message", "role": "assistant", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    parts += [event({"type": "content_block_delta", "index": 0,
                     "delta": {"type": "text_delta", "text": delta_text(i)}}) for i in range(n)]
    parts += [event({"type": "content_block_stop", "index": 0}),
              event({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                     "usage": {"output_tokens": n}}),
              event({"type": "message_stop"})]
    return "".join(parts)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        model = re.search(rb'"model":"cost-(\d+)"', body)
        path = self.path.split("?")[0]
        if not model or not path.endswith(("/chat/completions", "/messages")):
            self.send_error(404, "the cost server answers POST .../chat/completions and .../messages for model cost-N")
            return
        n = int(model.group(1))
        stream = (openai_body(n) if path.endswith("/chat/completions") else anthropic_body(n)).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(stream)))
        self.end_headers()
        self.wfile.write(stream)
        self.wfile.flush()


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()

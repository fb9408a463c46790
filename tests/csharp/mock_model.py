#!/usr/bin/env python3
"""A loopback openai-completions endpoint for the C# binding's tests and its Unity-shaped example
(POST .../chat/completions on 127.0.0.1 only), built on tests/assistant's helpers.

Stateless, so that every test can share one server: a request whose last message is a tool
result is answered with the text "Done: <that result's text>"; one whose last user text is
`CALL <name> <arguments JSON>` with that tool call; any other with ANSWER, streamed in pieces.
A key other than GOOD_KEY gets a 401 "invalid api key".

    python3 mock_model.py     # prints "PORT <n>" once listening, serves until stdin closes
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assistant"))
from test_assistant import LoopbackServer, QuietHandler, text_response, tool_call_response  # noqa: E402

GOOD_KEY = "test-key"
ANSWER = "Hello from the C# mock."


def text_of(message):
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def answer(body):
    messages = body.get("messages") or [{}]
    last = messages[-1]
    if last.get("role") == "tool":
        return text_response("Done: " + text_of(last))
    text = text_of(last) if last.get("role") == "user" else ""
    if text.startswith("CALL "):
        name, _, args = text[5:].partition(" ")
        return tool_call_response([("call_1", name, json.loads(args or "{}"))])
    return text_response(ANSWER)


class Handler(QuietHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.headers.get("authorization", "") != "Bearer " + GOOD_KEY:
            error = b'{"error":{"message":"invalid api key","type":"invalid_request_error"}}'
            return self.reply(401, "application/json", [error])
        if not self.path.split("?")[0].endswith("/chat/completions"):
            return self.reply(404, "application/json", [b'{"error":{"message":"no such path"}}'])
        self.reply(200, "text/event-stream", [piece.encode() for piece in answer(body)])


if __name__ == "__main__":
    with LoopbackServer(Handler) as server:
        print("PORT", server.port, flush=True)
        sys.stdin.read()  # serves until the parent closes stdin

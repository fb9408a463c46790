#!/usr/bin/env python3
"""A loopback model endpoint for the binding examples and tests: openai-completions
(POST .../chat/completions), anthropic-messages (POST .../messages), openai-responses
(POST .../responses) and google-generative-ai (POST .../models/<id>:streamGenerateContent), each
answering every request with a streamed text, on 127.0.0.1 only.

A request whose key is not GOOD_KEY (`authorization: Bearer <key>`, `x-api-key: <key>` or
`x-goog-api-key: <key>`) gets a 401 whose error message is "invalid api key", so a test shows a
failed request with a wrong key.

    python3 mock_endpoint.py [TEXT]   # prints "PORT <n>" once listening, serves until stdin closes

In Python: `with MockEndpoint() as mock: mock.port, mock.requests`.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assistant"))
from test_assistant import (  # noqa: E402 - tests/assistant's
    LoopbackServer, QuietHandler, am_response, gg_response, or_response, text_response)

GOOD_KEY = "test-key"
ANSWER = "Hello from the mock endpoint."


class MockEndpoint(LoopbackServer):
    def __init__(self, answer=ANSWER):
        self.requests = []
        mock = self

        class Handler(QuietHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                mock.requests.append({"path": self.path, "headers": headers, "body": body})
                key = (headers.get("x-api-key") or headers.get("x-goog-api-key")
                       or headers.get("authorization", "").removeprefix("Bearer "))
                path = self.path.split("?")[0]
                if key != GOOD_KEY:
                    error = b'{"type":"error","error":{"type":"authentication_error","message":"invalid api key"}}'
                    if path.endswith(":streamGenerateContent"):  # Gemini's error shape
                        error = b'{"error":{"code":401,"message":"invalid api key","status":"UNAUTHENTICATED"}}'
                    return self.reply(401, "application/json", [error])
                if path.endswith(":streamGenerateContent"):
                    stream = gg_response([{"text": answer}])
                elif path.endswith("/chat/completions"):
                    stream = text_response(answer)
                elif path.endswith("/messages"):
                    stream = am_response([{"type": "text", "text": answer}], "end_turn")
                elif path.endswith("/responses"):
                    stream = or_response([{"type": "text", "text": answer}])
                else:
                    return self.reply(404, "application/json", [b'{"error":{"message":"no such path"}}'])
                self.reply(200, "text/event-stream", [piece.encode() for piece in stream])

        super().__init__(Handler)


if __name__ == "__main__":
    with MockEndpoint(*(sys.argv[1:2] or [ANSWER])) as endpoint:
        print("PORT", endpoint.port, flush=True)
        sys.stdin.read()  # serves until the parent closes stdin

#!/usr/bin/env python3
"""A streamable-HTTP MCP server (stdlib only) whose calls fail with transient HTTP statuses, for
tests/mcp/test_mcp.c: `flaky` answers 503 twice and then its result (which says which attempt
it was), `broken` answers 503 every time. Plain JSON answers; no event stream (GET is 405).
Usage: flaky_http.py PORT"""
import http.server
import json
import sys

attempts = {}
TOOLS = [{"name": name, "description": f"Fails with 503 {how}.", "inputSchema": {"type": "object"}}
         for name, how in (("flaky", "twice, then answers"), ("broken", "every time"))]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", extra=()):
        self.send_response(status)
        for name, value in extra:
            self.send_header(name, value)
        if body:
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(405)

    def do_DELETE(self):
        self.answer(200)

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        method, id_ = message.get("method"), message.get("id")
        if id_ is None:
            return self.answer(202)
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "flaky", "version": "1.0.0"}}
            return self.reply(id_, result, [("mcp-session-id", "flaky-session")])
        if method == "tools/list":
            return self.reply(id_, {"tools": TOOLS})
        if method == "tools/call":
            name = message["params"]["name"]
            attempts[name] = attempts.get(name, 0) + 1
            if name == "broken" or attempts[name] <= 2:
                return self.answer(503, b'{"error":"busy"}')
            return self.reply(id_, {"content": [{"type": "text", "text": f"{name} answered at attempt {attempts[name]}"}]})
        self.reply(id_, None, error={"code": -32601, "message": "no such method"})

    def reply(self, id_, result, extra=(), error=None):
        body = {"jsonrpc": "2.0", "id": id_}
        body.update({"error": error} if error else {"result": result})
        self.answer(200, json.dumps(body).encode(), extra)


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()

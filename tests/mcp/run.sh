#!/usr/bin/env bash
# The MCP tests (make mcp-test): installs the real servers when missing (setup.sh), starts the
# streamable-HTTP server written with PyPI's mcp on a free port, builds tests/mcp/test_mcp.c
# against target/debug/libagent.so and runs it, then checks that the tool names it got equal the
# reference's for the same servers (tests/mcp/reference_names.json, tools/mcp/record-names.mjs).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/mcp/setup.sh
OUT=build/mcp-tests
rm -rf "$OUT" && mkdir -p "$OUT/root"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
build/mcp-venv/bin/python tests/mcp/http_server.py "$port" >"$OUT/http_server.log" 2>&1 &
server=$!
flaky_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 tests/mcp/hostile/flaky_http.py "$flaky_port" >"$OUT/flaky_http.log" 2>&1 &
flaky=$!
trap 'kill $server $flaky 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import socket, sys, time
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("mcp: the HTTP test server did not start (build/mcp-tests/http_server.log)")
PY
cc -Wall -Wextra -Werror -std=c11 -g -Iinclude tests/mcp/test_mcp.c -Ltarget/debug -lagent \
    -Wl,-rpath,"$PWD/target/debug" -lpthread -o "$OUT/test_mcp"
MCP_NODE_MODULES="$PWD/build/mcp-servers/node_modules" MCP_ROOT="$PWD/$OUT/root" \
    MCP_HTTP_URL="http://127.0.0.1:$port/mcp" MCP_FLAKY_URL="http://127.0.0.1:$flaky_port/mcp" MCP_HOSTILE="$PWD/tests/mcp/hostile/server.py" \
    MCP_PID_FILE="$PWD/$OUT/pids" MCP_NAMES_OUT="$PWD/$OUT/names.json" \
    timeout 170 "$OUT/test_mcp" >"$OUT/test_mcp.log" 2>&1 || { cat "$OUT/test_mcp.log"; exit 1; }
cat "$OUT/test_mcp.log"
python3 - "$OUT/names.json" tests/mcp/reference_names.json <<'PY'
import json, sys
ours = {tool["label"]: tool["name"] for tool in json.load(open(sys.argv[1]))}
reference = json.load(open(sys.argv[2]))["names"]
if ours != reference:
    for label in sorted(set(ours) | set(reference)):
        if ours.get(label) != reference.get(label):
            print(f"  {label}: libagent {ours.get(label)!r}, reference {reference.get(label)!r}")
    sys.exit("mcp: the tool names differ from the reference's (above)")
print(f"mcp: {len(ours)} tool names equal the reference's")
PY

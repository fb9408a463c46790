# Sourced by the bench scripts: starts W5's model, the loopback SSE server (bench/sse_server.py),
# as a process of its own (its CPU counts on neither side), stopped when the script exits.
# Sets SERVER (its pid) and PORT; its port file and log go into the directory given.
start_sse_server() {
    local dir=$1
    python3 bench/sse_server.py >"$dir/sse-server.port" 2>"$dir/sse-server.log" &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
        [ -s "$dir/sse-server.port" ] && break
        sleep 0.1
    done
    PORT=$(head -n1 "$dir/sse-server.port")
    [ -n "$PORT" ] || { echo "the SSE server did not start: $(cat "$dir/sse-server.log")" >&2; exit 1; }
}

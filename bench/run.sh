#!/usr/bin/env bash
# Runs the shared benchmark workloads (../shared/bench/README.md) on both sides in one run:
# libagent (bench/bench.c against target/release/libagent.so) and the reference
# (pi-agent-core 1.6.0 on Node, installed under build/bench-reference). Prints the JSON lines
# and a table of figures with ratios (reference / libagent: > 1 means libagent is faster).
#
#   bash bench/run.sh            (or: make bench)
#   REPEAT=3 bash bench/run.sh   (best of 3 per cell; default 1)
#   QUICK=1 bash bench/run.sh    (small sizes, a few minutes: make bench-quick)
#   LIBAGENT_PREBUILT=DIR bash bench/run.sh   (use DIR/libagent.so, with its libagent.so.1
#                                link, instead of building target/release: no cargo at all)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARED=${SHARED:-$(cd "$ROOT/.." && pwd)/shared}
OUT=$ROOT/build/bench
REF=$ROOT/build/bench-reference
REPEAT=${REPEAT:-1}
mkdir -p "$OUT" "$REF"

if [ -n "${LIBAGENT_PREBUILT:-}" ]; then
    LIBDIR=$(cd "$LIBAGENT_PREBUILT" && pwd)
    echo "== using the prebuilt libagent in $LIBDIR" >&2
else
    echo "== building libagent (release)" >&2
    # The Makefile's release build (same features: one build serves both).
    cargo build --release --features "${RELEASE_FEATURES:-mimalloc}"
    LIBDIR=$ROOT/target/release
fi
cc -O2 -std=c11 -Wall -Wextra -Werror -Iinclude bench/bench.c -L"$LIBDIR" -lagent -lpthread \
    -Wl,-rpath,"$LIBDIR" -o "$OUT/bench"

echo "== installing the reference side" >&2
# A copy: /work/shared stays read-only.
cp "$SHARED/bench/reference/bench.mjs" "$SHARED/bench/reference/package.json" "$REF/"
cp bench/w5.mjs "$REF/" # W5's reference side (pi-ai's providers), beside bench.mjs
if [ ! -d "$REF/node_modules/@earendil-works/pi-agent-core" ]; then
    (cd "$REF" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

if [ -n "${QUICK:-}" ]; then
    W1="--prompts 20 --deltas 100"; W2="--prompts 10"; W3A="--deltas 2000"; W3B="--deltas 200"
    W4="--agents 500 --concurrency 100"; LAT="--deltas 2000"
    W5N=(200 2000); W5A=(1 20); IDLE="--agents 1000"
else
    W1="--prompts 200 --deltas 100"; W2="--prompts 100"; W3A="--deltas 20000"; W3B="--deltas 2000"
    W4="--agents 10000 --concurrency 100"; LAT="--deltas 20000"
    W5N=(2000 20000); W5A=(1 200); IDLE="--agents 10000"
fi

# W5's model: the loopback SSE server (sets SERVER and PORT).
# shellcheck source=bench/sse_server.sh
. bench/sse_server.sh
start_sse_server "$OUT"

RESULTS=$OUT/results.jsonl
: >"$RESULTS"
# best ROW_A ROW_B: the better of two result lines (lowest wall; W4: the run's wall; IDLE: the
# empty dispatch's CPU; LAT: the p99). An empty line loses.
best() {
    printf '%s\n%s\n' "$1" "$2" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
key = lambda r: {"W4": r.get("run_wall_ms"), "IDLE": r.get("dispatch_cpu_us")}.get(
    r["workload"], r.get("p99_us", r.get("wall_ms")))
print(json.dumps(min(rows, key=key)))'
}
# run LABEL SIDE CMD [SIDE CMD ...]: REPEAT rounds of every side's command (a shell command line);
# appends each side's best as {"side","label",...figures}. The sides take turns, in reverse order
# every other round: a program run right after another one is slower for a while (the memory the
# other freed is the kernel's to zero again, its caches cold), so no side always runs second.
run() {
    local label=$1
    shift
    local -a sides=() cmds=() bests=() order
    while [ $# -gt 0 ]; do
        sides+=("$1")
        cmds+=("$2")
        bests+=("")
        shift 2
    done
    local round i line
    for round in $(seq "$REPEAT"); do
        order=($(seq 0 $((${#sides[@]} - 1))))
        if [ $((round % 2)) -eq 0 ]; then
            order=($(seq $((${#sides[@]} - 1)) -1 0))
        fi
        for i in "${order[@]}"; do
            line=$(bash -c "${cmds[i]}")
            bests[i]=$(best "${bests[i]}" "$line")
        done
    done
    for i in "${!sides[@]}"; do
        echo "${bests[i]}" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); r = {"side": sys.argv[1], "label": sys.argv[2], **r}
print(json.dumps(r))' "${sides[i]}" "$label" | tee -a "$RESULTS" >&2
    done
}

cells=(
    "W1|$W1"
    "W2|$W2"
    "W3|$W3A"
    "W3|$W3B"
    "W4|$W4"
)
for cell in "${cells[@]}"; do
    w=${cell%%|*}
    params=${cell#*|}
    label="$w $params"
    sides=(reference "cd '$REF' && node --expose-gc bench.mjs $w $params")
    if [ "$w" = W4 ]; then
        # The default runtime (one thread), then multi-thread runtimes with 2 and 4 workers.
        sides+=(libagent "'$OUT/bench' $w $params --workers 1")
        for workers in 2 4; do
            sides+=("libagent-${workers}workers" "'$OUT/bench' $w $params --workers $workers")
        done
    else
        # The model pushes through the typed pushes (agent_stream_push_text_delta & co.);
        # `type-jsonpush` is the type-mode listener with every event pushed as JSON text.
        for mode in type lean full; do
            sides+=("libagent-$mode" "'$OUT/bench' $w $params --mode $mode")
        done
        sides+=(libagent-type-jsonpush "'$OUT/bench' $w $params --mode type --push json")
    fi
    run "$label" "${sides[@]}"
done
# W5, the real-model path: the built-in providers (libagent) and pi-ai's streamSimple (reference)
# against the SSE server; the type-mode listener; A agents prompted at once.
for api in openai-completions anthropic-messages; do
    for n in "${W5N[@]}"; do
        for a in "${W5A[@]}"; do
            params="--api $api --deltas $n --agents $a"
            run "W5 $params" \
                reference "cd '$REF' && node --expose-gc w5.mjs W5 $params --port $PORT" \
                libagent "'$OUT/bench' W5 $params --port $PORT"
        done
    done
done
# Latency probe (libagent only): host thread push -> subscriber, one delta at a time; with the
# listener on the runtime thread, then host-pumped (inside agent_dispatch on the pushing thread).
for threading in runtime pumped; do
    for push in typed json; do
        side="libagent-$push"
        [ "$threading" = pumped ] && side="$side-pumped"
        run "LAT $LAT" "$side" "'$OUT/bench' LAT $LAT --push $push --threading $threading"
    done
done
# Idle agents on one dispatcher (libagent only): memory and an empty agent_dispatch's cost.
run "IDLE $IDLE" libagent "'$OUT/bench' IDLE $IDLE"

# The server must never be the bottleneck: its own CPU time over the whole run, for the record.
python3 -c '
import os, sys
fields = open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split()
ms = (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
print(f"== SSE server CPU over the whole run: {ms:.0f} ms", file=sys.stderr)
' "$SERVER" || true

python3 - "$RESULTS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ref = {r["label"]: r for r in rows if r["side"] == "reference"}
def f(x):
    return "-" if x is None else (f"{x:.1f}" if isinstance(x, float) else str(x))
def ratio(a, b):
    return "-" if not a or not b else f"{a / b:.2f}x"
print()
print("| workload | side | wall ms | cpu ms | ref/lib wall | ref/lib cpu | other |")
print("|---|---|---:|---:|---:|---:|---|")
for r in rows:
    if r["workload"] in ("LAT", "IDLE"):
        continue
    q = ref[r["label"]]
    if r["workload"] == "W4":
        wall, cpu, rw, rc = r["run_wall_ms"], r["run_cpu_ms"], q["run_wall_ms"], q["run_cpu_ms"]
        other = f"create {f(r['create_wall_ms'])} ms, {r['bytes_per_agent']} B/agent"
        if r is not q:
            other += (f" (ref/lib: create {ratio(q['create_wall_ms'], r['create_wall_ms'])},"
                      f" bytes {ratio(q['bytes_per_agent'], r['bytes_per_agent'])})")
    else:
        wall, cpu, rw, rc = r["wall_ms"], r["cpu_ms"], q["wall_ms"], q["cpu_ms"]
        other = f"{r['events']} events"
        if r["workload"] == "W5":
            other += f", {r['us_per_delta']} us/delta (CPU)"
        if r["workload"] == "W3":
            other += f", {r['us_per_delta']} us/delta"
        if r.get("json_bytes"):
            other += f", {r['json_bytes'] / 1e6:.1f} MB JSON"
    side = r["side"]
    if side == "reference":
        print(f"| {r['label']} | {side} | {f(wall)} | {f(cpu)} | | | {other} |")
    else:
        print(f"| {r['label']} | {side} | {f(wall)} | {f(cpu)} | {ratio(rw, wall)} | {ratio(rc, cpu)} | {other} |")
print()
print("| latency probe | side | p50 us | p99 us | max us |")
print("|---|---|---:|---:|---:|")
for r in rows:
    if r["workload"] == "LAT":
        print(f"| {r['label']} | {r['side']} | {r['p50_us']} | {r['p99_us']} | {r['max_us']} |")
print()
print("| idle agents (one dispatcher) | side | create ms | B/agent | empty agent_dispatch us (CPU) |")
print("|---|---|---:|---:|---:|")
for r in rows:
    if r["workload"] == "IDLE":
        print(f"| {r['label']} | {r['side']} | {f(r['create_wall_ms'])} | {r['bytes_per_agent']}"
              f" | {r['dispatch_cpu_us']:.3f} |")
# W5: both sides must have streamed the same response and run the tool (the same event counts).
for r in rows:
    q = ref.get(r["label"])
    if r["workload"] != "W5" or r is q or q is None:
        continue
    for key in ("events", "text_deltas", "tool_runs"):
        if r.get(key) != q.get(key):
            print(f"WARNING: {r['label']}: {key} differ: reference {q.get(key)}, libagent {r.get(key)}",
                  file=sys.stderr)
            print(f"\nWARNING: {r['label']}: {key} differ: reference {q.get(key)}, libagent {r.get(key)}")
EOF

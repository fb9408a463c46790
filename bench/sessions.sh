#!/usr/bin/env bash
# The session bench row (issue 26), both sides in one run on the same file: opening a session file of
# ENTRIES entries (default 100 000, ~94 MB, tests/sessions/generate.py: realistic turns with tool
# calls and results) and building the context at its leaf:
#   libagent   agent_session_open + agent_session_get(CONTEXT) (bench/session_open.c, release build)
#   reference  pi-coding-agent 1.6.0's SessionManager.open + buildSessionContext (bench/session_open.mjs)
# Prints each side's JSON line (best of REPEAT, default 10, by total time), then the ratios: time
# (reference / libagent, target >= 10x) and libagent's memory while open over the file's size
# (target <= 2x).
#
#   bash bench/sessions.sh            (or: make bench-sessions; also part of make bench)
#   ENTRIES=20000 REPEAT=1 bash bench/sessions.sh
#   LIBAGENT_PREBUILT=DIR bash bench/sessions.sh   (DIR/libagent.so instead of building target/release)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/build/bench
ENTRIES=${ENTRIES:-100000}
REPEAT=${REPEAT:-10}
mkdir -p "$OUT"

if [ -n "${LIBAGENT_PREBUILT:-}" ]; then
    LIBDIR=$(cd "$LIBAGENT_PREBUILT" && pwd)
else
    echo "== building libagent (release)" >&2
    cargo build --release --features "${RELEASE_FEATURES:-mimalloc}"
    LIBDIR=$ROOT/target/release
fi
cc -O2 -std=c11 -Wall -Wextra -Werror -Iinclude bench/session_open.c -L"$LIBDIR" -lagent -Wl,-rpath,"$LIBDIR" \
    -o "$OUT/session_open"
PI_DIR=$(bash tests/sessions/pi.sh)
FILE=$OUT/session-$ENTRIES.jsonl
echo "== generating $FILE (kept for the next run)" >&2
python3 tests/sessions/generate.py "$FILE" "$ENTRIES"

RESULTS=$OUT/sessions.jsonl
: >"$RESULTS"
for _ in $(seq "$REPEAT"); do
    "$OUT/session_open" "$FILE" | tee -a "$RESULTS" >&2
    PI_DIR=$PI_DIR node --expose-gc bench/session_open.mjs "$FILE" | tee -a "$RESULTS" >&2
done

python3 - "$RESULTS" "$FILE" <<'PY'
import json, os, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
size = os.path.getsize(sys.argv[2])
best = {side: min((r for r in rows if r["side"] == side), key=lambda r: r["total_ms"])
        for side in ("libagent", "reference")}
lib, ref = best["libagent"], best["reference"]
if (lib["entries"], lib["messages"]) != (ref["entries"], ref["messages"]):
    sys.exit(f"the two sides read different sessions: libagent {lib['entries']} entries / {lib['messages']} "
             f"context messages, reference {ref['entries']} / {ref['messages']}")
print()
print(f"session file: {lib['entries']} entries, {size / 1e6:.1f} MB, {lib['messages']} messages in the context at its leaf")
print()
print("| side | open ms | context ms | total ms | RSS after open | RSS after context | peak RSS | ref/lib time |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for side, r in (("reference (pi 1.6.0, Node)", ref), ("libagent", lib)):
    ratio = "" if r is ref else f"{ref['total_ms'] / r['total_ms']:.2f}x"
    print(f"| {side} | {r['open_ms']} | {r['context_ms']} | {r['total_ms']} "
          f"| {r['rss_after_open_bytes'] / 1e6:.0f} MB ({r['rss_after_open_bytes'] / size:.2f}x the file) "
          f"| {r['rss_open_bytes'] / 1e6:.0f} MB ({r['rss_open_bytes'] / size:.2f}x) "
          f"| {r['peak_rss_bytes'] / 1e6:.0f} MB | {ratio} |")
# Each repeat runs the two sides back to back: their ratio compares them on the machine as it was
# then (a shared machine's speed drifts over seconds).
pairs = sorted(r["total_ms"] / l["total_ms"] for l, r in zip(
    [r for r in rows if r["side"] == "libagent"], [r for r in rows if r["side"] == "reference"]))
print()
print(f"each repeat's ratio (reference / libagent, back to back): "
      f"{', '.join(f'{p:.2f}x' for p in pairs)}; median {pairs[len(pairs) // 2]:.2f}x")
speed = ref["total_ms"] / lib["total_ms"]
memory = max(lib["rss_after_open_bytes"], lib["rss_open_bytes"]) / size
print(f"open + context: the reference takes {speed:.2f}x libagent's time (target >= 10x): "
      f"{'met' if speed >= 10 else 'NOT met'}")
print(f"memory while open (the larger RSS growth, after the open or after the context): {memory:.2f}x the "
      f"file's size (target <= 2x): {'met' if memory <= 2 else 'NOT met'}")
PY

#!/usr/bin/env bash
# Instruction counts of libagent's side of the benchmark cells (callgrind), to print beside the
# CPU times of bench/run.sh: counts do not move with the machine's load, times do.
#
#   LIBAGENT_PREBUILT=DIR bash bench/instructions.sh    (DIR/libagent.so; default target/release)
#
# Per-unit figures are slopes between two sizes of a cell (the fixed start-up cost cancels):
# per delta for W3 and W5, per agent for W4. Prints a markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/bench/instructions
mkdir -p "$OUT"
LIBDIR=$(cd "${LIBAGENT_PREBUILT:-target/release}" && pwd)
[ -e "$LIBDIR/libagent.so" ] || { echo "no libagent.so in $LIBDIR (make release)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is needed (make tools)" >&2; exit 1; }
cc -O2 -std=c11 -Wall -Wextra -Werror -Iinclude bench/bench.c -L"$LIBDIR" -lagent -lpthread \
    -Wl,-rpath,"$LIBDIR" -o "$OUT/bench"

# W5's model (sets SERVER and PORT).
# shellcheck source=bench/sse_server.sh
. bench/sse_server.sh
start_sse_server "$OUT"

# count ARGS...: the instructions callgrind counts for one run of the bench program.
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$OUT/bench" "$@" 2>&1 >/dev/null |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p; s/.*refs: *\([0-9,]*\).*/\1/p' | tr -d , | head -n1
}

echo "| cell | instructions | per unit |"
echo "|---|---:|---:|"
for cell in "W1 --prompts 200 --deltas 100" "W2 --prompts 100"; do
    # shellcheck disable=SC2086
    n=$(count $cell --mode type)
    echo "| $cell (type) | $n | |"
done
small=$(count W3 --deltas 2000 --mode type)
large=$(count W3 --deltas 20000 --mode type)
echo "| W3 --deltas 2000 / 20000 (type) | $small / $large | $(((large - small) / 18000)) per delta |"
small=$(count W4 --agents 1000 --concurrency 100)
large=$(count W4 --agents 2000 --concurrency 100)
echo "| W4 --agents 1000 / 2000 | $small / $large | $(((large - small) / 1000)) per agent |"
for api in openai-completions anthropic-messages; do
    small=$(count W5 --api "$api" --deltas 2000 --agents 1 --port "$PORT")
    large=$(count W5 --api "$api" --deltas 20000 --agents 1 --port "$PORT")
    echo "| W5 --api $api --deltas 2000 / 20000 --agents 1 | $small / $large | $(((large - small) / 18000)) per delta |"
done

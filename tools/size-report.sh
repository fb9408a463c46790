#!/usr/bin/env bash
# The size report (`make size-report`, README "Size"): for the shipped feature set and for the
# core alone, the release libagent.so stripped as `make install` strips it, its sections, the
# crates holding its code and data (tools/size-by-crate.py) and its largest data tables.
#
# Needs the release build of each feature set (fat LTO: minutes each), so it is a standalone
# target, not a test step. SIZE_SETS limits the sets ("default core"); SIZE_TOP the crate rows.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${SIZE_OUT:-build/size}
TARGET=${CARGO_TARGET_DIR:-target}
TOP=${SIZE_TOP:-25}
RELEASE_FEATURES=${RELEASE_FEATURES:-mimalloc}
mkdir -p "$OUT"

flags_for() {
    case $1 in
        default) echo "--features $RELEASE_FEATURES" ;;
        core) echo "--no-default-features --features $RELEASE_FEATURES" ;;
        *) echo "size-report: unknown set '$1' (default, core)" >&2; exit 2 ;;
    esac
}

mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }

report() {
    local set=$1 flags
    flags=$(flags_for "$set")
    echo
    echo "==== $set (cargo build --release $flags) ===="
    # shellcheck disable=SC2086
    cargo build --release $flags
    local so=$OUT/libagent-$set.so
    cp "$TARGET/release/libagent.so" "$so"
    # What `make install` installs: strip-unneeded, debug info in a separate file.
    objcopy --strip-unneeded "$so" "$OUT/libagent-$set.stripped.so"
    local stripped
    stripped=$(stat -c %s "$OUT/libagent-$set.stripped.so")
    echo "stripped libagent.so: $stripped B ($(mb "$stripped"))"
    echo
    echo "-- sections of the stripped library (bytes) --"
    size -A "$OUT/libagent-$set.stripped.so" | awk '$2 ~ /^[0-9]+$/ && $2 > 4096 { printf "  %-22s %10d\n", $1, $2 }'
    echo
    echo "-- code and data by crate (symbol table of the unstripped library) --"
    python3 tools/size-by-crate.py "$so" "$TOP"
    echo
    echo "-- largest read-only data symbols (tables: Unicode, IDNA, models, ...) --"
    # Data objects of the unstripped library, by size; demangled names say whose table it is.
    nm -S --size-sort -C "$so" | awk '$3 ~ /^[rRdD]$/' | tail -n "$TOP" | sort -k2,2r \
        | while read -r _ size _ name; do printf '  %9d %s\n' "$((16#$size))" "$name"; done
}

for set in ${SIZE_SETS:-default core}; do
    report "$set"
done

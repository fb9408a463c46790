#!/usr/bin/env bash
# Runs each fuzz target in turn for FUZZ_SECONDS (one process, -jobs=1), from the committed seeds
# plus a working corpus in build/fuzz-corpus/<target>; prints libFuzzer's final stats line per
# target. Used by `make fuzz` (and for the long runs recorded in RELIABILITY.md).
# Usage: fuzz/campaign.sh [target...]   (default: all targets)
set -u
cd "$(dirname "$0")"
SECONDS_EACH="${FUZZ_SECONDS:-60}"
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(ffi_json partial_json schema_args stream_events api_sequences session_lines provider_events http_response)
BIN=target/x86_64-unknown-linux-gnu/release
ROOT="$PWD/../build/fuzz"
status=0
for t in "${TARGETS[@]}"; do
    work="$ROOT/$t"
    mkdir -p "$work/corpus" "$work/artifacts"
    dict=()
    case "$t" in
        ffi_json|partial_json|schema_args|session_lines|provider_events) dict=(-dict="$PWD/json.dict") ;;
        # Structured inputs: longer ones mean longer event/call sequences, so no slow ramp-up.
        stream_events|api_sequences) dict=(-len_control=0 -max_len=2048) ;;
    esac
    # Known inputs first: every committed regression must pass.
    if [ -d "regressions/$t" ] && [ -n "$(ls -A "regressions/$t")" ]; then
        "$BIN/$t" -timeout=60 regressions/$t/* >"$work/regressions.log" 2>&1 \
            || { echo "fuzz $t: a committed regression input fails (see $work/regressions.log)"; status=1; }
    fi
    (cd "$work" && "$OLDPWD/$BIN/$t" -jobs=1 -workers=1 -max_total_time="$SECONDS_EACH" -timeout=60 \
        -artifact_prefix="$work/artifacts/" "${dict[@]}" corpus "$OLDPWD/corpus/$t" >run.log 2>&1)
    log="$work/fuzz-0.log"
    last="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)"
    if grep -qE 'ERROR: libFuzzer|ERROR: AddressSanitizer|panicked' "$log"; then
        echo "fuzz $t: FINDING (see $log and $work/artifacts/)"
        grep -m3 -E 'panicked|ERROR:|SUMMARY' "$log"
        status=1
    else
        echo "fuzz $t (${SECONDS_EACH}s): $last"
    fi
done
exit $status

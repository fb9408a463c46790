#!/usr/bin/env bash
# Runs a canary: a program with a deliberate bug that a sanitizer must report. Passes only when
# the command fails AND its output contains every EXPECTED text (the sanitizer's report); a setup
# that stopped detecting would otherwise pass every test it guards.
# Usage: expect_report.sh NAME EXPECTED... -- COMMAND [ARG...]
# (output kept in $CANARY_LOG when set; the command is stopped after CANARY_TIMEOUT seconds, 600)
set -u
name="$1"; shift
expected=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do expected+=("$1"); shift; done
[ $# -gt 1 ] || { echo "expect_report.sh: no command after -- for the canary $name" >&2; exit 2; }
shift
log="${CANARY_LOG:-}"
[ -n "$log" ] || { log="$(mktemp)"; trap 'rm -f "$log"' EXIT; }
status=0
timeout "${CANARY_TIMEOUT:-600}" "$@" >"$log" 2>&1 || status=$?
missing=()
for text in "${expected[@]}"; do grep -qF -- "$text" "$log" || missing+=("$text"); done
if [ "$status" -eq 0 ] || [ ${#missing[@]} -gt 0 ]; then
    tail -25 "$log"
    echo "canary $name: the deliberate bug was not reported (exit $status; missing from the output: ${missing[*]:-none})."
    echo "The sanitizer setup is broken: fix it before trusting the results it guards."
    exit 1
fi
echo "canary $name: reported, as it must be"

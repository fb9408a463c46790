#!/usr/bin/env bash
# Runs the steps of a test tier (make check, make test) one after another, each a make target under
# a time limit: `tests/steps.sh TIER TARGET:SECONDS...`. A step that fails, or runs past its limit
# (a hang would otherwise burn CI's whole budget without a word), stops the tier with a sentence
# naming it. Each step's wall time is printed at the end (the README's figures come from here),
# with the disk space left after it (CI's disk is finite: a full disk must be visible, not guessed).
set -u -o pipefail
tier="$1"; shift
make="${MAKE:-make}"
start=$(date +%s)
times=()

# CPU seconds (user + system) of this script's finished children so far, into `cpu_total`, from
# bash's `times` (run in this shell: in a command substitution it would report the subshell's):
# on two cores the tier is bound by its CPU total, so each step reports its own.
times_file=$(mktemp)
cpu_now() {
    times >"$times_file"
    cpu_total=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$times_file")
}

summary() {
    echo "---- make $tier: wall time per step, its CPU time (disk left after it)"
    for line in "${times[@]+"${times[@]}"}"; do echo "$line"; done
    local total=$(( $(date +%s) - start ))
    cpu_now
    local cpu=$cpu_total
    printf '%6s  %-22s cpu %6s  (the background builds: build/prebuild.log)\n' \
        "$(( total / 60 ))m$(( total % 60 ))s" "total" "$(( cpu / 60 ))m$(( cpu % 60 ))s"
    rm -f "$times_file"
}

# PREBUILD: make targets (builds) that later steps need, run one after another in the background
# at the lowest CPU priority, in a process group of their own (stopped when the tier ends). A step
# that needs one waits on cargo's lock of its target directory, then finds it built; a failed
# prebuild is only logged: the step's own build reports the error. The group stays in this
# session: a new session (setsid) is a new scheduler autogroup, which Linux shares the CPU with
# half and half whatever its nice value (the early steps then took twice their time).
prebuild_pid=""
if [ -n "${PREBUILD:-}" ]; then
    mkdir -p build
    set -m # the background job in a process group of its own
    # shellcheck disable=SC2086 # a list of targets
    # Each target's cumulative CPU time goes into the log (`times` after each).
    # shellcheck disable=SC2016 # expanded by the inner shell
    nice -n 19 bash -c 'for t in $1; do "$0" --no-print-directory "$t"; echo "prebuild: after $t:"; times; done' \
        "$make" "$PREBUILD" >build/prebuild.log 2>&1 &
    prebuild_pid=$!
    set +m
    stop_prebuild() { kill -TERM -- "-$prebuild_pid" 2>/dev/null; }
    trap stop_prebuild EXIT
    trap 'stop_prebuild; exit 143' TERM INT
    echo "==== make $tier: building $PREBUILD in the background (build/prebuild.log)"
fi

for spec in "$@"; do
    step="${spec%%:*}" limit="${spec##*:}"
    echo "==== make $tier: $step (time limit ${limit} s)"
    cpu_now
    t0=$(date +%s) cpu0=$cpu_total
    # timeout signals its whole process group: make and everything it started.
    timeout --kill-after=30 "$limit" "$make" --no-print-directory "$step"
    status=$?
    cpu_now
    t=$(( $(date +%s) - t0 )) cpu=$(( cpu_total - cpu0 ))
    free=$(df -Pm . 2>/dev/null | awk 'NR == 2 { printf "%.1f GB free", $4 / 1024 }')
    times+=("$(printf '%6s  %-22s cpu %6s  %s' "$(( t / 60 ))m$(( t % 60 ))s" "$step" "$(( cpu / 60 ))m$(( cpu % 60 ))s" "$free")")
    # CI (.ci/run sets STEPS_PRUNE=1) builds on a finite disk and uses each of these builds in one
    # step only: the sanitizers' and the fuzz replay's target dirs go once their step is done.
    if [ -n "${STEPS_PRUNE:-}" ]; then
        case "$step" in
            check-memory) rm -rf target/asan target/tsan ;;
            fuzz-replay) rm -rf target/fuzz-replay ;;
        esac
    fi
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        summary
        echo "make $tier: step '$step' ran past its time limit of $limit s and was stopped (a hang?)"
        exit 1
    elif [ "$status" -ne 0 ]; then
        summary
        echo "make $tier: step '$step' failed (exit $status); rerun it alone with 'make $step'"
        exit 1
    fi
done
summary
echo "make $tier: all ${#times[@]} steps passed"

#!/usr/bin/env bash
# Breaks each guard against vacuous passes on purpose and checks that it reports (make
# guard-selftest): the comparison driver (tests/kits/compare.py) with the kits' own comparators,
# the runners on an empty fixtures directory, fixture 351's id masks, and fuzz/replay.sh's counting
# (against fake targets). Every case asserts the exit status and the message.
#
#   SHARED=../shared PROVIDER_RUNNER=target/debug/examples/provider-runner bash tests/kits/selftest.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
SHARED="${SHARED:-$(cd .. && pwd)/shared}"
PROVIDER_RUNNER="${PROVIDER_RUNNER:-target/debug/examples/provider-runner}"
CONFORMANCE_COMPARE="$SHARED/conformance/compare.py"
CODING_COMPARE="$SHARED/coding/compare.py"
SESSIONS_COMPARE="$SHARED/sessions/compare.py"
SESSIONS_RUNNER="${SESSIONS_RUNNER:-build/sessions-runner}"
for file in "$CONFORMANCE_COMPARE" "$CODING_COMPARE" "$SESSIONS_COMPARE" "$PROVIDER_RUNNER" "$SESSIONS_RUNNER"; do
    [ -e "$file" ] || { echo "guard-selftest: $file is missing (SHARED=$SHARED; build the provider-runner example and make sessions-runner)"; exit 1; }
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

# expect NAME STATUS MESSAGE -- COMMAND...: STATUS is "fail" (any non-zero exit) or "pass" (0);
# MESSAGE is a fixed string the output must contain.
expect() {
    local name=$1 want=$2 message=$3
    shift 4
    local output status
    output=$("$@" 2>&1)
    status=$?
    if { [ "$want" = fail ] && [ $status -eq 0 ]; } || { [ "$want" = pass ] && [ $status -ne 0 ]; }; then
        echo "FAIL $name: exit status $status, wanted $want"; echo "$output" | tail -5 | sed 's/^/    /'
        failed=$((failed + 1))
    elif [[ "$output" != *"$message"* ]]; then
        echo "FAIL $name: exit status $status as wanted, but the output lacks: $message"
        echo "$output" | tail -5 | sed 's/^/    /'
        failed=$((failed + 1))
    else
        echo "ok   $name"
        passed=$((passed + 1))
    fi
}

# A kit of two scenarios whose actual traces match: the conformance kit's format.
fresh_kit() {
    rm -rf "$WORK/kit" && mkdir -p "$WORK/kit/fixtures" "$WORK/kit/expected" "$WORK/kit/actual"
    for name in a b; do
        echo '{"name": "'$name'"}' >"$WORK/kit/fixtures/$name.json"
        printf '{"kind":"event","n":1}\n{"kind":"result","name":"%s"}\n' $name >"$WORK/kit/expected/$name.jsonl"
        cp "$WORK/kit/expected/$name.jsonl" "$WORK/kit/actual/"
    done
}
driver() {
    python3 tests/kits/compare.py --kit selftest --fixtures "$WORK/kit/fixtures" --expected "$WORK/kit/expected" \
        --actual "$WORK/kit/actual" "$@"
}

fresh_kit
expect "driver passes a complete set" pass "selftest: 2/2 fixtures compared, 2 passed" -- \
    driver --comparator "$CONFORMANCE_COMPARE"
rm "$WORK"/kit/fixtures/* "$WORK"/kit/expected/* "$WORK"/kit/actual/*
expect "driver fails on an empty fixtures directory" fail "holds no fixtures (*.json)" -- \
    driver --comparator "$CONFORMANCE_COMPARE"
fresh_kit && rm "$WORK/kit/expected/b.jsonl" "$WORK/kit/actual/b.jsonl"
expect "driver fails on a removed expected file" fail "fixture b has no expected trace" -- \
    driver --comparator "$CONFORMANCE_COMPARE"
fresh_kit && cp "$WORK/kit/actual/a.jsonl" "$WORK/kit/actual/c.jsonl"
expect "driver fails on an actual trace with no expected one" fail "actual/c.jsonl has no expected trace" -- \
    driver --comparator "$CONFORMANCE_COMPARE"
fresh_kit && rm "$WORK/kit/actual/b.jsonl"
expect "driver fails on an expected trace with no actual one" fail "expected trace b.jsonl has no actual trace" -- \
    driver --comparator "$CONFORMANCE_COMPARE"
fresh_kit && rm "$WORK/kit/fixtures/b.json"
expect "driver fails on an expected trace with no fixture" fail "expected/b.jsonl has no fixture" -- \
    driver --comparator "$CONFORMANCE_COMPARE"
fresh_kit && sed -i 's/"n":1/"n":2/' "$WORK/kit/actual/b.jsonl"
expect "driver fails on a differing trace, naming it" fail "1 of 2 traces differ from the expected ones (exit 1): b." -- \
    driver --comparator "$CONFORMANCE_COMPARE"

# Comparators that claim success without counting every fixture.
fresh_kit
printf 'print("all good")\n' >"$WORK/unparsable.py"
expect "driver fails on a summary it cannot read" fail "is not a 'N passed, M failed' summary" -- \
    driver --comparator "$WORK/unparsable.py"
printf 'print("conformance: 1 passed, 0 failed")\n' >"$WORK/undercounting.py"
expect "driver fails when the comparator counts fewer cases than fixtures" fail \
    "the comparator compared 1 traces and passed 1, but there are 2 fixtures" -- driver --comparator "$WORK/undercounting.py"

# The coding kit's format (one JSON document per trace) and comparator.
rm -rf "$WORK/coding" && mkdir -p "$WORK/coding/fixtures" "$WORK/coding/expected" "$WORK/coding/actual"
echo '{}' >"$WORK/coding/fixtures/010-x.json"
echo '{"results": [], "tree": {"a.txt": "hi"}}' >"$WORK/coding/expected/010-x.json"
cp "$WORK/coding/expected/010-x.json" "$WORK/coding/actual/"
coding_driver() {
    python3 tests/kits/compare.py --kit coding-selftest --fixtures "$WORK/coding/fixtures" --expected "$WORK/coding/expected" \
        --actual "$WORK/coding/actual" --comparator "$CODING_COMPARE" --trace-suffix .json
}
expect "driver passes a coding set" pass "coding-selftest: 1/1 fixtures compared, 1 passed" -- coding_driver
rm "$WORK/coding/expected/010-x.json"
expect "driver fails on a coding fixture whose expected file was removed" fail "fixture 010-x has no expected trace" -- coding_driver

# --ops (for a kit whose runner takes some of its ops): the other ops' fixtures
# and expected traces leave every check, and a result written for one of them is still caught.
fresh_ops_kit() {
    rm -rf "$WORK/s" && mkdir -p "$WORK/s/fixtures" "$WORK/s/expected" "$WORK/s/actual"
    echo '{"name": "010-a", "op": "load"}' >"$WORK/s/fixtures/010-a.json"
    echo '{"name": "030-b", "op": "estimate"}' >"$WORK/s/fixtures/030-b.json"
    echo '{"leafId": "e1", "entries": []}' >"$WORK/s/expected/010-a.json"
    echo '{"perMessage": [1]}' >"$WORK/s/expected/030-b.json"
    cp "$WORK/s/expected/010-a.json" "$WORK/s/actual/"
}
ops_driver() {
    python3 tests/kits/compare.py --kit sessions-selftest --fixtures "$WORK/s/fixtures" --expected "$WORK/s/expected" \
        --actual "$WORK/s/actual" --comparator "$SESSIONS_COMPARE" --trace-suffix .json "$@"
}
fresh_ops_kit
expect "driver compares the selected ops only" pass "sessions-selftest: 1/1 fixtures compared, 1 passed" -- ops_driver --ops load,append
expect "driver without --ops counts every op" fail "expected trace 030-b.json has no actual trace" -- ops_driver
sed -i 's/"e1"/"e2"/' "$WORK/s/actual/010-a.json"
expect "driver fails on a differing trace of a selected op" fail "1 of 1 traces differ from the expected ones" -- \
    ops_driver --ops load,append
fresh_ops_kit && cp "$WORK/s/expected/030-b.json" "$WORK/s/actual/"
expect "driver fails on a result written for an op left out" fail "030-b.json has no expected trace" -- \
    ops_driver --ops load,append
fresh_ops_kit && rm "$WORK/s/expected/010-a.json"
expect "driver fails on a selected fixture without an expected trace" fail "fixture 010-a has no expected trace" -- \
    ops_driver --ops load,append
fresh_ops_kit && echo '{not json' >"$WORK/s/fixtures/020-c.json"
expect "driver fails on a fixture whose op cannot be read" fail "020-c.json is not a JSON object" -- \
    ops_driver --ops load,append
fresh_ops_kit
expect "driver fails when no fixture has a selected op" fail "holds no fixtures (*.json)" -- ops_driver --ops cut-point

# Fixture 351: the oracle's generated ids against libagent's, masked; a missing, malformed or
# repeated id still differs.
FIXTURE_351=351-gg-function-calls-without-id
rm -rf "$WORK/p" && mkdir -p "$WORK/p/fixtures" "$WORK/p/expected" "$WORK/p/actual"
cp "tests/providers/fixtures/$FIXTURE_351.json" "$WORK/p/fixtures/"
cp "tests/providers/expected/$FIXTURE_351.jsonl" "$WORK/p/expected/"
oracle_ids=$(grep -o 'get_weather_[0-9]\{13\}_[0-9]*' "$WORK/p/expected/$FIXTURE_351.jsonl" | awk '!seen[$0]++')
[ "$(echo "$oracle_ids" | wc -l)" -eq 3 ] || { echo "FAIL: the expected trace of 351 lacks the oracle's three generated ids"; exit 1; }
# libagent's ids: the call's position among the response's tool calls (the second call keeps w1).
with_ids() {
    local sed_script=""
    local -a positions=("$@")
    local i=0
    while read -r id; do sed_script+="s/$id/${positions[$i]}/g;"; i=$((i + 1)); done <<<"$oracle_ids"
    sed "$sed_script" "$WORK/p/expected/$FIXTURE_351.jsonl" >"$WORK/p/actual/$FIXTURE_351.jsonl"
}
masked_driver() {
    python3 tests/kits/compare.py --kit provider-selftest --fixtures "$WORK/p/fixtures" --expected "$WORK/p/expected" \
        --actual "$WORK/p/actual" --comparator "$CONFORMANCE_COMPARE" --masks tests/providers/masks.json
}
with_ids get_weather_fc-resp-7_1 get_weather_fc-resp-7_3 get_weather_fc-resp-7_4
expect "351 passes with libagent's generated ids masked" pass "provider-selftest: 1/1 fixtures compared, 1 passed" -- masked_driver
expect "351 fails unmasked" fail "1 of 1 traces differ from the expected ones (exit 1): $FIXTURE_351." -- \
    python3 tests/kits/compare.py --kit provider-selftest --fixtures "$WORK/p/fixtures" --expected "$WORK/p/expected" \
    --actual "$WORK/p/actual" --comparator "$CONFORMANCE_COMPARE"
with_ids get_weather_fc-resp-7_1 "" get_weather_fc-resp-7_4
expect "351 fails on a missing id" fail "traces differ from the expected ones" -- masked_driver
with_ids get_weather_fc-resp-7_1 get_weather_fc-resp-7_x get_weather_fc-resp-7_4
expect "351 fails on a malformed id" fail "traces differ from the expected ones" -- masked_driver
with_ids get_weather_fc-resp-7_1 get_weather_fc-resp-7_1 get_weather_fc-resp-7_4
expect "351 fails on a repeated id" fail "traces differ from the expected ones" -- masked_driver

# The runners on an empty fixtures directory.
mkdir -p "$WORK/empty"
expect "conformance runner fails on an empty directory" fail "no scenarios (*.json) in $WORK/empty" -- \
    python3 tests/conformance/runner.py --out "$WORK/out-conformance" "$WORK/empty"
expect "coding runner fails on an empty directory" fail "no fixtures (*.json) in $WORK/empty" -- \
    python3 tests/coding/runner.py --lib /nonexistent/libagent.so --out "$WORK/out-coding" "$WORK/empty"
expect "provider runner fails on an empty directory" fail "no fixtures (*.json) in $WORK/empty" -- \
    "$PROVIDER_RUNNER" "$WORK/empty" "$WORK/out-providers"
expect "sessions runner fails on an empty directory" fail "no fixtures of a known op (*.json) in $WORK/empty" -- \
    "$SESSIONS_RUNNER" "$WORK/empty" "$WORK/out-sessions"
echo '{"name": "030-b", "op": "no-such-op"}' >"$WORK/empty/030-b.json"
expect "sessions runner fails on fixtures of unknown ops only" fail "no fixtures of a known op (*.json)" -- \
    "$SESSIONS_RUNNER" "$WORK/empty" "$WORK/out-sessions"
rm "$WORK/empty/030-b.json"

# fuzz/replay.sh against fake targets: a script per target that "executes" the files it is given
# (as a libFuzzer binary reports them), and a fuzz directory of two [[bin]]s.
fresh_fuzz() {
    rm -rf "$WORK/fuzz" && mkdir -p "$WORK/fuzz/bin" "$WORK/fuzz/dir/corpus/alpha" "$WORK/fuzz/dir/corpus/beta" \
        "$WORK/fuzz/dir/regressions/alpha"
    printf '[package]\nname = "fake"\n\n[[bin]]\nname = "alpha"\npath = "a.rs"\n\n[[bin]]\nname = "beta"\npath = "b.rs"\n' \
        >"$WORK/fuzz/dir/Cargo.toml"
    for target in alpha beta; do
        printf '#!/bin/sh\nfor f in "$@"; do echo "Executed $f in 0 ms"; done\n' >"$WORK/fuzz/bin/$target"
        chmod +x "$WORK/fuzz/bin/$target"
    done
    echo 1 >"$WORK/fuzz/dir/corpus/alpha/x" && echo 2 >"$WORK/fuzz/dir/corpus/alpha/y"
    echo 3 >"$WORK/fuzz/dir/regressions/alpha/z" && echo 4 >"$WORK/fuzz/dir/corpus/beta/w"
}
replay() { FUZZ_REPLAY_LOGS="$WORK/fuzz/logs" bash fuzz/replay.sh "$WORK/fuzz/bin" "$WORK/fuzz/dir"; }
fresh_fuzz
expect "fuzz replay counts its inputs" pass "fuzz-replay: 2 targets, 4 inputs replayed" -- replay
rm "$WORK"/fuzz/dir/corpus/beta/*
expect "fuzz replay fails on an empty input directory" fail "corpus/beta is empty" -- replay
rmdir "$WORK/fuzz/dir/corpus/beta"
expect "fuzz replay fails on a target without inputs" fail "fuzz target beta has no committed input" -- replay
fresh_fuzz && mkdir "$WORK/fuzz/dir/corpus/gamma" && echo 5 >"$WORK/fuzz/dir/corpus/gamma/v"
expect "fuzz replay fails on inputs of no target" fail "corpus/gamma names no fuzz target" -- replay
fresh_fuzz && printf '#!/bin/sh\necho "Executed $1 in 0 ms"\n' >"$WORK/fuzz/bin/alpha"
expect "fuzz replay fails when a target runs fewer inputs than given" fail "alpha reported 1 executed inputs of 2" -- replay
fresh_fuzz && printf '#!/bin/sh\nexit 3\n' >"$WORK/fuzz/bin/beta"
expect "fuzz replay fails when a target fails" fail "beta failed on an input" -- replay

echo "guard-selftest: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ]

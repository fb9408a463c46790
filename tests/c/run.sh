#!/usr/bin/env bash
# Builds every tests/c/test_*.c against include/libagent/agent.h and target/debug/libagent.so, runs each,
# then runs each again under valgrind. Prints "c-tests: N passed, M failed"; exits non-zero on
# any failure. Run from the repository root (make c-test does, after cargo build).
# C_TESTS=abi,run runs only tests/c/test_abi.c and test_run.c (a name that matches no file is an
# error); VALGRIND=0 skips the valgrind pass (make check).
set -u
cd "$(dirname "$0")/../.."
LIBDIR="$PWD/target/debug"
OUT="build/c-tests"
CC="${CC:-cc}"
CFLAGS="-Wall -Wextra -Werror -std=c11 -g -Iinclude"
mkdir -p "$OUT"
if [ ! -f "$LIBDIR/libagent.so" ]; then
    echo "c-tests: $LIBDIR/libagent.so is missing (run cargo build)"
    exit 1
fi

passed=0
failed=0
failures=()
record() { # name status
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok    $1"
    else failed=$((failed + 1)); failures+=("$1"); echo "FAIL  $1 (exit $2)"; fi
}

# Distinct handle types: passing a tool call where a stream is expected must not compile; the
# control, with a stream, must.
if $CC $CFLAGS -fsyntax-only tests/c/compile/stream_as_stream.c; then record "compile: a stream is a stream" 0
else record "compile: a stream is a stream" 1; fi
if $CC $CFLAGS -fsyntax-only tests/c/compile/tool_call_as_stream.c 2>"$OUT/tool_call_as_stream.log"; then
    record "compile: a tool call is not a stream (it compiled)" 1
elif grep -q "incompatible type" "$OUT/tool_call_as_stream.log"; then
    record "compile: a tool call is not a stream" 0
else
    cat "$OUT/tool_call_as_stream.log"; record "compile: a tool call is not a stream (another error)" 1
fi

sources=()
if [ -n "${C_TESTS:-}" ]; then
    IFS=, read -r -a wanted <<<"$C_TESTS"
    for name in "${wanted[@]}"; do
        name="${name#test_}"; name="${name%.c}"
        [ -f "tests/c/test_$name.c" ] || { echo "c-tests: C_TESTS names '$name', but tests/c/test_$name.c does not exist"; exit 1; }
        sources+=("tests/c/test_$name.c")
    done
else
    sources=(tests/c/test_*.c)
fi

tests=()
for src in "${sources[@]}"; do
    name="$(basename "$src" .c)"
    if $CC $CFLAGS "$src" -L"$LIBDIR" -lagent -Wl,-rpath,"$LIBDIR" -lpthread -o "$OUT/$name"; then
        tests+=("$name")
    else
        record "$name (compile)" 1
    fi
done

for name in "${tests[@]}"; do
    timeout 120 "$OUT/$name" >"$OUT/$name.log" 2>&1
    status=$?
    [ $status -ne 0 ] && cat "$OUT/$name.log"
    record "$name" $status
done

if [ "${VALGRIND:-1}" = 0 ]; then
    echo "VALGRIND=0: skipping the valgrind pass"
elif command -v valgrind >/dev/null; then
    # Two at a time (C_TEST_JOBS): valgrind runs a program's threads on one core, so a second
    # program uses the other one; the tests' waits hold under that load (WAIT_MS is scaled).
    valgrind_one() { # NAME: writes its log and its exit status beside the program
        LIBAGENT_TEST_SLOW=1 timeout 300 valgrind -q --error-exitcode=1 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
            --suppressions=tests/c/valgrind.supp \
            "$OUT/$1" >"$OUT/$1.valgrind.log" 2>&1
        echo $? >"$OUT/$1.valgrind.status"
    }
    running=0
    for name in "${tests[@]}"; do
        rm -f "$OUT/$name.valgrind.status"
        valgrind_one "$name" &
        running=$((running + 1))
        if [ "$running" -ge "${C_TEST_JOBS:-2}" ]; then wait -n; running=$((running - 1)); fi
    done
    wait
    for name in "${tests[@]}"; do
        status="$(cat "$OUT/$name.valgrind.status" 2>/dev/null || echo 1)"
        [ "$status" -ne 0 ] && cat "$OUT/$name.valgrind.log"
        record "$name (valgrind)" "$status"
    done
else
    echo "valgrind not found: skipping the valgrind pass"
    failed=$((failed + 1)); failures+=("valgrind missing")
fi

for f in "${failures[@]+"${failures[@]}"}"; do echo "failed: $f"; done
echo "c-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

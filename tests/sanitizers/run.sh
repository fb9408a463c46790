#!/usr/bin/env bash
# make check-memory: the C tests and the conformance runner against libagent built with
# AddressSanitizer, and the multithreaded C tests against libagent built with ThreadSanitizer.
# Prints "check-memory: N passed, M failed"; exits non-zero on any failure.
#
# Setup (what works here, and why):
# - Rust: nightly, `-Zsanitizer=...` with an explicit `--target x86_64-unknown-linux-gnu` (so the
#   flag skips build scripts and proc macros) and a separate target dir per sanitizer
#   (target/asan, target/tsan), debug profile (fast to build). ASan works with the prebuilt std;
#   TSan rebuilds std with `-Zbuild-std` (rust-src component), otherwise std's atomics and locks
#   are invisible to TSan and every channel hand-off is reported as a race.
# - One sanitizer runtime per process. The Rust cdylib carries none (its __asan_*/__tsan_*
#   references stay undefined and bind to the executable's runtime).
#   ASan: the C tests are built and linked with gcc `-fsanitize=address,undefined`, so gcc's
#   libasan serves the instrumented Rust code too (same runtime ABI); Python gets that libasan
#   via LD_PRELOAD (the interpreter is not instrumented; leak detection is off there, CPython
#   keeps its allocations at exit).
#   TSan: gcc 12's libtsan lacks entry points current LLVM emits (__tsan_memcpy, ...), so the C
#   tests are compiled with gcc `-fsanitize=thread` but linked (no -fsanitize at link time)
#   against rustc's own TSan runtime (librustc-nightly_rt.tsan.a from the nightly sysroot,
#   whole-archive, exported with -rdynamic). A deliberate C data race is reported with it.
set -u
cd "$(dirname "$0")/../.."
TARGET=x86_64-unknown-linux-gnu
SHARED="${SHARED:-$(cd .. && pwd)/shared}"
OUT=build/sanitizers
mkdir -p "$OUT"
ONLY="${1:-all}"   # all | asan | tsan

passed=0
failed=0
failures=()
record() { # name status
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok    $1"
    else failed=$((failed + 1)); failures+=("$1"); echo "FAIL  $1 (exit $2)"; fi
}

if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
    rustup component add rust-src --toolchain nightly >/dev/null
fi

CFLAGS="-Wall -Wextra -Werror -std=c11 -g -O1 -fno-omit-frame-pointer -Iinclude"

if [ "$ONLY" = all ] || [ "$ONLY" = asan ]; then
    # Without the HTTP providers (safe Rust over reqwest, tested by the ordinary suites): the
    # sanitizers watch the C boundary, and the providers' dependency tree would double the build.
    RUSTFLAGS="-Zsanitizer=address" cargo +nightly build --quiet --no-default-features --target $TARGET --target-dir target/asan
    LIB="$PWD/target/asan/$TARGET/debug"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    for src in tests/c/test_*.c; do
        name="$(basename "$src" .c)"
        if gcc $CFLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined "$src" \
            -L"$LIB" -lagent -Wl,-rpath,"$LIB" -lpthread -o "$OUT/asan-$name"; then
            LIBAGENT_TEST_NO_PROVIDERS=1 timeout 300 "$OUT/asan-$name" >"$OUT/asan-$name.log" 2>&1
            status=$?
            [ $status -ne 0 ] && tail -40 "$OUT/asan-$name.log"
            record "asan $name" $status
        else
            record "asan $name (compile)" 1
        fi
    done
    # The conformance runner loads the ASan build through ctypes.
    for set in "public:$SHARED/conformance/scenarios:$SHARED/conformance/expected" \
               "extra:tests/conformance/extra/scenarios:tests/conformance/extra/expected"; do
        IFS=: read -r label scenarios expected <<<"$set"
        rm -rf "$OUT/conformance-$label" && mkdir -p "$OUT/conformance-$label"
        LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
            timeout 600 python3 tests/conformance/runner.py --lib "$LIB/libagent.so" \
            --out "$OUT/conformance-$label" "$scenarios" >"$OUT/conformance-$label.log" 2>&1 \
            && python3 "$SHARED/conformance/compare.py" "$expected" "$OUT/conformance-$label" \
               >>"$OUT/conformance-$label.log" 2>&1
        status=$?
        [ $status -ne 0 ] && tail -40 "$OUT/conformance-$label.log"
        record "asan conformance ($label)" $status
    done
fi

if [ "$ONLY" = all ] || [ "$ONLY" = tsan ]; then
    RUSTFLAGS="-Zsanitizer=thread" cargo +nightly build --quiet --no-default-features -Zbuild-std --target $TARGET --target-dir target/tsan
    LIB="$PWD/target/tsan/$TARGET/debug"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0"
    RT="$(rustc +nightly --print sysroot)/lib/rustlib/$TARGET/lib/librustc-nightly_rt.tsan.a"
    # The multithreaded tests first (test_multithread, test_reentrancy, test_deferred,
    # test_free_inside), then the rest: each takes about a second.
    for name in test_multithread test_reentrancy test_deferred test_free_inside test_hardening test_done_ordering test_finalizer_reentry \
                test_stream test_events test_tools test_run test_basics test_misuse; do
        [ -f "tests/c/$name.c" ] || continue
        if gcc $CFLAGS -fsanitize=thread -c "tests/c/$name.c" -o "$OUT/tsan-$name.o" \
            && gcc "$OUT/tsan-$name.o" -rdynamic -Wl,--whole-archive "$RT" -Wl,--no-whole-archive \
                -L"$LIB" -lagent -Wl,-rpath,"$LIB" -lpthread -ldl -lm -lrt -o "$OUT/tsan-$name"; then
            timeout 300 "$OUT/tsan-$name" >"$OUT/tsan-$name.log" 2>&1
            status=$?
            [ $status -ne 0 ] && tail -60 "$OUT/tsan-$name.log"
            record "tsan $name" $status
        else
            record "tsan $name (compile)" 1
        fi
    done
fi

for f in "${failures[@]+"${failures[@]}"}"; do echo "failed: $f"; done
echo "check-memory: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

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
#   whole-archive, exported with -rdynamic).
# - Positive controls (tests/sanitizers/canaries/): a deliberate data race and a deliberate heap
#   overflow, each once in C alone and once across the C boundary (libagent reading what C races
#   on or overruns). Each must be reported, or the check fails: a setup that stopped detecting
#   would otherwise pass every test.
# - Every test in tests/c/ runs under both sanitizers (the list is the folder). A failed nightly
#   build or component install fails the check at once, so stale builds in target/asan and
#   target/tsan are never tested in place of fresh ones.
set -u -o pipefail
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

die() { echo "check-memory: $*" >&2; echo "check-memory: FAILED"; exit 1; }

# (The list is read whole: `grep -q` closing the pipe early would fail the pipeline.)
if ! grep -qx 'rust-src' <<<"$(rustup component list --toolchain nightly --installed 2>/dev/null)"; then
    rustup component add rust-src --toolchain nightly >/dev/null \
        || die "cannot install the nightly rust-src component (needed by the TSan build)"
fi

# canary NAME BINARY EXPECTED...: runs a program with a deliberate bug; it must fail and its log
# must contain every EXPECTED text (the sanitizer's report), or the check fails.
canary() {
    local name="$1" binary="$2"; shift 2
    local log="$binary.log" ok=0 status=0
    timeout 120 "$binary" >"$log" 2>&1 || status=$?
    [ "$status" -ne 0 ] || ok=1
    for text in "$@"; do grep -qF -- "$text" "$log" || ok=1; done
    if [ $ok -ne 0 ]; then
        echo "the sanitizer did not report the deliberate bug of $name (exit $status); expected: $*"
        tail -20 "$log"
    fi
    record "canary $name is reported" $ok
}

CFLAGS="-Wall -Wextra -Werror -std=c11 -g -O1 -fno-omit-frame-pointer -Iinclude"

if [ "$ONLY" = all ] || [ "$ONLY" = asan ]; then
    # Without the HTTP providers (safe Rust over reqwest, tested by the ordinary suites): the
    # sanitizers watch the C boundary, and the providers' dependency tree would double the build.
    # The coding pack is in: its C ABI (the consent hook's deferred answers) is checked too.
    RUSTFLAGS="-Zsanitizer=address" cargo +nightly build --quiet --no-default-features --features coding --target $TARGET --target-dir target/asan \
        || die "the AddressSanitizer build of libagent failed"
    LIB="$PWD/target/asan/$TARGET/debug"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    for name in overflow_in_c overflow_in_library; do
        gcc $CFLAGS -fsanitize=address "tests/sanitizers/canaries/$name.c" \
            -L"$LIB" -lagent -Wl,-rpath,"$LIB" -lpthread -o "$OUT/asan-$name" \
            || die "the ASan canary $name does not compile"
    done
    canary "asan overflow_in_c" "$OUT/asan-overflow_in_c" "AddressSanitizer: heap-buffer-overflow"
    canary "asan overflow_in_library" "$OUT/asan-overflow_in_library" \
        "AddressSanitizer: heap-buffer-overflow" "agent_options_new"
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
            && python3 tests/kits/compare.py --kit "asan conformance ($label)" --fixtures "$scenarios" \
               --expected "$expected" --actual "$OUT/conformance-$label" \
               --comparator "$SHARED/conformance/compare.py" >>"$OUT/conformance-$label.log" 2>&1
        status=$?
        [ $status -ne 0 ] && tail -40 "$OUT/conformance-$label.log"
        record "asan conformance ($label)" $status
    done
fi

if [ "$ONLY" = all ] || [ "$ONLY" = tsan ]; then
    RUSTFLAGS="-Zsanitizer=thread" cargo +nightly build --quiet --no-default-features --features coding -Zbuild-std --target $TARGET --target-dir target/tsan \
        || die "the ThreadSanitizer build of libagent failed"
    LIB="$PWD/target/tsan/$TARGET/debug"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0"
    RT="$(rustc +nightly --print sysroot)/lib/rustlib/$TARGET/lib/librustc-nightly_rt.tsan.a"
    [ -f "$RT" ] || die "rustc's TSan runtime is missing: $RT"
    tsan_build() { # SOURCE OUTPUT
        gcc $CFLAGS -fsanitize=thread -c "$1" -o "$2.o" \
            && gcc "$2.o" -rdynamic -Wl,--whole-archive "$RT" -Wl,--no-whole-archive \
                -L"$LIB" -lagent -Wl,-rpath,"$LIB" -lpthread -ldl -lm -lrt -o "$2"
    }
    for name in race_in_c race_with_library; do
        tsan_build "tests/sanitizers/canaries/$name.c" "$OUT/tsan-$name" \
            || die "the TSan canary $name does not compile"
    done
    canary "tsan race_in_c" "$OUT/tsan-race_in_c" "ThreadSanitizer: data race"
    canary "tsan race_with_library" "$OUT/tsan-race_with_library" "ThreadSanitizer: data race" "libagent.so"
    for src in tests/c/test_*.c; do
        name="$(basename "$src" .c)"
        if tsan_build "$src" "$OUT/tsan-$name"; then
            LIBAGENT_TEST_NO_PROVIDERS=1 timeout 300 "$OUT/tsan-$name" >"$OUT/tsan-$name.log" 2>&1
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

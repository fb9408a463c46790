#!/usr/bin/env bash
# make check-memory: the C tests, the conformance runner and the coding conformance fixtures against
# libagent built with AddressSanitizer, and the C tests against libagent built with
# ThreadSanitizer; both builds with the default features (the HTTP providers and the coding pack).
# Prints "check-memory: N passed, M failed"; exits non-zero on any failure.
# Usage: tests/sanitizers/run.sh [all|asan|tsan]   (make check-memory SAN=asan|tsan)
#
# Setup (what works here, and why):
# - Rust: the pinned nightly (NIGHTLY, from the Makefile; tests/nightly.sh installs it with
#   rust-src when missing), `-Zsanitizer=...` with an explicit `--target x86_64-unknown-linux-gnu`
#   (so the flag skips build scripts and proc macros) and a separate target dir per sanitizer
#   (target/asan, target/tsan), debug profile with line tables only (fast to build; reports keep
#   file:line), the cdylib alone (`cargo rustc --lib --crate-type cdylib`: no staticlib/rlib to
#   link). ASan works with the prebuilt std; TSan rebuilds std with `-Zbuild-std` (rust-src),
#   otherwise std's atomics and locks are invisible to TSan and every channel hand-off is reported
#   as a race. The ASan build keeps frame pointers: ASan records an allocation's stack with the
#   fast (frame-pointer) unwinder, and without them a leak or use-after-free report stops at
#   malloc and never names the libagent function that allocated.
# - One sanitizer runtime per process. The Rust cdylib carries none (its __asan_*/__tsan_*
#   references stay undefined and bind to the executable's runtime).
#   ASan: the C tests are built and linked with gcc `-fsanitize=address,undefined`, so gcc's
#   libasan serves the instrumented Rust code too (same runtime ABI); Python (the conformance and
#   coding runners) gets that libasan via LD_PRELOAD (the interpreter is not instrumented; leak
#   detection is off there, CPython keeps its allocations at exit).
#   TSan: gcc 12's libtsan lacks entry points current LLVM emits (__tsan_memcpy, ...), so the C
#   tests are compiled with gcc `-fsanitize=thread` but linked (no -fsanitize at link time)
#   against rustc's own TSan runtime (librustc-nightly_rt.tsan.a from the nightly sysroot,
#   whole-archive, exported with -rdynamic).
# - Positive controls (tests/sanitizers/canaries/, run by expect_report.sh): a deliberate heap
#   overflow and a deliberate data race, each once in C alone and once across the C boundary
#   (libagent reading what C races on or overruns); undefined behaviour once in C and once on data
#   libagent returned (UBSan, -fno-sanitize-recover); an AgentError never freed (LeakSanitizer,
#   naming agent_options_new). Each must be reported, or the check fails: a setup that stopped
#   detecting would otherwise pass every test. (The C++ ASan build and Go's -race have their own
#   canaries in make cpp-test and make go-test.)
# - Every test in tests/c/ runs under both sanitizers (the list is the folder): test_providers
#   streams from a loopback server (HTTP client, SSE parser), test_coding runs every tool of the
#   pack and a bash command aborted and one timed out. A failed nightly install or build fails the
#   check at once, naming the toolchain, so stale builds in target/asan and target/tsan are never
#   tested in place of fresh ones.
set -u -o pipefail
cd "$(dirname "$0")/../.."
TARGET=x86_64-unknown-linux-gnu
SHARED="${SHARED:-$(cd .. && pwd)/shared}"
OUT=build/sanitizers
mkdir -p "$OUT"
ONLY="${1:-all}"   # all | asan | tsan | build (both libraries built, nothing run: make test's prebuild)
case "$ONLY" in all|asan|tsan|build) ;; *) echo "check-memory: unknown sanitizer '$ONLY': use asan, tsan or all" >&2; exit 2 ;; esac

passed=0
failed=0
failures=()
record() { # name status
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok    $1"
    else failed=$((failed + 1)); failures+=("$1"); echo "FAIL  $1 (exit $2)"; fi
}

die() { echo "check-memory: $*" >&2; echo "check-memory: FAILED"; exit 1; }

source tests/nightly.sh
ensure_nightly || die "the pinned nightly $NIGHTLY is not available"

# sanitized_build SANITIZER TARGET_DIR [CARGO_ARG...]: the library as a cdylib, instrumented.
sanitized_build() {
    local sanitizer="$1" dir="$2"; shift 2
    RUSTFLAGS="-Zsanitizer=$sanitizer $SANITIZER_RUSTFLAGS" CARGO_PROFILE_DEV_DEBUG=line-tables-only \
        cargo "+$NIGHTLY" rustc --quiet --lib --crate-type cdylib --target $TARGET --target-dir "$dir" "$@"
}

# canary NAME BINARY EXPECTED...: runs a program with a deliberate bug; it must fail and its log
# must contain every EXPECTED text (the sanitizer's report), or the check fails.
canary() {
    local name="$1" binary="$2"; shift 2
    CANARY_LOG="$binary.log" bash tests/sanitizers/expect_report.sh "$name" "$@" -- "$binary"
    record "canary $name is reported" $?
}

CFLAGS="-Wall -Wextra -Werror -std=c11 -g -O1 -fno-omit-frame-pointer -Iinclude"

# The TSan build (std rebuilt too: the longest step) runs in the background while the ASan
# programs run, which mostly wait on one core; its output goes to a log shown if it fails.
tsan_build_started=0
start_tsan_build() {
    SANITIZER_RUSTFLAGS="" sanitized_build thread target/tsan -Zbuild-std >"$OUT/tsan-build.log" 2>&1 &
    tsan_build_pid=$!
    tsan_build_started=1
    # A check that stops early (die) does not leave the build running.
    trap 'pkill -TERM -P "$tsan_build_pid" 2>/dev/null; kill "$tsan_build_pid" 2>/dev/null' EXIT
}

# The same commands as the check's own builds below, so these leave nothing for them to do.
if [ "$ONLY" = build ]; then
    SANITIZER_RUSTFLAGS="-Cforce-frame-pointers=yes" sanitized_build address target/asan \
        || die "the AddressSanitizer build of libagent with $NIGHTLY failed"
    SANITIZER_RUSTFLAGS="" sanitized_build thread target/tsan -Zbuild-std \
        || die "the ThreadSanitizer build of libagent with $NIGHTLY failed"
    echo "check-memory: both sanitizer builds are current"
    exit 0
fi

if [ "$ONLY" = all ] || [ "$ONLY" = asan ]; then
    SANITIZER_RUSTFLAGS="-Cforce-frame-pointers=yes" sanitized_build address target/asan \
        || die "the AddressSanitizer build of libagent with $NIGHTLY failed"
    [ "$ONLY" = all ] && start_tsan_build
    LIB="$PWD/target/asan/$TARGET/debug"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    # The UBSan and LSan canaries are built with the C tests' own flags; the overflows with ASan
    # alone (UBSan's object-size check would report the C one first, and an ASan report is wanted).
    for name in overflow_in_c overflow_in_library ub_in_c ub_on_library_data leak_in_library; do
        flags=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
        [[ $name == overflow_* ]] && flags=(-fsanitize=address)
        gcc $CFLAGS "${flags[@]}" "tests/sanitizers/canaries/$name.c" \
            -L"$LIB" -lagent -Wl,-rpath,"$LIB" -lpthread -o "$OUT/asan-$name" \
            || die "the ASan canary $name does not compile"
    done
    canary "asan overflow_in_c" "$OUT/asan-overflow_in_c" "AddressSanitizer: heap-buffer-overflow"
    canary "asan overflow_in_library" "$OUT/asan-overflow_in_library" \
        "AddressSanitizer: heap-buffer-overflow" "agent_options_new"
    canary "ubsan ub_in_c" "$OUT/asan-ub_in_c" "runtime error: signed integer overflow"
    canary "ubsan ub_on_library_data" "$OUT/asan-ub_on_library_data" "runtime error: load of misaligned address"
    canary "lsan leak_in_library" "$OUT/asan-leak_in_library" \
        "ERROR: LeakSanitizer: detected memory leaks" "agent_options_new"
    for src in tests/c/test_*.c; do
        name="$(basename "$src" .c)"
        if gcc $CFLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined "$src" \
            -L"$LIB" -lagent -Wl,-rpath,"$LIB" -lpthread -o "$OUT/asan-$name"; then
            timeout 300 "$OUT/asan-$name" >"$OUT/asan-$name.log" 2>&1
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
    # The coding conformance fixtures (the kit's and the project's own) through the same library:
    # every tool, bash included, compared as make coding-conformance does (the runner's own
    # failure counts too).
    for set in "public:$SHARED/coding/fixtures:$SHARED/coding/expected" \
               "extra:tests/coding/fixtures:tests/coding/expected"; do
        IFS=: read -r label fixtures expected <<<"$set"
        rm -rf "$OUT/coding-$label" && mkdir -p "$OUT/coding-$label"
        status=0
        LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
            timeout 600 python3 tests/coding/runner.py --lib "$LIB/libagent.so" \
            --out "$OUT/coding-$label" "$fixtures" >"$OUT/coding-$label.log" 2>&1 || status=$?
        python3 tests/kits/compare.py --kit "asan coding conformance ($label)" --fixtures "$fixtures" \
            --expected "$expected" --actual "$OUT/coding-$label" --comparator "$SHARED/coding/compare.py" \
            --trace-suffix .json >>"$OUT/coding-$label.log" 2>&1 || status=$?
        [ $status -ne 0 ] && tail -40 "$OUT/coding-$label.log"
        record "asan coding conformance ($label)" $status
    done
fi

if [ "$ONLY" = all ] || [ "$ONLY" = tsan ]; then
    [ "$tsan_build_started" = 1 ] || start_tsan_build
    wait "$tsan_build_pid" || { cat "$OUT/tsan-build.log"; die "the ThreadSanitizer build of libagent with $NIGHTLY failed"; }
    trap - EXIT
    LIB="$PWD/target/tsan/$TARGET/debug"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0"
    RT="$(rustc "+$NIGHTLY" --print sysroot)/lib/rustlib/$TARGET/lib/librustc-nightly_rt.tsan.a"
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

#!/usr/bin/env bash
# The C tests (tests/c/test_*.c) against the Windows build of libagent (make windows: agent.dll
# and its import library), cross-compiled with mingw-w64 and run under wine. test_coding and
# test_coding_* are left out: the Windows build has no coding pack (its bash tool and file access
# are POSIX-only), and so is test_session (its temporary directories, sparse files and paths are
# POSIX calls; the session store itself builds for Windows).
# Prints "windows-tests: N passed, M failed"; exits non-zero on any failure. Run from anywhere
# (make windows-test does, after make windows).
set -u
cd "$(dirname "$0")/../.."
LIBDIR="target/windows/x86_64-pc-windows-gnu/${WINDOWS_PROFILE:-release}"
OUT="build/windows-tests"
CC="x86_64-w64-mingw32-gcc-posix" # the posix thread model: winpthreads for the tests' pthreads
CFLAGS="-Wall -Wextra -Werror -std=c11 -O1 -g -Iinclude"
# A scratch wine prefix of our own; the first run creates it (and prints harmless errors).
export WINEPREFIX="$PWD/build/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
mkdir -p "$OUT"
[ -f "$LIBDIR/agent.dll" ] || { echo "windows-tests: $LIBDIR/agent.dll is missing (run make windows)"; exit 1; }

# Beside the programs: the library, mingw's runtime DLLs, and the ProcessPrng stand-in wine 8.0
# lacks (tests/windows/bcryptprimitives.c; ../shared/platforms/WINDOWS.md).
cp "$LIBDIR/agent.dll" "$OUT/"
for dll in libgcc_s_seh-1.dll libwinpthread-1.dll; do
    found="$($CC -print-file-name=$dll)"
    [ -f "$found" ] || found="$(find /usr/lib/gcc/x86_64-w64-mingw32 /usr/x86_64-w64-mingw32 -name $dll 2>/dev/null | head -1)"
    cp "$found" "$OUT/"
done
$CC -shared -O2 -o "$OUT/bcryptprimitives.dll" tests/windows/bcryptprimitives.c -ladvapi32 || exit 1
timeout 300 wine wineboot --init >/dev/null 2>&1 || true

passed=0
failed=0
failures=()
record() { # name status
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok    $1"
    else failed=$((failed + 1)); failures+=("$1"); echo "FAIL  $1 (exit $2)"; fi
}

for src in tests/c/test_*.c; do
    name="$(basename "$src" .c)"
    [[ "$name" == test_coding || "$name" == test_coding_* || "$name" == test_session ]] && continue
    if ! $CC $CFLAGS "$src" "$LIBDIR/libagent.dll.a" -lpthread -o "$OUT/$name.exe" 2>"$OUT/$name.compile.log"; then
        cat "$OUT/$name.compile.log"; record "$name (compile)" 1; continue
    fi
    (cd "$OUT" && timeout 300 wine "$name.exe" >"$name.log" 2>&1)
    status=$?
    [ $status -ne 0 ] && tail -20 "$OUT/$name.log"
    record "$name" $status
done

for f in "${failures[@]+"${failures[@]}"}"; do echo "failed: $f"; done
echo "windows-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

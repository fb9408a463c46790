#!/usr/bin/env bash
# Packaging test: `make install` (debug build, into a temporary DESTDIR) then an outside CMake
# project finds libagent with find_package(libagent CONFIG) and links libagent::agent,
# libagent::agent_static and libagent::cpp. Checks the versioned soname and its symlinks, the
# version macros against agent_version() at run time, and the pkg-config file.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/libagent-pkg.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
PREFIX=/opt/libagent
STAGE="$WORK/stage"
INSTALLED="$STAGE$PREFIX"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
MAJOR="${VERSION%%.*}"
fail() { echo "cmake-consumer: FAILED: $*"; exit 1; }

make --no-print-directory install INSTALL_PROFILE=debug DESTDIR="$STAGE" PREFIX="$PREFIX" >"$WORK/install.log" 2>&1 ||
    { cat "$WORK/install.log"; fail "make install"; }

# The library file, its soname link and the development link.
LIB="$INSTALLED/lib"
[ -f "$LIB/libagent.so.$VERSION" ] && [ ! -L "$LIB/libagent.so.$VERSION" ] || fail "libagent.so.$VERSION is not a file"
[ "$(readlink "$LIB/libagent.so.$MAJOR")" = "libagent.so.$VERSION" ] || fail "libagent.so.$MAJOR link"
[ "$(readlink "$LIB/libagent.so")" = "libagent.so.$MAJOR" ] || fail "libagent.so link"
readelf -d "$LIB/libagent.so.$VERSION" | grep -q "(SONAME).*\[libagent.so.$MAJOR\]" || fail "SONAME is not libagent.so.$MAJOR"
# Stripped libraries; the shared library's debug info in lib/.debug/, named by its debuglink.
# (readelf's output is captured first, as ldd's below.)
SECTIONS="$(readelf -S -W "$LIB/libagent.so.$VERSION")"
DEBUG_INFO=' \.debug_(info|line|str|abbrev|ranges|loc)'
if grep -qE "$DEBUG_INFO" <<<"$SECTIONS"; then fail "libagent.so.$VERSION keeps debug sections"; fi
grep -q '\.gnu_debuglink' <<<"$SECTIONS" || fail "libagent.so.$VERSION has no .gnu_debuglink"
grep -q "\] *libagent.so.$VERSION.debug\$" <<<"$(readelf -p .gnu_debuglink "$LIB/libagent.so.$VERSION")" ||
    fail "the debuglink does not name libagent.so.$VERSION.debug"
grep -q '\.debug_line' <<<"$(readelf -S -W "$LIB/.debug/libagent.so.$VERSION.debug")" || fail "lib/.debug/libagent.so.$VERSION.debug has no line tables"
if grep -qE "$DEBUG_INFO" <<<"$(readelf -S -W "$LIB/libagent.a")"; then fail "libagent.a keeps debug sections"; fi
for f in libagentConfig.cmake libagentConfigVersion.cmake libagentTargets.cmake; do
    [ -f "$LIB/cmake/libagent/$f" ] || fail "missing lib/cmake/libagent/$f"
done
[ -f "$INSTALLED/include/libagent/agent.h" ] && [ -f "$INSTALLED/include/libagent/agent.hpp" ] || fail "headers"
grep -q "^Version: $VERSION\$" "$LIB/pkgconfig/libagent.pc" || fail "libagent.pc version"
grep -q "^prefix=$PREFIX\$" "$LIB/pkgconfig/libagent.pc" || fail "libagent.pc prefix"

# The outside project (the package is relocatable: found under the staging directory).
cmake -S tests/cmake-consumer -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$INSTALLED" >"$WORK/cmake.log" 2>&1 ||
    { cat "$WORK/cmake.log"; fail "cmake configure"; }
cmake --build "$WORK/build" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "build"; }
readelf -d "$WORK/build/consumer" | grep -q "(NEEDED).*\[libagent.so.$MAJOR\]" || fail "consumer does not need libagent.so.$MAJOR"
if readelf -d "$WORK/build/consumer_static" | grep -q "libagent"; then fail "consumer_static links libagent dynamically"; fi
# The shared consumers run against the installed library (build RPATH from the imported target).
# (ldd's output is captured first: `grep -q` quitting early would SIGPIPE ldd under pipefail.)
RESOLVED="$(ldd "$WORK/build/consumer")"
grep -q "libagent.so.$MAJOR => $LIB/libagent.so.$MAJOR" <<<"$RESOLVED" || { echo "$RESOLVED"; fail "consumer resolves another libagent"; }
"$WORK/build/consumer" || fail "consumer"
"$WORK/build/consumer_static" || fail "consumer_static"
"$WORK/build/consumer_cpp" || fail "consumer_cpp"

# A version the package does not satisfy is refused.
mkdir -p "$WORK/too-new"
cat >"$WORK/too-new/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(too_new LANGUAGES C)
find_package(libagent $MAJOR.99 CONFIG REQUIRED)
CMAKE
if cmake -S "$WORK/too-new" -B "$WORK/too-new/build" -DCMAKE_PREFIX_PATH="$INSTALLED" >/dev/null 2>&1; then
    fail "find_package accepted version $MAJOR.99"
fi
echo "cmake-consumer: ok (libagent $VERSION: soname libagent.so.$MAJOR, find_package, shared/static/C++ consumers)"

#!/usr/bin/env bash
# Installing libagent and using it from outside the repository, as a user would:
#  1. `make install PREFIX=<temporary dir>` (the debug build: no second, release build);
#  2. a C program built with `pkg-config --cflags --libs libagent`;
#  3. a Go program in a module of its own (go.mod + `replace` of the binding's module to this
#     checkout), built with PKG_CONFIG_PATH=<prefix>/lib/pkgconfig;
# both then run with no LD_LIBRARY_PATH: they must find the installed libagent.so.1 through the
# run path libagent.pc gives them, and nothing of the checkout (no target/ path in the binary).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/libagent-install.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
PREFIX="$WORK/prefix"
fail() { echo "install-consumer: FAILED: $*"; exit 1; }

make --no-print-directory install INSTALL_PROFILE=debug PREFIX="$PREFIX" >"$WORK/install.log" 2>&1 ||
    { cat "$WORK/install.log"; fail "make install"; }
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
unset LD_LIBRARY_PATH

# libagent.pc names the library by its soname.
SONAME="$(readelf -d "$PREFIX/lib/libagent.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
[ -n "$SONAME" ] || fail "the installed libagent.so has no soname"
if grep -o 'libagent\.so\.[0-9][0-9.]*' "$PREFIX/lib/pkgconfig/libagent.pc" | grep -vqx "${SONAME//./\\.}"; then
    fail "libagent.pc names another library than $SONAME"
fi

# Nothing in the binaries may point into the checkout.
no_checkout() {
    local dynamic
    dynamic="$(readelf -d "$1")"
    grep -q "(RUNPATH\|RPATH).*$PREFIX/lib" <<<"$dynamic" || { echo "$dynamic"; fail "$1 has no run path to $PREFIX/lib"; }
    if grep -q "$ROOT/target" <<<"$dynamic"; then echo "$dynamic"; fail "$1 links the checkout's target/"; fi
}

# C through pkg-config.
mkdir -p "$WORK/c"
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -Wall -Wextra -Werror -std=c11 tests/install-consumer/app.c $(pkg-config --cflags --libs libagent) -o "$WORK/c/app"
no_checkout "$WORK/c/app"
"$WORK/c/app" | grep -q "^libagent " || fail "the C program did not run"

# Go from a module outside the repository.
APP="$WORK/go"
mkdir -p "$APP"
cp tests/install-consumer/app.go "$APP/main.go"
cat >"$APP/go.mod" <<GOMOD
module example.com/app

go 1.24

require github.com/libagent/libagent/bindings/go v0.0.0

replace github.com/libagent/libagent/bindings/go => $ROOT/bindings/go
GOMOD
# The binding's dependencies, checked against its own go.sum (the module cache has them).
cp bindings/go/go.sum "$APP/go.sum"
# Go's build cache does not key a cgo package on pkg-config's output, so the binding built for
# this checkout (build/pkgconfig) would be reused as is: flags of its own give this build its own
# cache entries. (-mod=mod: go.mod is completed with the binding's requirements.)
(cd "$APP" && CGO_CPPFLAGS="-DLIBAGENT_TEST_PREFIX=$(basename "$WORK")" GOFLAGS=-mod=mod \
    ${GO:-go} build -buildvcs=false -o app .) ||
    fail "go build outside the repository"
no_checkout "$APP/app"
OUT="$(cd "$WORK" && "$APP/app")" || fail "the Go program did not run"
grep -q "^Hi from an installed libagent!$" <<<"$OUT" || { echo "$OUT"; fail "the Go program's output"; }
echo "install-consumer: ok (make install PREFIX=<tmp>; C via pkg-config and an outside Go module run without LD_LIBRARY_PATH)"

#!/usr/bin/env bash
# The wheel `make wheel` built (build/wheel/*.whl), installed as a user would: into a fresh
# virtual environment outside the repository, then the quickstart run there with no path back to
# the checkout (no PYTHONPATH, no LIBAGENT_LIBRARY, a working directory of its own). Checks the
# manylinux tag, that the wheel bundles libagent.so, and that the installed package loads that
# copy from the venv's site-packages.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/libagent-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "wheel-test: FAILED: $*"; exit 1; }

shopt -s nullglob
WHEELS=(build/wheel/libagent-*.whl)
[ "${#WHEELS[@]}" -eq 1 ] || fail "expected one wheel in build/wheel, found ${#WHEELS[@]} (run make wheel)"
WHEEL="$ROOT/${WHEELS[0]}"
[[ "$(basename "$WHEEL")" == libagent-*-py3-none-manylinux*.whl ]] || fail "$(basename "$WHEEL") is not tagged manylinux"
LISTING="$(python3 -m zipfile -l "$WHEEL")"   # (captured first: grep -q quitting early would break the pipe)
grep -q "libagent/libagent.so" <<<"$LISTING" || fail "the wheel does not bundle libagent.so"

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check "$WHEEL" || fail "pip install of the wheel"
mkdir -p "$WORK/app"
cp examples/python/quickstart.py "$WORK/app/"
printf 'A project of its own.\n' >"$WORK/app/README.md"   # the quickstart's tools read it
cd "$WORK/app"
env -u LIBAGENT_LIBRARY -u PYTHONPATH -u LD_LIBRARY_PATH "$WORK/venv/bin/python" - <<PY || fail "the installed package"
import libagent, libagent._native as native
assert native.LIBRARY_PATH.startswith("$WORK/venv/"), native.LIBRARY_PATH
print("wheel-test: libagent", libagent.version(), "from", native.LIBRARY_PATH)
PY
OUT="$(env -u LIBAGENT_LIBRARY -u PYTHONPATH -u LD_LIBRARY_PATH "$WORK/venv/bin/python" quickstart.py)" ||
    { echo "$OUT"; fail "the quickstart"; }
grep -q "^Transcript: 6 messages" <<<"$OUT" || { echo "$OUT"; fail "the quickstart's output"; }
echo "wheel-test: ok ($(basename "$WHEEL") installed in a fresh venv; the quickstart ran outside the repository)"

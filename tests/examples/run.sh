#!/usr/bin/env bash
# Builds the chat examples of the C++, Go and Python bindings against target/debug/libagent.so
# and runs tests/examples/test_examples.py on them (a loopback mock endpoint; see there).
# Run from anywhere (make examples-test does, after cargo build).
set -eu
cd "$(dirname "$0")/../.."
ROOT="$PWD"
LIBDIR="$ROOT/target/debug"
OUT="$ROOT/build/examples"
mkdir -p "$OUT"
${CXX:-c++} -std=c++17 -Wall -Wextra -Werror -g -Iinclude -Ibindings/cpp/include examples/cpp/chat.cpp \
    -L"$LIBDIR" -lagent -Wl,-rpath,"$LIBDIR" -lpthread -o "$OUT/chat-cpp"
(cd bindings/go && ${GO:-go} build -buildvcs=false -o "$OUT/chat-go" ./examples/chat)
# The Python example runs from the sources, on the debug library, with pydantic from make py-test's
# venv when there is one.
PYTHON="${PYTHON:-python3}"
[ -x "$ROOT/build/py-venv/bin/python" ] && PYTHON="$ROOT/build/py-venv/bin/python"
export LIBAGENT_LIBRARY="$LIBDIR/libagent.so" PYTHONPATH="$ROOT/bindings/python/src"
cd tests/examples
"$PYTHON" test_examples.py "cpp=$OUT/chat-cpp" "go=$OUT/chat-go" "python=$PYTHON $ROOT/examples/python/chat.py"

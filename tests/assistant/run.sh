#!/usr/bin/env bash
# Builds examples/c/assistant.c against include/libagent/agent.h and target/debug/libagent.so, then runs
# tests/assistant/test_assistant.py against it: once as is, once under valgrind (when installed).
# Run from anywhere (make assistant-test does, after cargo build). Loopback only.
set -u
cd "$(dirname "$0")/../.."
LIBDIR="$PWD/target/debug"
mkdir -p build
if [ ! -f "$LIBDIR/libagent.so" ]; then
    echo "assistant-tests: $LIBDIR/libagent.so is missing (run cargo build)"
    exit 1
fi
${CC:-cc} -Wall -Wextra -Werror -std=c11 -g -Iinclude examples/c/assistant.c -L"$LIBDIR" -lagent \
    -Wl,-rpath,"$LIBDIR" -lpthread -o build/assistant || exit 1

status=0
python3 tests/assistant/test_assistant.py build/assistant "$@" || status=1
if command -v valgrind >/dev/null; then
    python3 tests/assistant/test_assistant.py build/assistant --valgrind tests/c/valgrind.supp "$@" || status=1
else
    echo "valgrind not found: skipping the valgrind pass"
    status=1
fi
exit $status

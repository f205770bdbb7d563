# ampdelta: the two commands a fresh Debian 12 machine needs are `make demo` and `make test`.
# Both do all set-up first (scripts/setup.sh is idempotent and quick when done).

JOBS ?= $(shell nproc)
ASAN_BUILD := build/asan
RELEASE_BUILD := build/release
DEMO_BUILD := build/demo
# Seconds each libFuzzer target runs in `make fuzz` (and so in `make test`).
FUZZ_SECONDS ?= 30
FUZZ_JOBS ?= 2
VENV_PY := .deps/venv/bin/python

# Sanitizer runtime options for the test build (house-style.md §4). Arrow from the wheel is
# not instrumented, hence detect_container_overflow=0 and the system allocator. Only the test
# targets use them: the demo and benchmarks run the release build with Arrow's allocator.
TEST_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_container_overflow=0 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/ci/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ARROW_DEFAULT_MEMORY_POOL=system

.PHONY: soak-ops setup setup-build build build-only build-release check-layering check-sizes check-format \
  check-format-only check-headers check-headers-only test test-fast test-unit test-integration \
  ctest-only test-interop interop-only test-python python-only test-docs docs-only sdk-only wheel \
  wheel-only \
  wheel-matrix-only fuzz fuzz-only \
  soak soak-sdk demo bench clean

# Everything: Debian packages, the Arrow SDK, the test venv and the emulators. Through
# setup-build, so that `make -j` never runs two set-ups (two apt-gets) at once.
setup: setup-build
	@bash scripts/setup.sh --tools

# Only what the C++ build needs: Debian packages and the Arrow SDK.
setup-build:
	@bash scripts/setup.sh --build

# The test build: clang with ASan/UBSan and libFuzzer's coverage; tests and fuzzers.
build: setup-build
	@$(MAKE) --no-print-directory build-only

build-release: setup-build
	@cmake --preset release >/dev/null
	@cmake --build $(RELEASE_BUILD) -j $(JOBS)

# Every test, phase by phase, with the time budget table at the end (scripts/make_test.sh):
# the layering, format and header checks, C++ unit + integration (ctest), every fuzz target
# for FUZZ_SECONDS, the Python interop suite, then the Python package's wheel in a fresh venv.
test:
	@JOBS=$(JOBS) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) bash scripts/make_test.sh

# No module includes one its layer may not use (docs/architecture.md); the check tests itself.
check-layering:
	@python3 scripts/check_layering.py --self-test
	@python3 scripts/check_layering.py

# Functions at most 80 lines, files at most 800, but the named debt (scripts/check_sizes.py);
# lizard is in the test venv.
check-sizes:
	@$(VENV_PY) scripts/check_sizes.py --self-test
	@$(VENV_PY) scripts/check_sizes.py

# Every C++ file is as clang-format (.clang-format) writes it.
check-format: setup-build
	@$(MAKE) --no-print-directory check-format-only

# Every header compiles on its own (cmake/AmpDeltaHeaderCheck.cmake).
check-headers: build
	@$(MAKE) --no-print-directory check-headers-only

# The fast subset for iteration: unit tests only.
test-fast: build
	@cd $(ASAN_BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) -L unit

test-integration: build
	@cd $(ASAN_BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) -L integration

# Each libFuzzer target of tests/fuzz for FUZZ_SECONDS from its committed seed corpus,
# FUZZ_JOBS at a time; fails on any crash, leak or timeout (scripts/run_fuzzers.sh). The test
# build carries libFuzzer's coverage, so the fuzzers are built with the tests.
fuzz: build
	@$(MAKE) --no-print-directory fuzz-only

test-interop: setup build
	@$(MAKE) --no-print-directory interop-only

# The Python package (docs/python.md): a manylinux wheel in dist/wheelhouse.
wheel: setup
	@$(MAKE) --no-print-directory wheel-only

# The wheel installed into a fresh venv, running tests/python (seed scripts, Ray).
test-python: wheel build
	@$(MAKE) --no-print-directory python-only

# The docs' commands and snippets (tests/docs), against the wheel and the test build's CLI.
test-docs: test-python
	@$(MAKE) --no-print-directory docs-only

# The steps alone, without their set-up and build (scripts/make_test.sh orders them).
# A build directory configured with another compiler (the test build was gcc's) is
# configured afresh: CMake would otherwise drop the preset's cache variables with it.
build-only:
	@if [ -f $(ASAN_BUILD)/CMakeCache.txt ] && \
	  ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14$$' $(ASAN_BUILD)/CMakeCache.txt; then \
	  cmake --preset asan --fresh >/dev/null; else cmake --preset asan >/dev/null; fi
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

check-format-only:
	@bash ci/format-check.sh

check-headers-only:
	@cmake --build $(ASAN_BUILD) --target ampdelta_header_check -j $(JOBS)

ctest-only:
	@cd $(ASAN_BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) --timeout 600

fuzz-only:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) bash scripts/run_fuzzers.sh $(ASAN_BUILD)

interop-only:
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta \
	  $(VENV_PY) -m pytest -q -n $(JOBS) --durations=30 tests/interop

wheel-only:
	@JOBS=$(JOBS) bash scripts/build_wheel.sh

python-only:
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta bash scripts/test_wheel.sh

# ampdelta through the real Amp Python SDK (../shared/vendor/amp-python) in a CPython 3.12
# venv with the abi3 wheel (scripts/sdk_venv.sh; tests/sdk).
sdk-only:
	@bash scripts/sdk_venv.sh
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta \
	  build/sdk-venv/bin/python -m pytest -q -p no:cacheprovider --durations=10 tests/sdk

# Every command and snippet README.md and docs/*.md show, run as a reader would, in the
# wheel's venv that python-only made (tests/docs, docs/testing.md).
docs-only:
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta \
	  build/wheel-venv/bin/python -m pytest -q -p no:cacheprovider --durations=10 tests/docs

# The wheels in fresh venvs of other interpreters and Arrow stacks (tests/wheel).
wheel-matrix-only:
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta bash scripts/test_wheel_matrix.sh

# The streaming crash test as a longer soak (kill -9 at 200 random moments; ~6 min).
soak: setup build
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta AMPDELTA_CRASH_TRIALS=200 \
	  $(VENV_PY) -m pytest -q -p no:cacheprovider tests/interop/test_stream_crash.py --timeout 1800

# The SDK soak (tests/sdk/test_sdk_soak.py): an SDK stream through reorgs, killed -9 five
# times, for 30 minutes (`make test` runs a compressed 60 s).
soak-sdk: setup build wheel
	@bash scripts/sdk_venv.sh
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta AMPDELTA_SDK_SOAK_S=1800 \
	  build/sdk-venv/bin/python -m pytest -q -s -p no:cacheprovider tests/sdk/test_sdk_soak.py

# The operations soak (docs/operations.md): a watched stream with reorgs, storage faults and
# an outage for 30 minutes, /metrics scraped every 5 s (`make test` runs a compressed 45 s).
soak-ops: setup build
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta AMPDELTA_SOAK_S=1800 \
	  $(VENV_PY) -m pytest -q -s -p no:cacheprovider tests/interop/test_ops_soak.py

# A quick first run (scripts/demo.sh): only the build's Debian packages and the Arrow SDK,
# and only the CLI (a unity release build); prints each phase's time. `make test` still
# installs everything.
demo:
	@JOBS=$(JOBS) bash scripts/demo.sh

# Benchmarks against their peers (docs/benchmarks.md); not part of `make test`. Writes
# bench/results/<date>.json and .md and the plots in docs/img; BENCH_ONLY=load,scale picks some,
# BENCH_QUICK=1 runs small sizes (a smoke run).
bench: build-release
	@$(MAKE) --no-print-directory wheel
	@bash scripts/wheel_venv.sh
	@$(VENV_PY) bench/run_all.py $(if $(BENCH_ONLY),--only $(BENCH_ONLY)) $(if $(BENCH_QUICK),--quick)

clean:
	rm -rf build dist

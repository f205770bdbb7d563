# ampdelta: the two commands a fresh Debian 12 machine needs are `make demo` and `make test`.
# Both do all set-up first (scripts/setup.sh is idempotent and quick when done).

JOBS ?= $(shell nproc)
ASAN_BUILD := build/asan
RELEASE_BUILD := build/release
DEMO_BUILD := build/demo
FUZZ_BUILD := build/fuzz
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

.PHONY: soak-ops setup build build-release build-fuzz check-layering check-format check-headers test test-fast test-unit test-integration test-interop test-python wheel fuzz soak demo bench clean

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset asan >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

build-release: setup
	@cmake --preset release >/dev/null
	@cmake --build $(RELEASE_BUILD) -j $(JOBS)

# clang + libFuzzer + ASan/UBSan; only the fuzz targets and the modules they link.
build-fuzz: setup
	@cmake --preset fuzz >/dev/null
	@cmake --build $(FUZZ_BUILD) --target fuzzers -j $(JOBS)

# Every test: the layering, format and header checks, C++ unit + integration (ctest), every fuzz
# target for FUZZ_SECONDS, the Python interop suite, then the Python package's wheel in a
# fresh venv.
test: build check-layering check-format check-headers
	@cd $(ASAN_BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) --timeout 600
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory test-interop
	@$(MAKE) --no-print-directory test-python

# No module includes one its layer may not use (docs/architecture.md); the check tests itself.
check-layering:
	@python3 scripts/check_layering.py --self-test
	@python3 scripts/check_layering.py

# Every C++ file is as clang-format (.clang-format) writes it.
check-format: setup
	@bash ci/format-check.sh

# Every header compiles on its own (cmake/AmpDeltaHeaderCheck.cmake).
check-headers: build
	@cmake --build $(ASAN_BUILD) --target ampdelta_header_check -j $(JOBS)

# The fast subset for iteration: unit tests only.
test-fast: build
	@cd $(ASAN_BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) -L unit

test-integration: build
	@cd $(ASAN_BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) -L integration

# Each libFuzzer target of tests/fuzz for FUZZ_SECONDS from its committed seed corpus,
# FUZZ_JOBS at a time; fails on any crash, leak or timeout (scripts/run_fuzzers.sh).
fuzz: build-fuzz
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) bash scripts/run_fuzzers.sh $(FUZZ_BUILD)

test-interop: build
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta \
	  $(VENV_PY) -m pytest -q -n $(JOBS) tests/interop

# The Python package (docs/python.md): a manylinux wheel in dist/wheelhouse.
wheel: setup
	@JOBS=$(JOBS) bash scripts/build_wheel.sh

# The wheel installed into a fresh venv, running tests/python (seed scripts, Ray).
test-python: wheel build
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta bash scripts/test_wheel.sh

# The streaming crash test as a longer soak (kill -9 at 200 random moments; ~6 min).
soak: build
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta AMPDELTA_CRASH_TRIALS=200 \
	  $(VENV_PY) -m pytest -q -p no:cacheprovider tests/interop/test_stream_crash.py --timeout 1800

# The operations soak (docs/operations.md): a watched stream with reorgs, storage faults and
# an outage for 30 minutes, /metrics scraped every 5 s (`make test` runs it for 75 s).
soak-ops: build
	@$(TEST_ENV) AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta AMPDELTA_SOAK_S=1800 \
	  $(VENV_PY) -m pytest -q -s -p no:cacheprovider tests/interop/test_ops_soak.py

# A quick first run: only the build's Debian packages and the Arrow SDK, and only the CLI
# (a unity release build); `make test` still installs everything.
demo:
	@bash scripts/setup.sh --demo
	@cmake --preset demo >/dev/null
	@cmake --build $(DEMO_BUILD) --target ampdelta -j $(JOBS)
	@$(DEMO_BUILD)/tools/ampdelta/ampdelta demo

# Benchmarks against their peers (docs/benchmarks.md); not part of `make test`. Writes
# bench/results/<date>.json and .md and the plots in docs/img; BENCH_ONLY=load,scale picks some,
# BENCH_QUICK=1 runs small sizes (a smoke run).
bench: build-release
	@$(MAKE) --no-print-directory wheel
	@bash scripts/wheel_venv.sh
	@$(VENV_PY) bench/run_all.py $(if $(BENCH_ONLY),--only $(BENCH_ONLY)) $(if $(BENCH_QUICK),--quick)

clean:
	rm -rf build dist

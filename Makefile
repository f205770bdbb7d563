# ampdelta: the two commands a fresh Debian 12 machine needs are `make demo` and `make test`.
# Both do all set-up first (scripts/setup.sh is idempotent and quick when done).

JOBS ?= $(shell nproc)
ASAN_BUILD := build/asan
RELEASE_BUILD := build/release
VENV_PY := .deps/venv/bin/python

# Sanitizer runtime options for the test build (house-style.md §4). Arrow from the wheel is
# not instrumented, hence detect_container_overflow=0 and the system allocator.
export ASAN_OPTIONS := detect_leaks=1:halt_on_error=1:detect_container_overflow=0
export LSAN_OPTIONS := suppressions=$(CURDIR)/ci/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS := print_stacktrace=1:halt_on_error=1
export ARROW_DEFAULT_MEMORY_POOL := system

.PHONY: setup build build-release test test-fast test-unit test-integration test-interop demo clean

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset asan >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

build-release: setup
	@cmake --preset release >/dev/null
	@cmake --build $(RELEASE_BUILD) -j $(JOBS)

# Every test: C++ unit + integration (ctest), then the Python interop suite.
test: build
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600
	@$(MAKE) --no-print-directory test-interop

# The fast subset for iteration: unit tests only.
test-fast: build
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

test-integration: build
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L integration

test-interop: build
	@AMPDELTA_CLI=$(CURDIR)/$(ASAN_BUILD)/tools/ampdelta/ampdelta \
	  $(VENV_PY) -m pytest -q tests/interop

demo: build-release
	@$(RELEASE_BUILD)/tools/ampdelta/ampdelta demo

clean:
	rm -rf build

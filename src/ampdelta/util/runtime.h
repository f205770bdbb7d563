#pragma once

/// \file runtime.h
/// \brief Process-wide Arrow set-up every ampdelta program performs once at start-up.

#include <arrow/status.h>

namespace ampdelta {

/// \brief Register all compute kernels and point the bundled TLS stack at Debian's CA
/// store (the wheel's OpenSSL has build-machine paths baked in). Idempotent.
arrow::Status InitializeRuntime();

/// \brief Make jemalloc Arrow's default pool unless ARROW_DEFAULT_MEMORY_POOL names one:
/// jemalloc keeps freed pages for reuse, where the wheel's default (mimalloc) hands them
/// back and the kernel zeroes them again, which costs a load up to a fifth of its time
/// (docs/benchmarks.md). Call first thing in main(), before Arrow's first allocation.
void SelectDefaultMemoryPool();

/// \brief Return the cores this process may run on (its CPU affinity: what `taskset` or a
/// container's cpuset leaves it), at least 1. std::thread::hardware_concurrency() counts
/// every core of the machine instead.
int UsableCores();

}  // namespace ampdelta

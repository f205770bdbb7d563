#pragma once

/// \file runtime.h
/// \brief Process-wide Arrow set-up every ampdelta program performs once at start-up.

#include <arrow/status.h>

namespace ampdelta {

/// \brief Register all compute kernels and point the bundled TLS stack at Debian's CA
/// store (the wheel's OpenSSL has build-machine paths baked in). Idempotent.
arrow::Status InitializeRuntime();

}  // namespace ampdelta

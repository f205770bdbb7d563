#pragma once

/// \file clock.h
/// \brief Wall-clock time as the Delta log records it.

#include <cstdint>

namespace ampdelta {

/// \brief Return the current time in milliseconds since the Unix epoch.
int64_t NowMs();

}  // namespace ampdelta

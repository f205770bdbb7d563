#pragma once

/// \file time_format.h
/// \brief UTC calendar formatting of epoch-based times, as the Delta log and the CLI
/// write them.

#include <cstdint>
#include <string>

#include <arrow/type_fwd.h>

namespace ampdelta {

/// \brief Calendar layouts.
enum class CivilFormat : uint8_t {
  kDate,         // 2025-12-13
  kDateTime,     // 2025-12-13 00:25:59
  kIsoDateTime,  // 2025-12-13T00:25:59
};

/// \brief Format whole seconds since the Unix epoch in UTC.
std::string FormatCivil(int64_t seconds, CivilFormat format);

/// \brief Return how many `unit`s make a second.
int64_t UnitsPerSecond(arrow::TimeUnit::type unit);

/// \brief Convert a count of `unit`s to microseconds (truncating finer units).
int64_t ToMicros(int64_t value, arrow::TimeUnit::type unit);

/// \brief Split `value` units since the epoch (`per_second` units a second) into whole
/// seconds and the remaining units, flooring so pre-1970 times keep a positive fraction.
void SplitEpoch(int64_t value, int64_t per_second, int64_t* seconds, int64_t* fraction);

}  // namespace ampdelta

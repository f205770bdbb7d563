#pragma once

/// \file numbers.h
/// \brief Decimal numbers from text without exceptions (std::stoll and friends throw on
/// text that is not a number or out of range, which hostile input makes routine), and
/// sums of counts a hostile log gives without overflow.

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace ampdelta {

/// \brief Parse all of `text` as a decimal integer with an optional leading '-'.
/// \return nullopt for empty text, any other character, or a value outside int64
std::optional<int64_t> ParseInt64(std::string_view text);

/// \brief Parse all of `text` as an unsigned decimal integer.
/// \return nullopt for empty text, any other character (a sign too), or a value above
///   UINT64_MAX
std::optional<uint64_t> ParseUint64(std::string_view text);

/// \brief Parse all of `text` as a decimal floating-point number (`-1.5`, `2e10`; like
/// strtod, `inf` and `nan` too).
/// \return nullopt for empty or malformed text and for a value outside the double range
std::optional<double> ParseDouble(std::string_view text);

/// \brief Return `a + b`, held at the int64 limit it would pass (signed overflow is
/// undefined behaviour; sizes and row counts come from logs anyone may write).
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max()
               : std::numeric_limits<int64_t>::min();
}

}  // namespace ampdelta

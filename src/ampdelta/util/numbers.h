#pragma once

/// \file numbers.h
/// \brief Decimal numbers from text without exceptions (std::stoll and friends throw on
/// text that is not a number or out of range, which hostile input makes routine).

#include <cstdint>
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

}  // namespace ampdelta

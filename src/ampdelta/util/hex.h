#pragma once

/// \file hex.h
/// \brief Hex encoding of byte strings, as block hashes appear in Amp's metadata.

#include <cstdint>
#include <string>
#include <string_view>

#include <arrow/result.h>

namespace ampdelta {

/// \brief Encode bytes as lower-case hex with a `0x` prefix.
std::string ToHex0x(std::string_view bytes);

/// \brief Encode bytes as lower-case hex without prefix.
std::string ToHex(std::string_view bytes);

/// \brief Decode hex (an optional `0x` prefix, either case) into bytes.
arrow::Result<std::string> FromHex(std::string_view text);

/// \brief Return the value of one hex digit (either case), or -1 for any other character.
int HexValue(char c);

/// \brief Return true when `text` is `0x` followed by exactly 64 lower-case hex digits.
bool IsHash32Hex(std::string_view text);

}  // namespace ampdelta

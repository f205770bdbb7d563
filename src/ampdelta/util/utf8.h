#pragma once

/// \file utf8.h
/// \brief Well-formed UTF-8 checks. Delta's log, Amp's metadata and Flight SQL strings
/// are UTF-8 by specification, while Arrow and Parquet strings are UTF-8 only by
/// convention: bytes from those must be checked before they become JSON text.

#include <cstddef>
#include <string>
#include <string_view>

namespace ampdelta {

/// \brief Return the length of the longest prefix of `text` that is well-formed UTF-8
/// (Unicode table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF). The
/// prefix always ends on a character boundary.
size_t ValidUtf8PrefixLength(std::string_view text);

/// \brief Return true when the whole of `text` is well-formed UTF-8.
inline bool IsValidUtf8(std::string_view text) {
  return ValidUtf8PrefixLength(text) == text.size();
}

/// \brief Return `text` for an error message: each byte that is not part of well-formed
/// UTF-8 is written as `\xNN`, so the message stays UTF-8 (it may end up in JSON).
std::string EscapeNonUtf8(std::string_view text);

/// \brief Return `text` as well-formed UTF-8: each byte that is not part of well-formed
/// UTF-8 becomes U+FFFD, as lossy decoders do (a Solidity `string` may hold any bytes).
std::string ReplaceNonUtf8(std::string_view text);

/// \brief Return `text` on one line: newline, carriage return and tab as `\n`, `\r`,
/// `\t`, other control characters as `\xNN`; every other byte as it is.
std::string EscapeControls(std::string_view text);

}  // namespace ampdelta

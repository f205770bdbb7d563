#pragma once

/// \file percent_encoding.h
/// \brief Percent-encoding (RFC 3986 §2.1) with the caller's choice of bytes to escape:
/// the one implementation behind URI paths and queries, Delta log paths and Hive
/// partition folders.

#include <string>
#include <string_view>

namespace ampdelta {

/// \brief Which bytes PercentEncode writes as `%XY`.
enum class PercentEscape : unsigned char {
  /// All but RFC 3986's unreserved characters (letters, digits, `-._~`): URI components.
  kAllButUnreserved,
  /// As kAllButUnreserved, but `/` stays: URI paths.
  kAllButUnreservedAndSlash,
  /// As PROTOCOL.md's `add.path` examples: all but unreserved characters and
  /// `/=:@+!$&'(),;`, and every byte of a multi-byte UTF-8 character.
  kLogPath,
  /// Only what Hive/Spark escape in a partition folder's value: control characters, DEL
  /// and
  /// `"#%'*/:=?\{[]^`.
  kPartitionFolder,
};

/// \brief Return `text` with the bytes `escape` selects written as `%XY` (upper-case
/// hex).
std::string PercentEncode(std::string_view text, PercentEscape escape);

/// \brief Return `text` with every `%XY` (two hex digits) replaced by its byte, once; a
/// `%` not followed by two hex digits stays as it is.
std::string PercentDecode(std::string_view text);

}  // namespace ampdelta

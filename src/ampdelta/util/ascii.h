#pragma once

/// \file ascii.h
/// \brief ASCII case folding for protocol tokens (header names, URL schemes, option
/// keys).

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace ampdelta {

/// \brief Return `text` with ASCII letters in lower case.
inline std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// \brief Return `text` with ASCII letters in upper case.
inline std::string AsciiUpper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

/// \brief Return true when `a` and `b` differ at most in ASCII letter case.
inline bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace ampdelta

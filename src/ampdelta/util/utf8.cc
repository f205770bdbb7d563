#include "ampdelta/util/utf8.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ampdelta {

size_t ValidUtf8PrefixLength(std::string_view text) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // Log strings (paths, stats JSON) are nearly all ASCII: skip eight such bytes at
    // once.
    if (n - i >= 8) {
      uint64_t word;
      std::memcpy(&word, bytes + i, sizeof(word));
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    const uint8_t lead = bytes[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // Unicode 15 table 3-7: the lead byte fixes the length and the range of the second
    // byte; every later byte is 80..BF.
    size_t length = 0;
    uint8_t low = 0x80;
    uint8_t high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead == 0xE0) {
      length = 3;
      low = 0xA0;
    } else if (lead >= 0xE1 && lead <= 0xEC) {
      length = 3;
    } else if (lead == 0xED) {
      length = 3;
      high = 0x9F;  // D800..DFFF are surrogates
    } else if (lead >= 0xEE && lead <= 0xEF) {
      length = 3;
    } else if (lead == 0xF0) {
      length = 4;
      low = 0x90;
    } else if (lead >= 0xF1 && lead <= 0xF3) {
      length = 4;
    } else if (lead == 0xF4) {
      length = 4;
      high = 0x8F;  // nothing above U+10FFFF
    } else {
      return i;
    }
    if (n - i < length) return i;
    if (bytes[i + 1] < low || bytes[i + 1] > high) return i;
    for (size_t k = 2; k < length; ++k) {
      if (bytes[i + k] < 0x80 || bytes[i + k] > 0xBF) return i;
    }
    i += length;
  }
  return n;
}

namespace {

// `text` with each byte that starts no well-formed UTF-8 sequence replaced by what
// `replace(byte, &out)` appends.
template <typename Replace>
std::string ReplaceInvalidBytes(std::string_view text, Replace replace) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t valid = ValidUtf8PrefixLength(text);
    out.append(text.substr(0, valid));
    text.remove_prefix(valid);
    if (text.empty()) break;
    replace(static_cast<uint8_t>(text.front()), &out);
    text.remove_prefix(1);
  }
  return out;
}

}  // namespace

std::string EscapeNonUtf8(std::string_view text) {
  return ReplaceInvalidBytes(text, [](uint8_t byte, std::string* out) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    *out += "\\x";
    out->push_back(kHex[byte >> 4]);
    out->push_back(kHex[byte & 0x0F]);
  });
}

std::string ReplaceNonUtf8(std::string_view text) {
  return ReplaceInvalidBytes(text, [](uint8_t, std::string* out) {
    out->append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
  });
}

std::string EscapeControls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace ampdelta

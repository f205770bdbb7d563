#include "ampdelta/util/percent_encoding.h"

#include "ampdelta/util/hex.h"

namespace ampdelta {
namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '.' || c == '_' || c == '~';
}

bool Escapes(unsigned char c, PercentEscape escape) {
  switch (escape) {
    case PercentEscape::kAllButUnreserved:
      return !IsUnreserved(c);
    case PercentEscape::kAllButUnreservedAndSlash:
      return !IsUnreserved(c) && c != '/';
    case PercentEscape::kLogPath:
      return !IsUnreserved(c) &&
             std::string_view("/=:@+!$&'(),;").find(static_cast<char>(c)) ==
                 std::string_view::npos;
    case PercentEscape::kPartitionFolder:
      return c < 0x20 || c == 0x7f ||
             std::string_view("\"#%'*/:=?\\{[]^").find(static_cast<char>(c)) !=
                 std::string_view::npos;
  }
  return true;
}

}  // namespace

std::string PercentEncode(std::string_view text, PercentEscape escape) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (Escapes(byte, escape)) {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0x0f]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int high = HexValue(text[i + 1]);
      const int low = HexValue(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

}  // namespace ampdelta

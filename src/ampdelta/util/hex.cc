#include "ampdelta/util/hex.h"

namespace ampdelta {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

}  // namespace

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string ToHex(std::string_view bytes) {
  std::string out;
  out.resize(bytes.size() * 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    out[2 * i] = kDigits[b >> 4];
    out[2 * i + 1] = kDigits[b & 0x0f];
  }
  return out;
}

std::string ToHex0x(std::string_view bytes) { return "0x" + ToHex(bytes); }

arrow::Result<std::string> FromHex(std::string_view text) {
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.size() % 2 != 0) {
    return arrow::Status::Invalid("hex string has an odd number of digits: '", text, "'");
  }
  std::string out(text.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexValue(text[2 * i]);
    const int lo = HexValue(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return arrow::Status::Invalid("invalid hex digit in '", text, "'");
    }
    out[i] = static_cast<char>((hi << 4) | lo);
  }
  return out;
}

bool IsHash32Hex(std::string_view text) {
  if (text.size() != 66 || text[0] != '0' || text[1] != 'x') return false;
  for (size_t i = 2; i < text.size(); ++i) {
    const char c = text[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace ampdelta

#include "ampdelta/util/numbers.h"

#include <charconv>
#include <system_error>

namespace ampdelta {
namespace {

template <typename T>
std::optional<T> ParseWhole(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int64_t> ParseInt64(std::string_view text) {
  return ParseWhole<int64_t>(text);
}

std::optional<uint64_t> ParseUint64(std::string_view text) {
  return ParseWhole<uint64_t>(text);
}

std::optional<double> ParseDouble(std::string_view text) {
  return ParseWhole<double>(text);
}

}  // namespace ampdelta

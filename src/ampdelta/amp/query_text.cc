#include "ampdelta/amp/query_text.h"

#include <cctype>

#include "ampdelta/util/ascii.h"

namespace ampdelta::amp {
namespace {

std::string_view TrimEnd(std::string_view sql) {
  while (!sql.empty() &&
         (std::isspace(static_cast<unsigned char>(sql.back())) || sql.back() == ';')) {
    sql.remove_suffix(1);
  }
  return sql;
}

// Find the last top-level (not quoted, not parenthesised) SETTINGS keyword and store the
// offset just past it in *position.
bool FindTopLevelSettings(std::string_view sql, size_t* position) {
  const std::string lower = AsciiLower(sql);
  int depth = 0;
  char quote = 0;
  bool found = false;
  for (size_t i = 0; i < lower.size(); ++i) {
    const char c = lower[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (depth == 0 && lower.compare(i, 8, "settings") == 0) {
      const bool start_ok =
          i == 0 || !std::isalnum(static_cast<unsigned char>(lower[i - 1]));
      const bool end_ok = i + 8 >= lower.size() ||
                          !std::isalnum(static_cast<unsigned char>(lower[i + 8]));
      if (start_ok && end_ok) {
        *position = i + 8;
        found = true;
      }
    }
  }
  return found;
}

}  // namespace

bool HasStreamSetting(std::string_view sql) {
  sql = TrimEnd(sql);
  size_t position = 0;
  if (!FindTopLevelSettings(sql, &position)) return false;
  // Settings are `key = value` pairs separated by commas.
  std::string settings = AsciiLower(sql.substr(position));
  std::string compact;
  for (char c : settings) {
    if (!std::isspace(static_cast<unsigned char>(c))) compact.push_back(c);
  }
  size_t begin = 0;
  while (begin <= compact.size()) {
    size_t comma = compact.find(',', begin);
    if (comma == std::string::npos) comma = compact.size();
    if (compact.compare(begin, comma - begin, "stream=true") == 0) return true;
    begin = comma + 1;
  }
  return false;
}

std::string EnsureStreamingQuery(std::string_view sql) {
  std::string_view trimmed = TrimEnd(sql);
  if (HasStreamSetting(trimmed)) return std::string(trimmed);
  size_t position = 0;
  if (FindTopLevelSettings(trimmed, &position)) {
    // A SETTINGS clause without `stream = true`: extend it rather than adding a second
    // one.
    return std::string(trimmed) + ", stream = true";
  }
  return std::string(trimmed) + " SETTINGS stream = true";
}

}  // namespace ampdelta::amp

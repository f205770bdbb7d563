#include "ampdelta/loader/common/load_result.h"

#include <cstdio>

namespace ampdelta::loader {

std::string MetadataText(const MetadataValue& value) {
  if (const auto* number = std::get_if<int64_t>(&value)) return std::to_string(*number);
  if (const auto* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  if (const auto* real = std::get_if<double>(&value)) return std::to_string(*real);
  return std::get<std::string>(value);
}

std::optional<int64_t> MetadataInt(const std::map<std::string, MetadataValue>& metadata,
                                   const std::string& key) {
  auto it = metadata.find(key);
  if (it == metadata.end()) return std::nullopt;
  if (const auto* number = std::get_if<int64_t>(&it->second)) return *number;
  return std::nullopt;
}

std::string LoadResult::ToString() const {
  if (is_reorg) {
    return "🔄 Reorg detected: " + std::to_string(invalidation_ranges.size()) +
           " ranges invalidated";
  }
  if (!success) return "❌ Failed to load to " + table_name + ": " + error;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.2f", duration);
  return "✅ Loaded " + std::to_string(rows_loaded) + " rows to " + table_name + " in " +
         seconds + "s";
}

std::ostream& operator<<(std::ostream& out, const LoadResult& result) {
  return out << result.ToString();
}

}  // namespace ampdelta::loader

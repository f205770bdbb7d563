#include "ampdelta/loader/common/load_result.h"

#include <cstdio>

namespace ampdelta::loader {

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

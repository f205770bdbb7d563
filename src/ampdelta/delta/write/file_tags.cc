#include "ampdelta/delta/write/file_tags.h"

#include <set>

#include <nlohmann/json.hpp>

#include "ampdelta/util/json_internal.h"

namespace ampdelta::delta {

std::optional<NullableStringMap> MergeFileTags(const std::vector<const Add*>& files) {
  std::set<std::string> keys;
  for (const Add* file : files) {
    if (!file->tags) continue;
    for (const auto& [key, value] : *file->tags) keys.insert(key);
  }
  NullableStringMap merged;
  for (const auto& key : keys) {
    bool all_arrays = true;
    bool all_equal = true;
    std::optional<std::optional<std::string>> first;
    for (const Add* file : files) {
      const std::optional<std::string>* value = nullptr;
      if (file->tags) {
        auto it = file->tags->find(key);
        if (it != file->tags->end()) value = &it->second;
      }
      if (value == nullptr) {
        all_equal = false;  // absent from this file: only a set-valued tag survives
        continue;
      }
      if (!first) first = *value;
      all_equal = all_equal && *first == *value;
      all_arrays =
          all_arrays && value->has_value() && json_util::ParseJson(**value).is_array();
    }
    if (all_equal && first) {
      merged[key] = *first;
      continue;
    }
    if (!all_arrays) continue;
    nlohmann::json unioned = nlohmann::json::array();
    std::set<std::string> seen;
    for (const Add* file : files) {
      if (!file->tags) continue;
      auto it = file->tags->find(key);
      if (it == file->tags->end() || !it->second) continue;
      // Every value parsed as an array above, so this parse cannot fail (nor throw).
      for (const auto& element : json_util::ParseJson(*it->second)) {
        if (seen.insert(json_util::DumpJsonLossy(element)).second)
          unioned.push_back(element);
      }
    }
    merged[key] = json_util::DumpJsonLossy(unioned);
  }
  if (merged.empty()) return std::nullopt;
  return merged;
}

}  // namespace ampdelta::delta

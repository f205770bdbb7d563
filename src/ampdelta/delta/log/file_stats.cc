#include "ampdelta/delta/log/file_stats.h"

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/json_internal.h"

namespace ampdelta::delta {
namespace {

const char* SectionKey(StatsSection section) {
  switch (section) {
    case StatsSection::kMinValues:
      return "minValues";
    case StatsSection::kMaxValues:
      return "maxValues";
    case StatsSection::kNullCount:
      return "nullCount";
  }
  return "";
}

// A count of rows: a non-negative integer (a negative one, from a broken writer, would
// make every comparison with it wrong).
std::optional<int64_t> Count(const FileStats::Json& value) {
  const std::optional<int64_t> count = json_util::AsInt64(value);
  if (!count || *count < 0) return std::nullopt;
  return count;
}

}  // namespace

FileStats::FileStats(const std::optional<std::string>& text) {
  if (!text) return;
  // Bounded depth: a hostile table's statistics must not exhaust the stack.
  json_ = json_util::ParseJson<Json>(*text);
  if (!json_.is_object()) json_ = Json();
}

std::optional<int64_t> FileStats::num_records() const {
  if (!known()) return std::nullopt;
  auto it = json_.find("numRecords");
  if (it == json_.end()) return std::nullopt;
  return Count(*it);
}

const FileStats::Json* FileStats::Find(StatsSection section,
                                       const std::vector<std::string>& path) const {
  if (!known()) return nullptr;
  auto found = json_.find(SectionKey(section));
  if (found == json_.end()) return nullptr;
  const Json* node = &*found;
  for (const auto& part : path) {
    if (!node->is_object()) return nullptr;
    found = node->find(part);
    if (found == node->end()) return nullptr;
    node = &*found;
  }
  return node;
}

const FileStats::Json* FileStats::FindIgnoringCase(StatsSection section,
                                                   std::string_view column) const {
  const Json* values = Find(section, {});
  if (values == nullptr || !values->is_object()) return nullptr;
  for (auto it = values->begin(); it != values->end(); ++it) {
    if (EqualsIgnoreAsciiCase(it.key(), column) && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::optional<int64_t> FileStats::NullCount(const std::vector<std::string>& path) const {
  const Json* count = Find(StatsSection::kNullCount, path);
  if (count == nullptr) return std::nullopt;
  return Count(*count);
}

std::string FileStats::WithLooseBounds(int64_t num_records) const {
  Json out = known() ? json_ : Json::object();
  out["numRecords"] = num_records;
  out["tightBounds"] = false;
  return json_util::DumpJsonLossy(out);
}

std::optional<int64_t> StatsNumRecords(const Add& add) {
  return FileStats::Of(add).num_records();
}

}  // namespace ampdelta::delta

#include "ampdelta/loader/state/stream_tags.h"

#include <algorithm>
#include <set>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/write/file_tags.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/sha256.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {

bool ByPosition(const amp::BlockRange& a, const amp::BlockRange& b) {
  return a.start != b.start ? a.start < b.start : a.end < b.end;
}

std::string BatchId(const amp::BlockRange& range) {
  const std::string position =
      range.network + ":" + std::to_string(range.start) + ":" + std::to_string(range.end);
  const std::string end_hash = range.hash.empty() ? Sha256Hex(position) : range.hash;
  return Sha256Hex(position + ":" + end_hash + ":" + range.prev_hash).substr(0, 16);
}

std::string BatchIdValue(const std::vector<amp::BlockRange>& ranges) {
  std::string value;
  for (const auto& range : ranges) value += (value.empty() ? "" : "|") + BatchId(range);
  return value;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> AddBatchIdColumn(
    const std::shared_ptr<arrow::RecordBatch>& batch, const std::string& value) {
  ARROW_ASSIGN_OR_RAISE(auto column, arrow::MakeArrayFromScalar(
                                         arrow::StringScalar(value), batch->num_rows()));
  const int index = batch->schema()->GetFieldIndex(kBatchIdColumn);
  if (index >= 0) return batch->SetColumn(index, batch->schema()->field(index), column);
  return batch->AddColumn(batch->num_columns(),
                          arrow::field(kBatchIdColumn, arrow::utf8()), column);
}

std::string RangesTagKey(const std::string& app_id) {
  return std::string(kRangesTag) + "." + app_id;
}

std::string SpansTagKey(const std::string& app_id) {
  return std::string(kSpansTag) + "." + app_id;
}

std::set<std::string> RecordTagKeys(const std::string& app_id) {
  return {RangesTagKey(app_id), SpansTagKey(app_id)};
}

namespace {

arrow::Result<std::vector<amp::BlockRange>> ReadTag(
    const std::optional<delta::NullableStringMap>& tags, const std::string& key) {
  if (!tags) return std::vector<amp::BlockRange>{};
  auto tag = tags->find(key);
  if (tag == tags->end() || !tag->second) return std::vector<amp::BlockRange>{};
  return RangesFromTag(*tag->second);
}

}  // namespace

arrow::Result<FileRecord> ReadFileRecord(const delta::Add& file,
                                         const std::string& app_id) {
  FileRecord record;
  ARROW_ASSIGN_OR_RAISE(record.ranges, ReadTag(file.tags, RangesTagKey(app_id)));
  ARROW_ASSIGN_OR_RAISE(record.spans, ReadTag(file.tags, SpansTagKey(app_id)));
  return record;
}

std::vector<amp::BlockRange> CoalesceRanges(std::vector<amp::BlockRange> ranges,
                                            uint64_t max_blocks) {
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    return a.network != b.network ? a.network < b.network : ByPosition(a, b);
  });
  ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
  std::vector<amp::BlockRange> out;
  for (auto& range : ranges) {
    if (!out.empty()) {
      amp::BlockRange& span = out.back();
      const bool follows = span.network == range.network && span.end != UINT64_MAX &&
                           range.start == span.end + 1;
      const bool linked =
          span.hash.empty() || range.prev_hash.empty() || range.prev_hash == span.hash;
      if (follows && linked && range.end - span.start < max_blocks) {
        span.end = range.end;
        span.hash = std::move(range.hash);
        span.timestamp = range.timestamp;
        continue;
      }
    }
    out.push_back(std::move(range));
  }
  return out;
}

arrow::Result<std::optional<delta::NullableStringMap>> MergeStreamTags(
    const std::vector<const delta::Add*>& files, const std::string& app_id) {
  std::optional<delta::NullableStringMap> merged = delta::MergeFileTags(files);
  std::vector<amp::BlockRange> recorded;
  std::set<std::string> networks;
  for (const delta::Add* file : files) {
    ARROW_ASSIGN_OR_RAISE(FileRecord record, ReadFileRecord(*file, app_id));
    for (auto* list : {&record.ranges, &record.spans}) {
      for (auto& range : *list) {
        networks.insert(range.network);
        recorded.push_back(std::move(range));
      }
    }
  }
  // Several networks' rows cannot be told apart by block number: keep the union.
  if (recorded.empty() || networks.size() > 1 || !merged) return merged;
  merged->erase(RangesTagKey(app_id));
  (*merged)[SpansTagKey(app_id)] = RangesToTag(CoalesceRanges(std::move(recorded)));
  return merged;
}

std::string RangesToTag(const std::vector<amp::BlockRange>& ranges) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& range : ranges) {
    nlohmann::json entry = {{"network", range.network},
                            {"start", range.start},
                            {"end", range.end},
                            {"hash", range.hash},
                            {"prev_hash", range.prev_hash}};
    // Kept so a range read back compares equal to the one the server sends again.
    if (range.timestamp) entry["timestamp"] = *range.timestamp;
    out.push_back(std::move(entry));
  }
  // Networks and hashes come from parsed app_metadata, so they are UTF-8.
  return json_util::DumpJsonLossy(out);
}

arrow::Result<std::vector<amp::BlockRange>> RangesFromTag(const std::string& tag) {
  // Parsed as an array on its own: spliced into app_metadata text, a tag could close the
  // array and add keys of its own.
  auto parsed = amp::ParseBlockRanges(tag);
  if (!parsed.ok()) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid, "file tag ",
                     kRangesTag,
                     " is not a list of block ranges: ", parsed.status().message());
  }
  return parsed;
}

}  // namespace ampdelta::loader

#include "ampdelta/loader/stream_state.h"

#include <algorithm>
#include <set>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/loader/backfill_state.h"
#include "ampdelta/loader/takeover.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/sha256.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {

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

std::string StreamAppId(const std::string& sql) {
  return "ampdelta-stream-" + Sha256Hex(sql).substr(0, 16);
}

std::vector<amp::BlockRange> StreamState::TakeoverSeeds() const {
  std::vector<amp::BlockRange> seeds;
  for (const auto& [network, block] : takeover_blocks) {
    auto recorded = ranges.find(network);
    if (block == 0 || (recorded != ranges.end() && !recorded->second.empty())) continue;
    amp::BlockRange seed;
    seed.network = network;
    seed.start = seed.end = backfill_handoffs.count(network) != 0 ? block : block - 1;
    seed.hash = "0x" + std::string(64, '0');
    seeds.push_back(std::move(seed));
  }
  return seeds;
}

amp::Cursor StreamState::ResumeCursor() const {
  amp::Cursor cursor;
  for (const auto& seed : TakeoverSeeds()) {
    cursor[seed.network] = amp::CursorEntry{seed.end, seed.hash};
  }
  for (const auto& [network, list] : ranges) {
    if (list.empty()) continue;
    const auto newest =
        std::max_element(list.begin(), list.end(),
                         [](const auto& a, const auto& b) { return a.end < b.end; });
    cursor[network] = amp::CursorEntry{newest->end, newest->hash};
  }
  return cursor;
}

arrow::Result<StreamState> ReadStreamState(const delta::Snapshot* snapshot,
                                           const std::string& app_id) {
  StreamState state;
  if (snapshot == nullptr) return state;
  state.txn_version = snapshot->AppTransactionVersion(app_id);
  state.takeover_blocks = TakeoverBlocks(*snapshot, app_id);
  for (const auto& file : snapshot->files()) {
    if (!file.tags) continue;
    auto tag = file.tags->find(RangesTagKey(app_id));
    if (tag == file.tags->end() || !tag->second) continue;
    ARROW_ASSIGN_OR_RAISE(auto ranges, RangesFromTag(*tag->second));
    for (auto& range : ranges) state.ranges[range.network].push_back(std::move(range));
  }
  for (auto& [network, list] : state.ranges) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.start != b.start ? a.start < b.start : a.end < b.end;
    });
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  // Seeds matter only until a network records ranges of its own: read the backfill's
  // records only then (not on every commit of a running stream).
  const bool seeding = std::any_of(
      state.takeover_blocks.begin(), state.takeover_blocks.end(),
      [&](const auto& entry) { return state.ranges.count(entry.first) == 0; });
  if (seeding) {
    const BackfillState backfill = ReadBackfillState(*snapshot, app_id);
    for (const auto& [network, block] : state.takeover_blocks) {
      auto spans = backfill.loaded.find(network);
      if (block == 0 || spans == backfill.loaded.end()) continue;
      for (const auto& span : spans->second) {
        if (span.last == block - 1) state.backfill_handoffs.insert(network);
      }
    }
  }
  return state;
}

arrow::Result<bool> FileReachesBlock(const delta::Add& file, const std::string& app_id,
                                     const std::string& network, uint64_t from) {
  if (!file.tags) return false;
  auto tag = file.tags->find(RangesTagKey(app_id));
  if (tag == file.tags->end() || !tag->second) return false;
  ARROW_ASSIGN_OR_RAISE(auto ranges, RangesFromTag(*tag->second));
  return std::any_of(ranges.begin(), ranges.end(), [&](const amp::BlockRange& range) {
    return range.network == network && range.end >= from;
  });
}

arrow::Status CheckProgressKept(const delta::Snapshot* before,
                                const delta::Snapshot* after, const std::string& app_id) {
  if (before == nullptr || after == nullptr || before->version() == after->version()) {
    return arrow::Status::OK();
  }
  const std::string key = RangesTagKey(app_id);
  std::set<std::string> live;
  for (const auto& file : after->files()) live.insert(after->FileKey(file.path));
  std::set<std::string> known;
  for (const auto& remove : before->tombstones())
    known.insert(before->FileKey(remove.path));
  std::set<std::string> taken;
  for (const auto& remove : after->tombstones()) {
    if (!remove.data_change) continue;
    const std::string path = after->FileKey(remove.path);
    taken.insert(path);
    // A file this stream never saw (a compaction's output), removed with its ranges.
    if (known.count(path) == 0 && remove.tags && remove.tags->count(key) != 0 &&
        live.count(path) == 0) {
      return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError, "file ",
                       path,
                       " holding this stream's progress was removed by a later commit "
                       "(a restore or delete took it back)")
          .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                    delta::kRolledBack));
    }
  }
  for (const auto& file : before->files()) {
    if (!file.tags || file.tags->count(key) == 0) continue;
    const std::string path = before->FileKey(file.path);
    if (live.count(path) == 0 && taken.count(path) != 0) {
      return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError, "file ",
                       path,
                       " holding this stream's progress was removed by a "
                       "later commit (a restore or delete took it back)")
          .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                    delta::kRolledBack));
    }
  }
  return arrow::Status::OK();
}

}  // namespace ampdelta::loader

#include "ampdelta/loader/state/stream_state.h"

#include <algorithm>
#include <set>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/delta/write/file_tags.h"
#include "ampdelta/loader/state/backfill_state.h"
#include "ampdelta/loader/state/takeover.h"
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

std::string SpansTagKey(const std::string& app_id) {
  return std::string(kSpansTag) + "." + app_id;
}

std::set<std::string> RecordTagKeys(const std::string& app_id) {
  return {RangesTagKey(app_id), SpansTagKey(app_id)};
}

namespace {

bool ByPosition(const amp::BlockRange& a, const amp::BlockRange& b) {
  return a.start != b.start ? a.start < b.start : a.end < b.end;
}

// Sort and deduplicate every network's list.
void Normalise(std::map<std::string, std::vector<amp::BlockRange>>* lists) {
  for (auto& [network, list] : *lists) {
    std::sort(list.begin(), list.end(), ByPosition);
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
}

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

std::string StreamAppId(const std::string& sql) {
  return "ampdelta-stream-" + Sha256Hex(sql).substr(0, 16);
}

std::vector<amp::BlockRange> StreamState::TakeoverSeeds() const {
  std::vector<amp::BlockRange> seeds;
  for (const auto& [network, block] : takeover_blocks) {
    if (block == 0 || !Recorded(network).empty()) continue;
    seeds.push_back(UnknownHashRange(network, SeedIsRewind(network) ? block - 1 : block));
  }
  return seeds;
}

bool StreamState::SeedIsRewind(const std::string& network) const {
  return legacy_takeovers.count(network) != 0 && backfill_handoffs.count(network) == 0;
}

std::optional<uint64_t> StreamState::FirstRecordedBlock(
    const std::string& network) const {
  const std::vector<amp::BlockRange> recorded = Recorded(network);
  if (recorded.empty()) return std::nullopt;
  return recorded.front().start;
}

std::vector<amp::BlockRange> StreamState::Recorded(const std::string& network) const {
  std::vector<amp::BlockRange> out;
  for (const auto* lists : {&ranges, &spans}) {
    auto it = lists->find(network);
    if (it != lists->end()) out.insert(out.end(), it->second.begin(), it->second.end());
  }
  std::sort(out.begin(), out.end(), ByPosition);
  return out;
}

amp::Cursor StreamState::ResumeCursor() const {
  amp::Cursor cursor;
  for (const auto& seed : TakeoverSeeds()) {
    cursor[seed.network] = amp::CursorEntry{seed.end, seed.hash};
  }
  std::map<std::string, const amp::BlockRange*> newest;
  for (const auto* lists : {&ranges, &spans}) {
    for (const auto& [network, list] : *lists) {
      for (const auto& range : list) {
        const amp::BlockRange*& best = newest[network];
        if (best == nullptr || range.end > best->end) best = &range;
      }
    }
  }
  for (const auto& [network, range] : newest) {
    cursor[network] = amp::CursorEntry{range->end, range->hash};
  }
  return cursor;
}

namespace {

// True when files without any stream's tags hold rows at or after `block`.
arrow::Result<bool> UntaggedRowsFrom(const delta::Snapshot& snapshot,
                                     const std::string& block_column, uint64_t block) {
  if (block_column.empty() ||
      delta::FindFieldIgnoreCase(*snapshot.schema(), block_column) < 0) {
    return ForeignRows(snapshot) > 0;
  }
  ARROW_ASSIGN_OR_RAISE(auto span, ForeignBlockSpan(snapshot, block_column));
  return span && span->second >= 0 && static_cast<uint64_t>(span->second) >= block;
}

// Fill state->cursor_log: the log's record where it holds progress the tags lost (its
// newest range then joins the recorded ones), otherwise the tags' record.
arrow::Status ReadCursorRecord(const delta::Snapshot& snapshot, const std::string& app_id,
                               const std::string& block_column, StreamState* state) {
  ARROW_ASSIGN_OR_RAISE(std::optional<CursorLog> logged, ReadCursorLog(snapshot, app_id));
  for (const auto* lists : {&state->ranges, &state->spans}) {
    for (const auto& [network, list] : *lists) {
      state->cursor_log = AdvanceCursorLog(std::move(state->cursor_log), list);
    }
  }
  if (!logged) return arrow::Status::OK();
  const std::string own = CursorDomainName(app_id);
  for (const auto& [name, domain] : snapshot.domain_metadata()) {
    if (name != own && name.rfind(CursorDomainName(""), 0) == 0) ++state->other_streams;
  }
  for (const auto& [network, cursor] : *logged) {
    uint64_t first = cursor.first;
    if (auto takeover = state->takeover_blocks.find(network);
        takeover != state->takeover_blocks.end()) {
      first = std::max(first, takeover->second);
    }
    auto tagged = state->cursor_log.find(network);
    if (tagged != state->cursor_log.end() && tagged->second.last.end >= cursor.last.end) {
      // The tags know as much; rows of the stream may still sit in files another engine
      // compacted (found by block number on undo).
      ARROW_ASSIGN_OR_RAISE(const bool untagged,
                            UntaggedRowsFrom(snapshot, block_column, first));
      if (untagged) state->untagged_from[network] = first;
      continue;
    }
    // The log is ahead: another engine compacted files (their rows reach the log's newest
    // range), or a restore or delete took rows back (the tags say what the table holds).
    ARROW_ASSIGN_OR_RAISE(
        const bool compacted,
        UntaggedRowsFrom(snapshot, block_column, std::max(first, cursor.last.start)));
    if (!compacted) continue;
    state->cursor_log[network] = cursor;
    state->untagged_from[network] = first;
    auto& ranges = state->ranges[network];
    ranges.push_back(cursor.last);
    std::sort(ranges.begin(), ranges.end(), ByPosition);
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<StreamState> ReadStreamState(const delta::Snapshot* snapshot,
                                           const std::string& app_id,
                                           const std::string& block_column) {
  StreamState state;
  if (snapshot == nullptr) return state;
  state.txn_version = snapshot->AppTransactionVersion(app_id);
  state.takeover_blocks = TakeoverBlocks(*snapshot, app_id);
  state.legacy_takeovers = LegacyTakeovers(*snapshot, app_id);
  for (const auto& file : snapshot->files()) {
    if (!file.tags) continue;
    ARROW_ASSIGN_OR_RAISE(FileRecord record, ReadFileRecord(file, app_id));
    for (auto& range : record.ranges) {
      state.ranges[range.network].push_back(std::move(range));
    }
    for (auto& span : record.spans) state.spans[span.network].push_back(std::move(span));
  }
  Normalise(&state.ranges);
  Normalise(&state.spans);
  ARROW_RETURN_NOT_OK(ReadCursorRecord(*snapshot, app_id, block_column, &state));
  // Legacy seeds matter only until a network records ranges of its own: read the
  // backfill only then (not on every commit of a running stream).
  const bool seeding = std::any_of(
      state.takeover_blocks.begin(), state.takeover_blocks.end(), [&](const auto& entry) {
        return state.legacy_takeovers.count(entry.first) != 0 &&
               state.Recorded(entry.first).empty();
      });
  if (seeding) {
    ARROW_ASSIGN_OR_RAISE(const BackfillState backfill,
                          ReadBackfillState(*snapshot, app_id, block_column));
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
  ARROW_ASSIGN_OR_RAISE(FileRecord record, ReadFileRecord(file, app_id));
  const auto reaches = [&](const amp::BlockRange& range) {
    return range.network == network && range.end >= from;
  };
  return std::any_of(record.ranges.begin(), record.ranges.end(), reaches) ||
         std::any_of(record.spans.begin(), record.spans.end(), reaches);
}

arrow::Status CheckProgressKept(const delta::Snapshot* before,
                                const delta::Snapshot* after, const std::string& app_id) {
  if (before == nullptr || after == nullptr || before->version() == after->version()) {
    return arrow::Status::OK();
  }
  const std::set<std::string> keys = RecordTagKeys(app_id);
  const auto records = [&keys](const std::optional<delta::NullableStringMap>& tags) {
    return tags && std::any_of(keys.begin(), keys.end(), [&](const std::string& key) {
             return tags->count(key) != 0;
           });
  };
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
    if (known.count(path) == 0 && records(remove.tags) && live.count(path) == 0) {
      return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError, "file ",
                       path,
                       " holding this stream's progress was removed by a later commit "
                       "(a restore or delete took it back)")
          .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                    delta::kRolledBack));
    }
  }
  for (const auto& file : before->files()) {
    if (!records(file.tags)) continue;
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

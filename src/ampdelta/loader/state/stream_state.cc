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
namespace {

// Sort and deduplicate every network's list.
void Normalise(std::map<std::string, std::vector<amp::BlockRange>>* lists) {
  for (auto& [network, list] : *lists) {
    std::sort(list.begin(), list.end(), ByPosition);
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
}

}  // namespace

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

#include "ampdelta/loader/verify/table_verify.h"

#include <algorithm>
#include <set>
#include <utility>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/table.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/loader/state/backfill_state.h"
#include "ampdelta/loader/state/stream_state.h"
#include "ampdelta/loader/state/takeover.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/hex.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

using Runs = std::vector<std::pair<uint64_t, uint64_t>>;

std::string BlocksText(uint64_t first, uint64_t last) {
  return first == last ? "block " + std::to_string(first)
                       : "blocks " + std::to_string(first) + "-" + std::to_string(last);
}

// Sorted block numbers as [first, last] runs of consecutive numbers.
Runs ToRuns(const std::vector<uint64_t>& sorted) {
  Runs runs;
  for (uint64_t block : sorted) {
    if (!runs.empty() && block == runs.back().second + 1) {
      runs.back().second = block;
    } else if (runs.empty() || block > runs.back().second) {
      runs.emplace_back(block, block);
    }
  }
  return runs;
}

class Verifier {
 public:
  Verifier(const VerifyOptions& options, VerifyReport* report)
      : options_(options), report_(report) {}

  void Find(std::string kind, std::string message, std::string file = {},
            std::optional<uint64_t> first = {}, std::optional<uint64_t> last = {}) {
    if (static_cast<size_t>(report_->counts[kind]++) >= options_.max_per_kind) return;
    report_->findings.push_back(
        VerifyFinding{std::move(kind), std::move(message), std::move(file), first, last});
  }

  // Every file the log names exists with the size it records.
  arrow::Status CheckFiles(const delta::Snapshot& snapshot) {
    for (const auto& file : snapshot.files()) {
      const std::string key = snapshot.FileKey(file.path);
      auto head = snapshot.store()->Head(key);
      if (!head.ok()) {
        if (!IsError(head.status(), ErrorCode::kNotFound)) return head.status();
        Find("missing_file", "data file " + key + " is missing", key);
        missing_.insert(key);
        continue;
      }
      if (head->size != file.size) {
        Find("size_mismatch",
             "data file " + key + " has " + std::to_string(head->size) +
                 " bytes; the log records " + std::to_string(file.size),
             key);
        missing_.insert(key);
        continue;
      }
      // The deletion vector that says which of its rows are gone.
      if (auto dv = delta::DeletionVectorFileKey(file.deletion_vector)) {
        auto dv_head = snapshot.store()->Head(*dv);
        if (!dv_head.ok()) {
          if (!IsError(dv_head.status(), ErrorCode::kNotFound)) return dv_head.status();
          Find("missing_file",
               "deletion vector " + *dv + " of data file " + key + " is missing", key);
          missing_.insert(key);
        }
      }
    }
    return arrow::Status::OK();
  }

  // The streams' recorded ranges and spans: no block recorded by two files, no hole
  // between the first recorded block and the last.
  arrow::Status CheckRecords(const delta::Snapshot& snapshot) {
    // app id -> network -> (start, end, file)
    std::map<
        std::string,
        std::map<std::string, std::vector<std::tuple<uint64_t, uint64_t, std::string>>>>
        recorded;
    for (const auto& file : snapshot.files()) {
      if (!file.tags) continue;
      for (const auto& [key, value] : *file.tags) {
        if (!value) continue;
        std::string app;
        for (const char* prefix : {kRangesTag, kSpansTag}) {
          const std::string head = std::string(prefix) + ".";
          if (key.rfind(head, 0) == 0) app = key.substr(head.size());
        }
        if (app.empty()) continue;
        ARROW_ASSIGN_OR_RAISE(auto ranges, RangesFromTag(*value));
        for (const auto& range : ranges) {
          recorded[app][range.network].emplace_back(range.start, range.end,
                                                    snapshot.FileKey(file.path));
          if (key.rfind(kRangesTag, 0) == 0) {
            ids_[snapshot.FileKey(file.path)].emplace(BatchId(range), range);
          }
        }
      }
    }
    for (auto& [app, networks] : recorded) {
      for (auto& [network, ranges] : networks) {
        std::sort(ranges.begin(), ranges.end());
        Runs runs;
        const std::tuple<uint64_t, uint64_t, std::string>* previous = nullptr;
        for (const auto& range : ranges) {
          const auto& [start, end, file] = range;
          if (previous != nullptr) {
            const auto& [prev_start, prev_end, prev_file] = *previous;
            // A file's tags are a superset of what it may hold (a rewrite keeps the
            // ranges of rows it dropped): overlaps within one file are not rows twice.
            if (start <= prev_end && file == prev_file) {
              // nothing: the rows checks (batch ids, hashes) judge the file's rows
            } else if (start <= prev_end) {
              Find("duplicate_block",
                   BlocksText(start, std::min(end, prev_end)) + " of " + network +
                       " are recorded by two files (" + prev_file + ", " + file +
                       "): loaded twice",
                   file, start, std::min(end, prev_end));
            } else if (start > prev_end + 1) {
              Find("gap",
                   BlocksText(prev_end + 1, start - 1) + " of " + network +
                       " were never recorded (stream " + app + ")",
                   {}, prev_end + 1, start - 1);
            }
          }
          if (!runs.empty() && start <= runs.back().second + 1) {
            runs.back().second = std::max(runs.back().second, end);
          } else {
            runs.emplace_back(start, end);
          }
          if (previous == nullptr || end > std::get<1>(*previous)) previous = &range;
        }
        report_->recorded[app][network] = std::move(runs);
      }
    }
    return arrow::Status::OK();
  }

  // Rows: batch ids that name their file's ranges, one hash per block, and (for a blocks
  // table) one row per block with none missing.
  arrow::Status CheckRows(const delta::Snapshot& snapshot) {
    for (const auto& file : snapshot.files()) {
      const std::string key = snapshot.FileKey(file.path);
      if (missing_.count(key) != 0) continue;
      auto table = delta::ReadDataFile(snapshot, file);
      if (!table.ok()) {
        Find("unreadable_file", "data file " + key + ": " + table.status().message(),
             key);
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(auto rows, (*table)->CombineChunksToBatch());
      report_->rows += rows->num_rows();
      ARROW_RETURN_NOT_OK(CheckFileRows(key, *rows));
    }
    std::vector<uint64_t> blocks;
    blocks.reserve(rows_per_block_.size());
    for (const auto& [block, count] : rows_per_block_) blocks.push_back(block);
    report_->blocks = static_cast<int64_t>(blocks.size());
    if (!blocks.empty()) {
      report_->first_block = blocks.front();
      report_->last_block = blocks.back();
    }
    for (const auto& [block, hashes] : hashes_) {
      if (hashes.size() > 1) {
        std::string listed;
        for (const auto& hash : hashes) listed += (listed.empty() ? "" : ", ") + hash;
        Find("fork_mix",
             BlocksText(block, block) + " has rows of " + std::to_string(hashes.size()) +
                 " different hashes (" + listed + "): a reorg was not undone",
             {}, block, block);
      }
    }
    if (report_->one_row_per_block) {
      const Runs runs = ToRuns(blocks);
      for (size_t i = 1; i < runs.size(); ++i) {
        const uint64_t first = runs[i - 1].second + 1;
        const uint64_t last = runs[i].first - 1;
        Find("gap",
             BlocksText(first, last) + (first == last ? " has no row" : " have no rows"),
             {}, first, last);
      }
      for (const auto& [block, count] : rows_per_block_) {
        if (count > 1) {
          Find("duplicate_block",
               BlocksText(block, block) + " has " + std::to_string(count) + " rows", {},
               block, block);
        }
      }
    }
    return arrow::Status::OK();
  }

  // Every backfill's partitions: the live files' tags against each other, the rows, the
  // records and the plans; then where a stream of the same query continues it, and
  // where a stream took the table over. Runs after CheckRows (it counts rows per block).
  arrow::Status CheckBackfills(const delta::Snapshot& snapshot) {
    for (const auto& app : BackfillApps(snapshot)) {
      ARROW_ASSIGN_OR_RAISE(const BackfillState state,
                            ReadBackfillState(snapshot, app, options_.block_column));
      CheckParts(state);
      for (const auto& record : state.stale) {
        Find("stale_record",
             "the backfill record of " + record.network + " " +
                 BlocksText(record.span.first, record.span.last) +
                 " says they were loaded, but no live file holds their rows (a restore, "
                 "an overwrite or a delete took them back): run the backfill again to "
                 "load them",
             {}, record.span.first, record.span.last);
      }
      for (const auto& [record, found] : state.short_records) {
        Find("missing_rows",
             "partition " + record.network + " " + SpanText(record.span) + " holds " +
                 std::to_string(found) + " of the " + std::to_string(record.version) +
                 " rows the backfill loaded, in files without its tags",
             {}, record.span.first, record.span.last);
      }
      for (const auto& [network, spans] : state.Unfinished()) {
        for (const auto& span : spans) {
          Find("gap",
               BlocksText(span.first, span.last) + " of " + network +
                   " are inside the backfill's range but not in the table (backfill " +
                   app + "): run it again to load them",
               {}, span.first, span.last);
        }
      }
      for (const auto& [network, spans] : state.loaded) {
        for (const auto& span : spans)
          report_->backfilled[app][network].emplace_back(span.first, span.last);
      }
      CheckSeam(app, state);
    }
    for (const auto& [app, networks] : report_->recorded) {
      ARROW_RETURN_NOT_OK(CheckTakeover(snapshot, app));
    }
    return arrow::Status::OK();
  }

  // Compare every block's hash with the chain's, a run of blocks at a time.
  arrow::Status CheckCanonical() {
    if (!options_.canonical || hashes_.empty()) return arrow::Status::OK();
    report_->checked_hashes = true;
    std::vector<uint64_t> blocks;
    for (const auto& [block, hashes] : hashes_) blocks.push_back(block);
    constexpr uint64_t kChunk = 10'000;
    for (const auto& [first, last] : ToRuns(blocks)) {
      for (uint64_t from = first; from <= last; from += kChunk) {
        const uint64_t to = std::min(last, from + kChunk - 1);
        ARROW_ASSIGN_OR_RAISE(auto chain, options_.canonical(from, to));
        for (auto it = hashes_.lower_bound(from); it != hashes_.end() && it->first <= to;
             ++it) {
          auto canonical = chain.find(it->first);
          if (canonical == chain.end()) {
            Find("unknown_block",
                 BlocksText(it->first, it->first) + " is not on the server's chain", {},
                 it->first, it->first);
            continue;
          }
          for (const auto& hash : it->second) {
            if (hash != canonical->second) {
              Find("stale_hash",
                   BlocksText(it->first, it->first) + " has hash " + hash +
                       "; the chain's is " + canonical->second,
                   {}, it->first, it->first);
            }
          }
        }
        if (to == last) break;
      }
    }
    return arrow::Status::OK();
  }

 private:
  arrow::Status CheckFileRows(const std::string& key, const arrow::RecordBatch& rows) {
    auto block_column = rows.GetColumnByName(options_.block_column);
    ARROW_ASSIGN_OR_RAISE(auto as_uint,
                          arrow::compute::Cast(block_column, arrow::uint64()));
    const auto block_array = as_uint.make_array();
    const auto& blocks = static_cast<const arrow::UInt64Array&>(*block_array);
    auto hash_column = rows.GetColumnByName(report_->hash_column);
    auto ids = rows.GetColumnByName(kBatchIdColumn);
    const auto file_ids = ids_.find(key);
    for (int64_t i = 0; i < rows.num_rows(); ++i) {
      if (blocks.IsNull(i)) continue;
      const uint64_t block = blocks.Value(i);
      ++rows_per_block_[block];
      if (hash_column != nullptr && hash_column->IsValid(i)) {
        hashes_[block].insert(HashText(*hash_column, i));
      }
      // A row of a file that records microbatch ranges names one of them, and the range
      // it names holds the row's block.
      if (file_ids == ids_.end() || ids == nullptr || !ids->IsValid(i) ||
          ids->type_id() != arrow::Type::STRING) {
        continue;
      }
      const std::string value(static_cast<const arrow::StringArray&>(*ids).GetView(i));
      bool holds = false;
      bool known = false;
      size_t start = 0;
      while (start <= value.size()) {
        const size_t end = std::min(value.find('|', start), value.size());
        auto range = file_ids->second.find(value.substr(start, end - start));
        if (range != file_ids->second.end()) {
          known = true;
          holds = holds || (block >= range->second.start && block <= range->second.end);
        }
        start = end + 1;
      }
      if (!known) {
        Find("batch_id",
             "a row of " + BlocksText(block, block) + " in " + key +
                 " carries batch id " + value + ", which no range the file records has",
             key, block, block);
      } else if (!holds) {
        Find("batch_id",
             "a row of " + BlocksText(block, block) + " in " + key +
                 " carries batch id " + value + ", whose range does not hold its block",
             key, block, block);
      }
    }
    return arrow::Status::OK();
  }

  // The app ids of the queries whose backfills left tags or records.
  static std::set<std::string> BackfillApps(const delta::Snapshot& snapshot) {
    std::set<std::string> apps;
    const std::string tag_prefix = BackfillTagKey("");
    for (const auto& file : snapshot.files()) {
      if (!file.tags) continue;
      for (const auto& [key, value] : *file.tags) {
        if (key.size() > tag_prefix.size() && key.rfind(tag_prefix, 0) == 0)
          apps.insert(key.substr(tag_prefix.size()));
      }
    }
    for (const auto& [app_id, txn] : snapshot.app_transactions()) {
      for (const char* infix : {"/backfill/", "/backfill-plan/"}) {
        const size_t at = app_id.find(infix);
        if (at != std::string::npos && at > 0) apps.insert(app_id.substr(0, at));
      }
    }
    return apps;
  }

  int64_t RowsIn(const BlockSpan& span) const {
    int64_t rows = 0;
    for (auto it = rows_per_block_.lower_bound(span.first);
         it != rows_per_block_.end() && it->first <= span.last; ++it) {
      rows += it->second;
    }
    return rows;
  }

  // Two commits naming the same blocks, and partitions holding other than the rows
  // their commit loaded.
  void CheckParts(const BackfillState& state) {
    for (const auto& [network, parts] : state.tagged) {
      const BackfillPart* widest = nullptr;
      for (const auto& part : parts) {
        if (widest != nullptr && part.span.first <= widest->span.last) {
          const uint64_t last = std::min(part.span.last, widest->span.last);
          Find("duplicate_block",
               BlocksText(part.span.first, last) + " of " + network +
                   " were loaded by two backfill commits (partitions " +
                   SpanText(widest->span) + " and " + SpanText(part.span) + ")",
               {}, part.span.first, last);
        }
        if (widest == nullptr || part.span.last > widest->span.last) widest = &part;
        if (!part.rows) continue;
        const int64_t held = RowsIn(part.span);
        if (held > *part.rows) {
          Find("duplicate_block",
               "partition " + network + " " + SpanText(part.span) + " holds " +
                   std::to_string(held) + " rows; its backfill commit loaded " +
                   std::to_string(*part.rows) + ": " + std::to_string(held - *part.rows) +
                   " rows are there twice",
               {}, part.span.first, part.span.last);
        } else if (held < *part.rows) {
          Find("missing_rows",
               "partition " + network + " " + SpanText(part.span) + " holds " +
                   std::to_string(held) + " of the " + std::to_string(*part.rows) +
                   " rows its backfill commit loaded (deleted or taken back since)",
               {}, part.span.first, part.span.last);
        }
      }
    }
  }

  // Blocks in both a backfill's files and the stream of the same query (a record the
  // stream's rows corroborate is blocks the stream took over, not loaded twice), and
  // blocks between the backfill's last one and the stream's first that neither holds.
  void CheckSeam(const std::string& app, const BackfillState& state) {
    auto stream = report_->recorded.find(app);
    if (stream == report_->recorded.end()) return;
    for (const auto& [network, spans] : state.loaded) {
      auto runs = stream->second.find(network);
      if (runs == stream->second.end() || runs->second.empty() || spans.empty()) continue;
      const uint64_t stream_first = runs->second.front().first;
      uint64_t backfill_last = 0;
      bool below = false;
      for (const auto& span : spans) {
        if (span.last < stream_first) {
          backfill_last = span.last;
          below = true;
        }
      }
      if (below && stream_first > backfill_last + 1 &&
          RowsIn({backfill_last + 1, stream_first - 1}) == 0) {
        Find("gap",
             BlocksText(backfill_last + 1, stream_first - 1) + " of " + network +
                 " lie between the backfill's last block and the first block of the "
                 "stream of query " +
                 app + ": no load holds them",
             {}, backfill_last + 1, stream_first - 1);
      }
    }
    for (const auto& [network, parts] : state.tagged) {
      auto runs = stream->second.find(network);
      if (runs == stream->second.end()) continue;
      std::vector<BlockSpan> spans;
      for (const auto& part : parts) spans.push_back(part.span);
      for (const auto& span : MergeSpans(std::move(spans))) {
        for (const auto& [first, last] : runs->second) {
          if (last < span.first || first > span.last) continue;
          const uint64_t from = std::max(first, span.first);
          const uint64_t to = std::min(last, span.last);
          Find("duplicate_block",
               BlocksText(from, to) + " of " + network +
                   " were loaded by both the backfill and the stream of query " + app,
               {}, from, to);
        }
      }
    }
  }

  // Another writer's rows in blocks a stream loaded after taking the table over (the
  // takeover removes them). Untagged rows may be the stream's own once another engine
  // compacted its files, which only a stream recording its cursor in the log can tell.
  arrow::Status CheckTakeover(const delta::Snapshot& snapshot, const std::string& app) {
    const auto takeovers = TakeoverBlocks(snapshot, app);
    if (takeovers.empty()) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto cursor_log, ReadCursorLog(snapshot, app));
    if (cursor_log) return arrow::Status::OK();
    for (const auto& [network, from] : takeovers) {
      auto runs = report_->recorded[app].find(network);
      if (runs == report_->recorded[app].end()) continue;
      std::vector<std::pair<uint64_t, uint64_t>> spans;
      for (const auto& [first, last] : runs->second) {
        if (last >= from) spans.emplace_back(std::max(first, from), last);
      }
      ARROW_ASSIGN_OR_RAISE(auto found, ForeignRowsIn(snapshot, options_.block_column,
                                                      spans, BackfillTagKey(app)));
      for (size_t i = 0; i < spans.size(); ++i) {
        if (found[i] == 0) continue;
        Find("duplicate_block",
             BlocksText(spans[i].first, spans[i].second) + " of " + network + " hold " +
                 std::to_string(found[i]) + " rows of another writer, though stream " +
                 app + " took the table over from block " + std::to_string(from) +
                 " and loaded them itself: rows there twice",
             {}, spans[i].first, spans[i].second);
      }
    }
    return arrow::Status::OK();
  }

  static std::string HashText(const arrow::Array& column, int64_t i) {
    if (arrow::is_base_binary_like(column.type_id()) ||
        column.type_id() == arrow::Type::FIXED_SIZE_BINARY) {
      std::string_view bytes;
      if (column.type_id() == arrow::Type::FIXED_SIZE_BINARY) {
        const auto& fixed = static_cast<const arrow::FixedSizeBinaryArray&>(column);
        bytes = std::string_view(reinterpret_cast<const char*>(fixed.GetValue(i)),
                                 static_cast<size_t>(fixed.byte_width()));
      } else if (column.type_id() == arrow::Type::LARGE_BINARY ||
                 column.type_id() == arrow::Type::LARGE_STRING) {
        bytes = static_cast<const arrow::LargeBinaryArray&>(column).GetView(i);
      } else {
        bytes = static_cast<const arrow::BinaryArray&>(column).GetView(i);
      }
      if (column.type_id() == arrow::Type::STRING ||
          column.type_id() == arrow::Type::LARGE_STRING) {
        return AsciiLower(std::string(bytes));
      }
      return ToHex0x(bytes);
    }
    auto scalar = column.GetScalar(i);
    return scalar.ok() ? (*scalar)->ToString() : std::string();
  }

  const VerifyOptions& options_;
  VerifyReport* report_;
  std::set<std::string> missing_;
  // file -> batch id -> its range
  std::map<std::string, std::map<std::string, amp::BlockRange>> ids_;
  std::map<uint64_t, int64_t> rows_per_block_;
  std::map<uint64_t, std::set<std::string>> hashes_;
};

}  // namespace

arrow::Result<VerifyReport> VerifyTable(std::shared_ptr<storage::ObjectStore> store,
                                        const VerifyOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  VerifyReport report;
  report.version = snapshot->version();
  report.files = static_cast<int64_t>(snapshot->files().size());
  const auto& schema = *snapshot->schema();
  const auto block_field = schema.GetFieldByName(options.block_column);
  if (block_field == nullptr || !arrow::is_integer(block_field->type()->id())) {
    return InvalidInputError("the table has no integer column '", options.block_column,
                             "' (--block-column names the block number column)");
  }
  report.hash_column = options.hash_column;
  if (report.hash_column.empty()) {
    report.hash_column = schema.GetFieldByName("block_hash") != nullptr ? "block_hash"
                         : schema.GetFieldByName("hash") != nullptr     ? "hash"
                                                                        : "";
  } else if (schema.GetFieldByName(report.hash_column) == nullptr) {
    return InvalidInputError("the table has no column '", report.hash_column,
                             "' (--hash-column names the block hash column)");
  }
  if (options.canonical && report.hash_column.empty()) {
    return InvalidInputError(
        "the table has no block hash column (block_hash or hash) to compare with the "
        "server's; name one with --hash-column");
  }
  report.one_row_per_block =
      options.one_row_per_block.value_or(report.hash_column == "hash");
  Verifier verifier(options, &report);
  ARROW_RETURN_NOT_OK(verifier.CheckFiles(*snapshot));
  ARROW_RETURN_NOT_OK(verifier.CheckRecords(*snapshot));
  ARROW_RETURN_NOT_OK(verifier.CheckRows(*snapshot));
  ARROW_RETURN_NOT_OK(verifier.CheckBackfills(*snapshot));
  ARROW_RETURN_NOT_OK(verifier.CheckCanonical());
  return report;
}

}  // namespace ampdelta::loader

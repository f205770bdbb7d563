#include "ampdelta/loader/state/takeover.h"

#include <algorithm>
#include <set>

#include <arrow/array.h>
#include <arrow/array/concatenate.h>
#include <arrow/compute/api.h>
#include <arrow/scalar.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/row_edit.h"
#include "ampdelta/loader/state/stream_tags.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

constexpr const char* kTakeoverInfix = "/takeover-from/";
constexpr const char* kLegacyTakeoverInfix = "/takeover/";

// A file's [min, max] of `column` from its statistics; nullopt when they do not say.
std::optional<std::pair<int64_t, int64_t>> StatsSpan(const delta::Add& file,
                                                     const std::string& column) {
  const delta::FileStats stats = delta::FileStats::Of(file);
  auto find = [&](delta::StatsSection section) -> std::optional<int64_t> {
    const delta::FileStats::Json* bound = stats.FindIgnoringCase(section, column);
    if (bound == nullptr || !bound->is_number_integer()) return std::nullopt;
    return bound->get<int64_t>();
  };
  auto low = find(delta::StatsSection::kMinValues);
  auto high = find(delta::StatsSection::kMaxValues);
  if (!low || !high) return std::nullopt;
  return std::make_pair(*low, *high);
}

arrow::Status NoBlockColumn(const std::string& column) {
  return InvalidInputError("the table has no block column '", column,
                           "' (name it with --block-column)");
}

arrow::Result<std::shared_ptr<arrow::Array>> BlockValues(const arrow::Table& table,
                                                         const std::string& column) {
  const int index = delta::FindFieldIgnoreCase(*table.schema(), column);
  if (index < 0) return NoBlockColumn(column);
  auto chunks = table.column(index)->chunks();
  if (chunks.empty()) return arrow::MakeArrayOfNull(arrow::int64(), 0);
  ARROW_ASSIGN_OR_RAISE(auto values, arrow::Concatenate(chunks));
  return arrow::compute::Cast(*values, arrow::int64());
}

arrow::Result<std::shared_ptr<arrow::Array>> BlockValues(const arrow::RecordBatch& rows,
                                                         const std::string& column) {
  const int index = delta::FindFieldIgnoreCase(*rows.schema(), column);
  if (index < 0) return NoBlockColumn(column);
  return arrow::compute::Cast(*rows.column(index), arrow::int64());
}

}  // namespace

std::string TakeoverAppId(const std::string& stream_app_id, const std::string& network) {
  return stream_app_id + kTakeoverInfix + network;
}

std::string LegacyTakeoverAppId(const std::string& stream_app_id,
                                const std::string& network) {
  return stream_app_id + kLegacyTakeoverInfix + network;
}

bool IsTakeoverAppId(const std::string& stream_app_id, const std::string& app_id) {
  for (const char* infix : {kTakeoverInfix, kLegacyTakeoverInfix}) {
    const std::string prefix = stream_app_id + infix;
    if (app_id.size() > prefix.size() && app_id.compare(0, prefix.size(), prefix) == 0) {
      return true;
    }
  }
  return false;
}

namespace {

// The records of one infix: network -> block.
std::map<std::string, uint64_t> RecordsOf(const delta::Snapshot& snapshot,
                                          const std::string& prefix) {
  std::map<std::string, uint64_t> blocks;
  for (const auto& [app_id, txn] : snapshot.app_transactions()) {
    if (app_id.size() > prefix.size() && app_id.compare(0, prefix.size(), prefix) == 0 &&
        txn.version >= 0) {
      blocks[app_id.substr(prefix.size())] = static_cast<uint64_t>(txn.version);
    }
  }
  return blocks;
}

}  // namespace

std::map<std::string, uint64_t> TakeoverBlocks(const delta::Snapshot& snapshot,
                                               const std::string& stream_app_id) {
  std::map<std::string, uint64_t> blocks =
      RecordsOf(snapshot, stream_app_id + kTakeoverInfix);
  for (const auto& [network, block] :
       RecordsOf(snapshot, stream_app_id + kLegacyTakeoverInfix)) {
    blocks.try_emplace(network, block);
  }
  return blocks;
}

std::set<std::string> LegacyTakeovers(const delta::Snapshot& snapshot,
                                      const std::string& stream_app_id) {
  const auto current = RecordsOf(snapshot, stream_app_id + kTakeoverInfix);
  std::set<std::string> legacy;
  for (const auto& [network, block] :
       RecordsOf(snapshot, stream_app_id + kLegacyTakeoverInfix)) {
    if (current.count(network) == 0) legacy.insert(network);
  }
  return legacy;
}

bool HasTakeoverRecord(const delta::Snapshot& snapshot) {
  for (const auto& [app_id, txn] : snapshot.app_transactions()) {
    if (app_id.find(kTakeoverInfix) != std::string::npos ||
        app_id.find(kLegacyTakeoverInfix) != std::string::npos) {
      return true;
    }
  }
  return false;
}

bool IsForeignFile(const delta::Add& file, const std::string& except_tag) {
  if (delta::StatsNumRecords(file) == std::optional<int64_t>(0)) return false;
  if (!file.tags) return true;
  for (const auto& [key, value] : *file.tags) {
    if (key.rfind(kRangesTag, 0) == 0 || key.rfind(kSpansTag, 0) == 0) return false;
    if (!except_tag.empty() && key == except_tag) return false;
  }
  return true;
}

int64_t ForeignRows(const delta::Snapshot& snapshot, const std::string& except_tag) {
  int64_t rows = 0;
  for (const auto& file : snapshot.files()) {
    if (IsForeignFile(file, except_tag)) {
      rows = SaturatingAdd(rows, delta::StatsNumRecords(file).value_or(1));
    }
  }
  return rows;
}

arrow::Result<std::optional<std::pair<int64_t, int64_t>>> ForeignBlockSpan(
    const delta::Snapshot& snapshot, const std::string& column,
    const std::string& except_tag) {
  if (delta::FindFieldIgnoreCase(*snapshot.schema(), column) < 0) {
    return InvalidInputError("the table has no block column '", column,
                             "' to take it over by (name it with --block-column)");
  }
  std::optional<std::pair<int64_t, int64_t>> span;
  auto widen = [&span](int64_t low, int64_t high) {
    span = span ? std::make_pair(std::min(span->first, low), std::max(span->second, high))
                : std::make_pair(low, high);
  };
  for (const auto& file : snapshot.files()) {
    if (!IsForeignFile(file, except_tag)) continue;
    if (auto stats =
            StatsSpan(file, delta::PhysicalColumnName(*snapshot.schema(), column))) {
      widen(stats->first, stats->second);
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto table, delta::ReadDataFile(snapshot, file));
    ARROW_ASSIGN_OR_RAISE(auto values, BlockValues(*table, column));
    ARROW_ASSIGN_OR_RAISE(auto minmax, arrow::compute::MinMax(*values));
    const auto& pair = minmax.scalar_as<arrow::StructScalar>();
    if (!pair.value[0]->is_valid) continue;
    widen(static_cast<const arrow::Int64Scalar&>(*pair.value[0]).value,
          static_cast<const arrow::Int64Scalar&>(*pair.value[1]).value);
  }
  return span;
}

std::optional<std::pair<int64_t, int64_t>> StatsBlockSpan(const delta::Add& file,
                                                          const std::string& column) {
  return StatsSpan(file, column);
}

arrow::Result<std::vector<int64_t>> ForeignRowsIn(
    const delta::Snapshot& snapshot, const std::string& column,
    const std::vector<std::pair<uint64_t, uint64_t>>& spans,
    const std::string& except_tag) {
  return RowsIn(snapshot, column, spans, [&except_tag](const delta::Add& file) {
    return IsForeignFile(file, except_tag);
  });
}

arrow::Result<std::vector<int64_t>> RowsIn(
    const delta::Snapshot& snapshot, const std::string& column,
    const std::vector<std::pair<uint64_t, uint64_t>>& spans,
    const std::function<bool(const delta::Add&)>& counted) {
  std::vector<int64_t> counts(spans.size(), 0);
  if (spans.empty()) return counts;
  if (delta::FindFieldIgnoreCase(*snapshot.schema(), column) < 0) {
    return InvalidInputError("the table has no block column '", column,
                             "' (name it with --block-column)");
  }
  const auto inside = [](int64_t low, int64_t high, const auto& span) {
    return low >= 0 && static_cast<uint64_t>(low) >= span.first &&
           static_cast<uint64_t>(high) <= span.second;
  };
  const auto overlaps = [](int64_t low, int64_t high, const auto& span) {
    return high >= 0 && static_cast<uint64_t>(high) >= span.first &&
           (low < 0 || static_cast<uint64_t>(low) <= span.second);
  };
  for (const auto& file : snapshot.files()) {
    if (!counted(file)) continue;
    const auto stats =
        StatsSpan(file, delta::PhysicalColumnName(*snapshot.schema(), column));
    const auto rows = delta::StatsNumRecords(file);
    if (stats) {
      // Counted from the statistics when every span it reaches holds it whole.
      std::vector<size_t> holding;
      bool read = false;
      for (size_t i = 0; i < spans.size(); ++i) {
        if (!overlaps(stats->first, stats->second, spans[i])) continue;
        holding.push_back(i);
        read = read || !inside(stats->first, stats->second, spans[i]) || !rows ||
               file.deletion_vector.has_value();
      }
      if (holding.empty()) continue;
      if (!read) {
        for (size_t i : holding) counts[i] = SaturatingAdd(counts[i], *rows);
        continue;
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto table, delta::ReadDataFile(snapshot, file, {column}));
    ARROW_ASSIGN_OR_RAISE(auto values, BlockValues(*table, column));
    const auto& blocks = static_cast<const arrow::Int64Array&>(*values);
    for (int64_t row = 0; row < blocks.length(); ++row) {
      if (blocks.IsNull(row) || blocks.Value(row) < 0) continue;
      const auto block = static_cast<uint64_t>(blocks.Value(row));
      for (size_t i = 0; i < spans.size(); ++i) {
        if (block >= spans[i].first && block <= spans[i].second) ++counts[i];
      }
    }
  }
  return counts;
}

// The rows to keep: those whose block lies outside [bound, last], or is null (in no
// block a stream could send again).
arrow::Result<std::shared_ptr<arrow::Array>> KeepOutside(const arrow::RecordBatch& rows,
                                                         const std::string& column,
                                                         int64_t bound, int64_t last) {
  ARROW_ASSIGN_OR_RAISE(auto values, BlockValues(rows, column));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum below, arrow::compute::CallFunction(
                                                "less", {values, arrow::Datum(bound)}));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum above, arrow::compute::CallFunction(
                                                "greater", {values, arrow::Datum(last)}));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum outside,
                        arrow::compute::CallFunction("or", {below, above}));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum nulls,
                        arrow::compute::CallFunction("is_null", {values}));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum keep,
                        arrow::compute::CallFunction("or_kleene", {outside, nulls}));
  return keep.make_array();
}

arrow::Result<int64_t> StageForeignUndo(const delta::Snapshot& snapshot,
                                        const std::string& column, uint64_t from,
                                        delta::TableWriter* writer, uint64_t to) {
  const auto bound = static_cast<int64_t>(std::min<uint64_t>(from, INT64_MAX));
  const auto last = static_cast<int64_t>(std::min<uint64_t>(to, INT64_MAX));
  int64_t removed_rows = 0;
  delta::RowEdit edit(snapshot, writer);
  for (const auto& file : snapshot.files()) {
    if (!IsForeignFile(file)) continue;
    const auto stats =
        StatsSpan(file, delta::PhysicalColumnName(*snapshot.schema(), column));
    // Wholly outside [from, to]: kept.
    if (stats && (stats->second < bound || stats->first > last)) continue;
    ARROW_ASSIGN_OR_RAISE(auto rows, edit.Read(file, {column}));
    ARROW_ASSIGN_OR_RAISE(auto keep, KeepOutside(*rows, column, bound, last));
    ARROW_ASSIGN_OR_RAISE(const delta::FileEdit done, edit.Drop(file, rows, keep));
    removed_rows += done.rows_removed;
  }
  writer->StageEdit(&edit);
  return removed_rows;
}

arrow::Result<std::vector<std::string>> ProbeNetworks(amp::Client& client,
                                                      const std::string& sql,
                                                      const std::atomic<bool>* stop) {
  amp::QueryOptions query;
  query.stream = true;
  query.stop = stop;
  query.stop_cancels_reads = true;
  ARROW_ASSIGN_OR_RAISE(auto stream, client.Query(sql, query));
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto message, stream->Next());
    if (!message) {
      return MakeError(ErrorCode::kServerError, arrow::StatusCode::IOError,
                       "the stream ended before naming its network (no block ranges)");
    }
    if (message->metadata.ranges.empty()) continue;
    std::set<std::string> networks;
    for (const auto& range : message->metadata.ranges) networks.insert(range.network);
    stream->Cancel();
    return std::vector<std::string>(networks.begin(), networks.end());
  }
}

}  // namespace ampdelta::loader

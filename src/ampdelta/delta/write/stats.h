#pragma once

/// \file stats.h
/// \brief Per-file statistics (`add.stats`, PROTOCOL.md "Per-file Statistics") computed
/// from the Arrow data with Spark's conventions.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief Which columns get statistics.
struct StatsOptions {
  /// `delta.dataSkippingNumIndexedCols`: the first N leaf columns (-1: all).
  int64_t num_indexed_cols = 32;
  /// `delta.dataSkippingStatsColumns`: explicit (possibly nested `a.b`) column names.
  std::optional<std::vector<std::string>> stats_columns;
  /// Top-level columns that get statistics whatever the above say (clustering columns).
  std::vector<std::string> always_indexed;
  /// `delta.dataSkippingStringPrefixLength`: code points kept of string min/max.
  int string_prefix_length = 32;
};

/// \brief Accumulates numRecords, minValues, maxValues and nullCount over the batches of
/// one data file. min/max cover numbers, dates, timestamps (truncated to milliseconds)
/// and strings (truncated to the prefix length, the max kept an upper bound); every
/// indexed leaf gets a nullCount. Thread-compatible.
class StatsCollector {
 public:
  /// \param[in] schema the columns written to the file (partition columns excluded)
  StatsCollector(const std::shared_ptr<arrow::Schema>& schema,
                 const StatsOptions& options);
  ~StatsCollector();
  StatsCollector(StatsCollector&&) noexcept;
  StatsCollector& operator=(StatsCollector&&) noexcept;

  /// \brief Fold a batch (with the schema given at construction) into the statistics.
  arrow::Status Update(const arrow::RecordBatch& batch);

  /// \brief Return the statistics JSON string.
  std::string ToJson() const;

  /// \brief Return the rows seen.
  int64_t num_records() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// \brief The statistics of a file holding the rows of files whose statistics are
/// `parts` (their `add.stats`; `schema` names columns as the statistics do, physically):
/// `num_records`, null counts summed, and the least minimum and greatest maximum of each
/// column whose bounds order as JSON numbers or as Spark's date, timestamp and string
/// formats. A column loses its bounds when a part with values has none for it; every
/// column loses them when a part has no statistics.
std::string MergeStats(const std::vector<std::optional<std::string>>& parts,
                       const arrow::Schema& schema, int64_t num_records);

/// \brief Format a timestamp (µs since epoch) as Spark writes it in stats:
/// `2000-01-01T00:00:00.000Z` (UTC) or without `Z` for timestamp_ntz; milliseconds kept.
std::string FormatStatsTimestamp(int64_t micros, bool utc);

}  // namespace ampdelta::delta

#pragma once

/// \file data_file_options.h
/// \brief How data files are written (codec, sizes, threads, statistics) and named, apart
/// from the writer so the pieces it is built from can take them without including it.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/write/stats.h"

namespace ampdelta::delta {

/// \brief Parquet compression codecs.
enum class Codec : uint8_t { kUncompressed, kSnappy, kGzip, kZstd, kLz4, kBrotli };

/// \brief Parse a codec name (`zstd`, `snappy`, `gzip`, `lz4`, `brotli`,
/// `uncompressed`/`none`).
arrow::Result<Codec> ParseCodec(const std::string& name);
/// \brief Return the codec's lower-case name, as used in file names.
const char* CodecName(Codec codec);

/// \brief How data files are written.
struct DataFileOptions {
  Codec codec = Codec::kZstd;
  std::optional<int> compression_level;
  bool dictionary = true;
  /// Parquet column statistics and page indexes (readers use them to skip pages).
  bool parquet_statistics = true;
  /// Rows per Parquet row group.
  int64_t max_rows_per_group = 1'048'576;
  /// Roll to a new file once a file reaches this size (checked at row-group boundaries).
  int64_t target_file_size = 128 * 1024 * 1024;
  /// Roll to a new file after this many rows (0: no limit).
  int64_t max_rows_per_file = 0;
  /// Delta statistics settings (from the table properties).
  StatsOptions stats;
  /// Encode the columns of a row group on several threads (when num_threads is 1).
  bool parallel_encoding = true;
  /// Files written concurrently, each by its own thread (0: one per core). Writes smaller
  /// than a few tens of MiB still produce a single file.
  int num_threads = 0;
  /// What the row groups being built may hold in all (Arrow bytes of the rows not yet
  /// flushed), whatever the core count or the number of partitions open: split evenly
  /// between the writing threads, and a thread past its share flushes its largest row
  /// group. With the queues, bounded too, it is what bounds the writer's memory: 128 MiB
  /// keeps a load on 8 writer threads near 400 MiB (docs/benchmarks.md), row groups at
  /// least 16 MiB.
  int64_t memory_budget_bytes = 128 * 1024 * 1024;
  /// Bytes written by one thread before the others join in.
  int64_t parallel_threshold_bytes = 32 * 1024 * 1024;
  /// Where under the table root the files go (before any partition folders), e.g.
  /// `_change_data`; empty: the root.
  std::string directory;
  /// The first word of every file name: `part` for data files, `cdc` for change data.
  std::string file_prefix = "part";
  /// Carried in every file name: the token of the write lease that keeps VACUUM away from
  /// the files until their commit (write_lease.h); empty for none.
  std::string file_token;
  /// Columns the batches carry after the table's: row tracking's materialized row IDs
  /// and row commit versions (row_tracking.h), int64, written as they are, outside the
  /// table schema and its statistics.
  std::vector<std::string> row_tracking_columns;
  /// Applied to every batch on the writing thread before it is written (e.g. conversion
  /// to the table schema), so that work is spread over the threads too.
  std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>(
      const std::shared_ptr<arrow::RecordBatch>&)>
      prepare;
};

/// \brief The key of a new data file in `partition_folder` (empty: none):
/// `[directory/][folder/]<prefix>-<number>-<uuid>-[<lease token>-]c000.<codec>.parquet`.
std::string NewDataFileKey(const DataFileOptions& options,
                           const std::string& partition_folder, int64_t number);

}  // namespace ampdelta::delta

#pragma once

/// \file optimize.h
/// \brief OPTIMIZE: bin-packing compaction of small files.

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/delta/write/data_file_options.h"

namespace ampdelta::delta {

/// \brief Compaction settings.
struct OptimizeOptions {
  /// Files are packed into files of about this size; files at least this large stay.
  int64_t target_size = 128 * 1024 * 1024;
  /// Only files this accepts are compacted (e.g. a stream's finalised files); all when
  /// unset.
  std::function<bool(const Add&)> eligible;
  /// The tags of a file made from a bin of files (e.g. a stream coalescing the block
  /// ranges it records); MergeFileTags (file_tags.h) when unset.
  std::function<arrow::Result<std::optional<NullableStringMap>>(
      const std::vector<const Add*>&)>
      merge_tags;
  /// A bin whose rows lie in large row groups (at most an eighth of them in row groups
  /// of fewer rows than this and under 4 MiB) is stitched (parquet_stitch.h): its files'
  /// encoded row groups copied into the new file rather than decoded and encoded again, a
  /// parallel backfill's partitions merged for the cost of a copy. Bins with deleted rows
  /// to purge, of a table that tracks row IDs, or of files with different schemas are
  /// rewritten. 0: every bin is rewritten.
  int64_t stitch_min_rows_per_group = 32 * 1024;
  /// Files are packed in the order of this column's least value (their statistics), so
  /// each new file holds one run of it (a load's block column: files that data skipping
  /// can tell apart); unset: the log's order.
  std::optional<std::string> order_by;
  DataFileOptions files;
  CommitOptions commit;
};

/// \brief What a compaction did.
struct OptimizeResult {
  std::optional<Version> version;  // unset when nothing needed compacting
  int64_t files_removed = 0;
  int64_t files_added = 0;
  int64_t partitions_optimized = 0;
  int64_t rows = 0;
  int64_t files_stitched = 0;  // of files_removed, those whose row groups were copied
};

/// \brief Bin-pack the small files of each partition into files of about the target size
/// (rewritten, or stitched where their row groups are large), in one commit whose actions
/// have dataChange = false: readers see the same rows, and concurrent appends never
/// conflict with it. Deletion vectors are applied while rewriting; the new files' tags
/// are merged from the old ones (options.merge_tags). Operates on the table as `snapshot`
/// holds it (a commit made since it is a conflict only where it touched the same files).
arrow::Result<OptimizeResult> Optimize(std::shared_ptr<const Snapshot> snapshot,
                                       const OptimizeOptions& options = {});

/// \brief Optimize the latest snapshot of the table at `store` (for callers that hold no
/// snapshot: the CLI, the Python module).
arrow::Result<OptimizeResult> Optimize(std::shared_ptr<storage::ObjectStore> store,
                                       const OptimizeOptions& options = {});

}  // namespace ampdelta::delta

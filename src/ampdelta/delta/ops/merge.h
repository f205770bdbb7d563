#pragma once

/// \file merge.h
/// \brief Merge (upsert) rows into a table by key columns: rows whose keys match existing
/// rows replace them, the others are inserted, duplicates inside the source keep the last
/// occurrence. Copy-on-write in one commit; only files whose partition values or key
/// statistics may hold a source key are read, and only those holding one are rewritten.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/write/table_writer.h"

namespace ampdelta::delta {

/// \brief Options of a merge.
struct MergeOptions {
  /// Key columns (at least one); rows are matched on all of them. A null key never
  /// matches: such rows are always inserted.
  std::vector<std::string> keys;
  /// The write's options (mode is ignored; operation is MERGE).
  TableWriteOptions write;
  /// Attempts when a concurrent commit invalidates what the merge read.
  int max_attempts = 5;
};

/// \brief What a merge did.
struct MergeResult {
  TableWriteResult write;
  int64_t source_rows = 0;
  /// Source rows dropped because a later source row has the same key.
  int64_t source_duplicates = 0;
  int64_t rows_inserted = 0;
  /// Existing rows replaced by source rows.
  int64_t rows_updated = 0;
  /// Existing rows copied unchanged into rewritten files.
  int64_t rows_copied = 0;
  int64_t files_read = 0;
  int64_t files_rewritten = 0;
  /// Files kept with their replaced rows marked in a deletion vector.
  int64_t files_marked = 0;
  /// Files left untouched without being read (pruned by partition values and statistics).
  int64_t files_skipped = 0;
  int attempts = 0;
};

/// \brief Merge `source` (batches with `source_schema`) into the table at `store`
/// (created when absent).
///
/// Errors (the table is untouched): kInvalidInput for missing or unusable key columns and
/// everything TableWriter::Open refuses; kCommitConflict when concurrent commits kept
/// invalidating the merge for max_attempts attempts.
arrow::Result<MergeResult> MergeRows(
    std::shared_ptr<storage::ObjectStore> store,
    const std::shared_ptr<arrow::Schema>& source_schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& source,
    const MergeOptions& options);

}  // namespace ampdelta::delta

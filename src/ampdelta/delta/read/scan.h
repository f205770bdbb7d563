#pragma once

/// \file scan.h
/// \brief Read a snapshot's rows as Arrow batches: files pruned by partition values and
/// statistics, deletion vectors applied, partition columns restored, column mapping and
/// type widening resolved to the table schema.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/read/predicate.h"

namespace ampdelta::delta {

/// \brief What to read.
struct ScanOptions {
  /// Columns to return, in this order (empty: all, in table order).
  std::vector<std::string> columns;
  /// Only rows matching this predicate (files that cannot match are skipped).
  std::optional<Predicate> predicate;
};

/// \brief Streams the rows of a snapshot, one file after another. Thread-compatible.
class TableScan {
 public:
  static arrow::Result<std::unique_ptr<TableScan>> Make(
      std::shared_ptr<const Snapshot> snapshot, ScanOptions options = {});
  ~TableScan();

  /// \brief Return the schema of the batches.
  const std::shared_ptr<arrow::Schema>& schema() const;
  /// \brief Return the next batch, or nullptr at the end.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next();
  /// \brief Read everything into one table.
  arrow::Result<std::shared_ptr<arrow::Table>> ToTable();

  int64_t files_scanned() const;
  int64_t files_skipped() const;

 private:
  class Impl;
  explicit TableScan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// \brief Read every live row of one data file, in the table schema.
///
/// \param[in] columns the table columns to read (any case, repeats ignored), returned in
///   table order; empty reads all. Only the file columns they come from are decoded.
///   Errors: kInvalidInput when a column is not in the table.
arrow::Result<std::shared_ptr<arrow::Table>> ReadDataFile(
    const Snapshot& snapshot, const Add& file,
    const std::vector<std::string>& columns = {});

/// \brief ReadDataFile with, when the table tracks rows (row_tracking.h), each live
/// row's stable row ID and row commit version after the table columns, under the names
/// of the table's materialized columns: the rows as a rewrite that keeps them writes
/// them.
///
/// Errors: kCorruptLog when the file has no baseRowId or defaultRowCommitVersion.
arrow::Result<std::shared_ptr<arrow::Table>> ReadDataFileWithRowIds(
    const Snapshot& snapshot, const Add& file);

}  // namespace ampdelta::delta

#pragma once

/// \file data_file_writer.h
/// \brief Write Arrow batches as a table's Parquet data files: one open file per
/// partition, files rolled by size or rows, statistics per file, memory bounded by row
/// groups.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief Writes data files and describes them as `add` actions. Files are visible in
/// storage as they close, but belong to the table only once a commit references them.
/// Thread-compatible.
class DataFileWriter {
 public:
  /// \param[in] store the table's store
  /// \param[in] table_schema the table schema; batches passed to Write() must have it
  ///   (followed by options.row_tracking_columns)
  /// \param[in] partition_columns partition columns (not stored in the files)
  static arrow::Result<std::unique_ptr<DataFileWriter>> Make(
      std::shared_ptr<storage::ObjectStore> store,
      std::shared_ptr<arrow::Schema> table_schema,
      std::vector<std::string> partition_columns, DataFileOptions options);

  ~DataFileWriter();

  /// \brief Write a batch: one with the table schema, or one that `options.prepare` turns
  /// into one.
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& batch);

  /// \brief Write a file with no rows in the partition with these values (if a file is
  /// open there, that one is closed instead). Call it last, just before Finish().
  arrow::Status WriteEmptyFile(const NullableStringMap& partition_values);

  /// \brief Close every open file and return all files written, as `add` actions
  /// (dataChange = true; callers may change it).
  arrow::Result<std::vector<Add>> Finish();

  /// \brief Delete every file written so far, also after Finish() (for a write that will
  /// not commit, or whose commit failed).
  arrow::Status Abort();

  /// \brief Return the bytes of the files closed so far.
  int64_t bytes_written() const;
  /// \brief Return the rows written so far.
  int64_t rows_written() const;

 private:
  class Impl;
  explicit DataFileWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ampdelta::delta

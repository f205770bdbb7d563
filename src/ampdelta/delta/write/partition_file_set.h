#pragma once

/// \file partition_file_set.h
/// \brief The data files one writer thread has open: one per partition, rolled by size
/// or rows, closed least recently used beyond a bound, each described as an `add` when it
/// closes. DataFileWriter fans batches out over several of these.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief Files written from the calling thread only. Not thread-safe.
class PartitionFileSet {
 public:
  /// \brief Prepare to write files of `table_schema` partitioned by `partition_columns`;
  /// file numbers start at `first_number` and step by `number_step` (so writers sharing a
  /// table name their files apart).
  static arrow::Result<std::unique_ptr<PartitionFileSet>> Make(
      std::shared_ptr<storage::ObjectStore> store,
      std::shared_ptr<arrow::Schema> table_schema,
      std::vector<std::string> partition_columns, DataFileOptions options,
      int64_t first_number = 0, int64_t number_step = 1);
  /// Deletes the files written unless Finish() returned them.
  ~PartitionFileSet();

  /// \brief Write a batch with the table schema (or one `options.prepare` turns into it).
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& batch);
  /// \brief Write a file with no rows in the partition with these values.
  arrow::Status WriteEmptyFile(const NullableStringMap& partition_values);
  /// \brief Close every open file and return all files written.
  arrow::Result<std::vector<Add>> Finish();
  /// \brief Delete every file written so far, also after Finish().
  arrow::Status Abort();

  int64_t bytes_written() const;
  int64_t rows_written() const;

 private:
  class Impl;
  explicit PartitionFileSet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ampdelta::delta

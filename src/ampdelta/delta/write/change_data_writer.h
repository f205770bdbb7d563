#pragma once

/// \file change_data_writer.h
/// \brief The change data feed (`delta.enableChangeDataFeed`): a commit that removes or
/// rewrites rows records what changed in `_change_data` files named by `cdc` actions
/// (PROTOCOL.md, "Add CDC File"). Appends and whole-file replacements need none: readers
/// infer their changes from the `add` and `remove` actions.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/write/data_file_writer.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief A row's change, as the `_change_type` column spells it.
enum class ChangeType : uint8_t { kInsert, kDelete, kUpdatePreimage, kUpdatePostimage };

/// \brief `insert`, `delete`, `update_preimage`, `update_postimage`.
const char* ChangeTypeName(ChangeType type);

/// \brief The column change data files add to the table's columns.
inline constexpr const char* kChangeTypeColumn = "_change_type";

/// \brief The folder of change data files, under the table root.
inline constexpr const char* kChangeDataFolder = "_change_data";

/// \brief Writes the rows a commit changes as change data files. Thread-compatible.
///
/// A reader that finds a `cdc` action in a commit takes that commit's changes from its
/// change data files only: once one change is recorded, every change of the commit must
/// be (inserts included).
class ChangeDataWriter {
 public:
  /// \param[in] options how files are written; `directory` and `file_prefix` are set here
  static arrow::Result<std::unique_ptr<ChangeDataWriter>> Make(
      std::shared_ptr<storage::ObjectStore> store,
      std::shared_ptr<arrow::Schema> table_schema,
      std::vector<std::string> partition_columns, DataFileOptions options);

  ~ChangeDataWriter();

  /// \brief Record `rows` (in the table's schema, or convertible to it) as changed; the
  /// materialized row tracking columns they may carry (options.row_tracking_columns) are
  /// left out (change data has no row IDs).
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& rows, ChangeType type);

  /// \brief Close the files and return them as `cdc` actions (dataChange = false).
  arrow::Result<std::vector<Cdc>> Finish();

  /// \brief Delete every file written so far (a commit that did not happen).
  arrow::Status Abort();

  /// \brief Return the rows recorded so far.
  int64_t rows_written() const;

 private:
  ChangeDataWriter(std::shared_ptr<arrow::Schema> table_schema,
                   std::shared_ptr<arrow::Schema> file_schema,
                   std::unique_ptr<DataFileWriter> files);

  std::shared_ptr<arrow::Schema> table_schema_;
  std::shared_ptr<arrow::Schema> file_schema_;
  std::unique_ptr<DataFileWriter> files_;
  std::vector<std::string> row_tracking_columns_;
};

}  // namespace ampdelta::delta

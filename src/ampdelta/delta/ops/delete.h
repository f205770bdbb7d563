#pragma once

/// \file delete.h
/// \brief DELETE: remove rows by copy-on-write (or, on tables with deletion vectors
/// enabled, by marking them), keeping what the removed files' tags record.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <arrow/result.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief Outcome of a delete.
struct DeleteResult {
  std::optional<Version> version;  // unset when nothing matched
  int64_t files_removed = 0;
  int64_t files_added = 0;
  /// Files kept with their deleted rows marked in a deletion vector (tables with
  /// `delta.enableDeletionVectors`).
  int64_t files_marked = 0;
  int64_t rows_deleted = 0;
  int64_t rows_copied = 0;
  int64_t files_skipped = 0;
};

/// \brief Delete the rows matching `predicate`: files that cannot match are untouched,
/// files that wholly match are removed, others are rewritten without the matching rows
/// (or kept with them marked in a deletion vector when the table enables them); one
/// commit.
///
/// Errors: kInvalidInput for an empty or blank predicate (deleting every row is
/// DeleteAllRows, never the result of a missing argument) or one that does not parse.
arrow::Result<DeleteResult> DeleteRows(std::shared_ptr<storage::ObjectStore> store,
                                       const std::string& predicate,
                                       const DataFileOptions& files = {},
                                       const CommitOptions& commit = {});

/// \brief Delete every row of the table in one commit (earlier versions stay readable).
arrow::Result<DeleteResult> DeleteAllRows(std::shared_ptr<storage::ObjectStore> store,
                                          const CommitOptions& commit = {});

}  // namespace ampdelta::delta

#pragma once

/// \file row_edit.h
/// \brief Rows removed from a table's files, as every operation that drops rows does it
/// (a delete, a merge's matched rows, a stream's reorg undo and takeover). The caller
/// decides which rows go; the Delta rules live here: which columns a file is read with,
/// the change feed's record of the rows that go, then the file kept with those rows
/// marked in a deletion vector, or removed and its other rows written again with their
/// row IDs (row_tracking.h).

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/write/change_data_writer.h"
#include "ampdelta/delta/write/deletion_vector_writer.h"

namespace ampdelta::delta {

/// \brief Where an edit's rows go: a TableWriter's, or a delete's own writers.
class RowSink {
 public:
  virtual ~RowSink() = default;
  /// \brief Return the writer of deletion vectors when the table marks removed rows in
  /// them, else null.
  virtual DeletionVectorWriter* deletion_vectors() = 0;
  /// \brief Return true when the table records a change data feed.
  virtual bool records_changes() const = 0;
  /// \brief Record `rows` in the change data feed as `type`.
  virtual arrow::Status RecordChange(const std::shared_ptr<arrow::RecordBatch>& rows,
                                     ChangeType type) = 0;
  /// \brief Write `rows` into the commit's new data files.
  virtual arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& rows) = 0;
};

/// \brief What an edit did to one file.
struct FileEdit {
  int64_t rows_removed = 0;
  int64_t rows_kept = 0;
  /// The file kept with its removed rows marked in a new deletion vector (owned by the
  /// RowEdit, a caller may re-tag it before staging); null otherwise.
  Add* marked = nullptr;
  /// The file removed and its kept rows (at least one) written again.
  bool rewritten = false;
};

/// \brief Rows removed from the files of one snapshot, for one commit.
class RowEdit {
 public:
  /// \brief An edit of `snapshot`'s files whose rows go to `sink`; both outlive it.
  RowEdit(const Snapshot& snapshot, RowSink* sink);

  /// \brief Return true when removed rows are only marked: deletion vectors and no change
  /// feed, so that nothing but the columns deciding which rows go need be read.
  bool marks_only() const;

  /// \brief Return true when a file that keeps some rows is rewritten (no deletion
  /// vectors): the rows Drop writes again are then needed.
  bool rewrites() const;

  /// \brief Return the rows of `file` to decide on: only the `deciding` columns when
  /// marks_only() and `deciding` is not empty, else every column with its row IDs, which
  /// rows written again keep.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Read(
      const Add& file, const std::vector<std::string>& deciding = {}) const;

  /// \brief Remove the rows of `rows` (from Read) where `keep` is false: recorded in the
  /// change feed as `change`, then marked, or the file removed and its kept rows written
  /// again (`rewrite`'s rows instead of `rows`' when given: a merge's, in its new
  /// schema). Nothing happens when `keep` removes no row; a null in `keep` is an error.
  arrow::Result<FileEdit> Drop(const Add& file,
                               const std::shared_ptr<arrow::RecordBatch>& rows,
                               const std::shared_ptr<arrow::Array>& keep,
                               ChangeType change = ChangeType::kDelete,
                               std::shared_ptr<arrow::RecordBatch> rewrite = nullptr);

  /// \brief Declare `file` read by the commit although no row of it goes (Drop declares
  /// the files it changes).
  void AlsoRead(const Add& file);

  /// \brief The removes of the files Drop changed, the table-relative keys of the files
  /// read, and the marked files that replace some of the removed ones.
  std::vector<Remove>& removes() { return removes_; }
  std::vector<std::string>& read_keys() { return read_; }
  std::vector<Add> TakeMarked();

 private:
  const Snapshot& snapshot_;
  RowSink* sink_;
  std::vector<Remove> removes_;
  std::vector<std::string> read_;
  std::deque<Add> marked_;  // a deque: FileEdit::marked stays valid as files are added
};

}  // namespace ampdelta::delta

#include "ampdelta/delta/write/row_edit.h"

#include <utility>

#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/delta/read/scan.h"

namespace ampdelta::delta {

namespace {

arrow::Result<std::shared_ptr<arrow::RecordBatch>> Filtered(
    const std::shared_ptr<arrow::RecordBatch>& rows, const arrow::Datum& mask) {
  ARROW_ASSIGN_OR_RAISE(arrow::Datum kept, arrow::compute::Filter(rows, mask));
  return kept.record_batch();
}

}  // namespace

RowEdit::RowEdit(const Snapshot& snapshot, RowSink* sink)
    : snapshot_(snapshot), sink_(sink) {}

bool RowEdit::marks_only() const {
  return sink_->deletion_vectors() != nullptr && !sink_->records_changes();
}

bool RowEdit::rewrites() const { return sink_->deletion_vectors() == nullptr; }

arrow::Result<std::shared_ptr<arrow::RecordBatch>> RowEdit::Read(
    const Add& file, const std::vector<std::string>& deciding) const {
  ARROW_ASSIGN_OR_RAISE(auto table, marks_only() && !deciding.empty()
                                        ? ReadDataFile(snapshot_, file, deciding)
                                        : ReadDataFileWithRowIds(snapshot_, file));
  return table->CombineChunksToBatch();
}

arrow::Result<FileEdit> RowEdit::Drop(const Add& file,
                                      const std::shared_ptr<arrow::RecordBatch>& rows,
                                      const std::shared_ptr<arrow::Array>& keep,
                                      ChangeType change,
                                      std::shared_ptr<arrow::RecordBatch> rewrite) {
  FileEdit edit;
  if (keep->null_count() != 0) {
    // Filter drops a null, a deletion vector marks it, the change feed would miss it.
    return arrow::Status::Invalid("a row edit's keep mask holds nulls: decide each row");
  }
  ARROW_ASSIGN_OR_RAISE(auto kept, Filtered(rows, keep));
  edit.rows_kept = kept->num_rows();
  edit.rows_removed = rows->num_rows() - edit.rows_kept;
  if (edit.rows_removed == 0) return edit;
  removes_.push_back(RemoveFor(file));
  read_.push_back(snapshot_.FileKey(file.path));
  if (sink_->records_changes()) {
    ARROW_ASSIGN_OR_RAISE(arrow::Datum gone,
                          arrow::compute::CallFunction("invert", {keep}));
    ARROW_ASSIGN_OR_RAISE(auto removed, Filtered(rows, gone));
    ARROW_RETURN_NOT_OK(sink_->RecordChange(removed, change));
  }
  if (edit.rows_kept == 0) return edit;
  if (DeletionVectorWriter* vectors = sink_->deletion_vectors()) {
    ARROW_ASSIGN_OR_RAISE(Add marked, vectors->MarkDeleted(file, *keep));
    marked_.push_back(std::move(marked));
    edit.marked = &marked_.back();
    return edit;
  }
  if (rewrite != nullptr) {
    ARROW_ASSIGN_OR_RAISE(kept, Filtered(rewrite, keep));
  }
  ARROW_RETURN_NOT_OK(sink_->Write(kept));
  edit.rewritten = true;
  return edit;
}

void RowEdit::AlsoRead(const Add& file) { read_.push_back(snapshot_.FileKey(file.path)); }

std::vector<Add> RowEdit::TakeMarked() {
  std::vector<Add> marked(std::make_move_iterator(marked_.begin()),
                          std::make_move_iterator(marked_.end()));
  marked_.clear();
  return marked;
}

}  // namespace ampdelta::delta

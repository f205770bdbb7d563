#include "ampdelta/delta/ops/delete.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/read/predicate.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/change_data_writer.h"
#include "ampdelta/delta/write/data_file_writer.h"
#include "ampdelta/delta/write/deletion_vector_writer.h"
#include "ampdelta/delta/write/file_tags.h"
#include "ampdelta/delta/write/row_edit.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

namespace {

// Where a delete's edited rows go: its own writers (a delete writes no new rows, so it
// needs no TableWriter).
class DeleteSink : public RowSink {
 public:
  DeleteSink(DataFileWriter* files, ChangeDataWriter* changes,
             DeletionVectorWriter* deletion_vectors)
      : files_(files), changes_(changes), deletion_vectors_(deletion_vectors) {}

  DeletionVectorWriter* deletion_vectors() override { return deletion_vectors_; }
  bool records_changes() const override { return changes_ != nullptr; }
  arrow::Status RecordChange(const std::shared_ptr<arrow::RecordBatch>& rows,
                             ChangeType type) override {
    return changes_->Write(rows, type);
  }
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& rows) override {
    return files_->Write(rows);
  }

 private:
  DataFileWriter* files_;
  ChangeDataWriter* changes_;
  DeletionVectorWriter* deletion_vectors_;
};

// The files a delete touches, in the table's order, classified by their statistics and
// partition values before any is read.
struct DeletePlan {
  std::vector<std::pair<const Add*, FileMatch>> files;  // kAll or kSome
  int64_t files_skipped = 0;
};

DeletePlan PlanDelete(const Snapshot& snapshot,
                      const std::optional<Predicate>& predicate) {
  DeletePlan plan;
  for (const auto& file : snapshot.files()) {
    const FileMatch match = predicate
                                ? predicate->Classify(file, snapshot.partition_columns())
                                : FileMatch::kAll;
    if (match == FileMatch::kNone) {
      ++plan.files_skipped;
    } else {
      plan.files.emplace_back(&file, match);
    }
  }
  return plan;
}

// A delete's execution: its writers, what it removes, its commit. Every failure deletes
// what it wrote.
class DeleteRun {
 public:
  static arrow::Result<std::unique_ptr<DeleteRun>> Open(
      std::shared_ptr<storage::ObjectStore> store,
      std::shared_ptr<const Snapshot> snapshot, const DataFileOptions& file_options) {
    auto run = std::unique_ptr<DeleteRun>(new DeleteRun(store, snapshot));
    ARROW_ASSIGN_OR_RAISE(run->lease_, WriteLease::Acquire(store));
    DataFileOptions options = FileOptionsForTable(snapshot.get(), file_options);
    options.file_token = run->lease_->token();
    // With the change data feed on, the deleted rows are recorded, whole files' too (a
    // commit with change data is read from its change data alone).
    if (snapshot->properties().enable_change_data_feed) {
      ARROW_ASSIGN_OR_RAISE(
          run->changes_, ChangeDataWriter::Make(store, snapshot->schema(),
                                                snapshot->partition_columns(), options));
    }
    ARROW_ASSIGN_OR_RAISE(run->files_, DataFileWriter::Make(store, snapshot->schema(),
                                                            snapshot->partition_columns(),
                                                            std::move(options)));
    // With deletion vectors on, a partly deleted file stays with its rows marked.
    if (WritesDeletionVectors(*snapshot)) {
      run->vectors_ = std::make_unique<DeletionVectorWriter>(store, run->lease_->token());
    }
    run->sink_ = std::make_unique<DeleteSink>(run->files_.get(), run->changes_.get(),
                                              run->vectors_.get());
    run->edit_ = std::make_unique<RowEdit>(*snapshot, run->sink_.get());
    return run;
  }

  // Run `plan` and commit it; on any failure the files written so far are deleted.
  arrow::Result<DeleteResult> Execute(const DeletePlan& plan,
                                      const std::optional<Predicate>& predicate,
                                      const std::optional<std::string>& predicate_text,
                                      const CommitOptions& commit_options) {
    result_.files_skipped = plan.files_skipped;
    auto done = ExecuteOrFail(plan, predicate, predicate_text, commit_options);
    if (!done.ok() || !done->version) Abort();
    return done;
  }

 private:
  DeleteRun(std::shared_ptr<storage::ObjectStore> store,
            std::shared_ptr<const Snapshot> snapshot)
      : store_(std::move(store)), snapshot_(std::move(snapshot)) {}

  arrow::Result<DeleteResult> ExecuteOrFail(
      const DeletePlan& plan, const std::optional<Predicate>& predicate,
      const std::optional<std::string>& predicate_text,
      const CommitOptions& commit_options) {
    for (const auto& [file, match] : plan.files) {
      read_.push_back(snapshot_->FileKey(file->path));
      ARROW_RETURN_NOT_OK(match == FileMatch::kAll ? RemoveWhole(*file)
                                                   : RemoveSome(*file, *predicate));
    }
    ARROW_ASSIGN_OR_RAISE(auto adds, FinishFiles());
    std::vector<Cdc> cdc;
    if (changes_) {
      ARROW_ASSIGN_OR_RAISE(cdc, changes_->Finish());
    }
    // Only 0-row files matched (a streamed table emptied before): nothing changes.
    if (result_.rows_deleted == 0 && !row_count_unknown_) return result_;
    std::vector<Add> marked = edit_->TakeMarked();
    for (auto& remove : edit_->removes()) removes_.push_back(std::move(remove));
    if (removes_.empty()) return result_;
    result_.files_removed = static_cast<int64_t>(removes_.size() - marked.size());
    result_.files_added = static_cast<int64_t>(adds.size());
    result_.files_marked = static_cast<int64_t>(marked.size());
    for (auto& add : marked) adds.push_back(std::move(add));
    ARROW_RETURN_NOT_OK(CheckDeletionVectorsKept());
    return Commit(std::move(adds), std::move(cdc), predicate_text, commit_options);
  }

  // Every row of `file` goes: the file is removed, its rows counted (and recorded).
  arrow::Status RemoveWhole(const Add& file) {
    if (changes_) {
      // The change data holds the file's rows, which counts them exactly.
      ARROW_ASSIGN_OR_RAISE(auto table, ReadDataFile(*snapshot_, file));
      ARROW_ASSIGN_OR_RAISE(auto rows, table->CombineChunksToBatch());
      if (rows->num_rows() == 0) return arrow::Status::OK();
      ARROW_RETURN_NOT_OK(changes_->Write(rows, ChangeType::kDelete));
      result_.rows_deleted += rows->num_rows();
    } else if (const auto records = StatsNumRecords(file)) {
      result_.rows_deleted +=
          *records - (file.deletion_vector ? file.deletion_vector->cardinality : 0);
    } else {
      row_count_unknown_ = true;
    }
    removes_.push_back(RemoveFor(file));
    if (file.tags && !file.tags->empty()) {
      rewritten_.push_back(&file);
      if (emptied_tagged_ == nullptr) emptied_tagged_ = &file;
    }
    return arrow::Status::OK();
  }

  // The rows of `file` matching `predicate` go (row_edit.h): marked, or the file
  // rewritten without them; none when its statistics were loose.
  arrow::Status RemoveSome(const Add& file, const Predicate& predicate) {
    ARROW_ASSIGN_OR_RAISE(auto batch, edit_->Read(file, predicate.columns()));
    ARROW_ASSIGN_OR_RAISE(auto matches, predicate.Evaluate(*batch));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum keep,
                          arrow::compute::CallFunction("invert", {matches}));
    ARROW_ASSIGN_OR_RAISE(const FileEdit done,
                          edit_->Drop(file, batch, keep.make_array()));
    result_.rows_deleted += done.rows_removed;
    if (done.rows_removed > 0 && done.marked == nullptr) {  // rewritten, or emptied
      result_.rows_copied += done.rows_kept;
      rewritten_.push_back(&file);
    }
    return arrow::Status::OK();
  }

  // The rewritten files, with the tags of the files they replace: a stream's recorded
  // block ranges are progress, not rows, and a delete is respected, never reloaded. With
  // no row left to carry the tags, an empty file does.
  arrow::Result<std::vector<Add>> FinishFiles() {
    const auto tags = MergeFileTags(rewritten_);
    if (files_->rows_written() == 0 && emptied_tagged_ != nullptr && tags &&
        !tags->empty()) {
      ARROW_RETURN_NOT_OK(files_->WriteEmptyFile(emptied_tagged_->partition_values));
    }
    ARROW_ASSIGN_OR_RAISE(auto adds, files_->Finish());
    for (auto& add : adds) add.tags = tags;
    return adds;
  }

  // A vacuum that judged this delete dead may have taken its deletion vectors.
  arrow::Status CheckDeletionVectorsKept() {
    if (!vectors_) return arrow::Status::OK();
    for (const auto& key : vectors_->files()) {
      auto head = store_->Head(key);
      if (!head.ok()) {
        return head.status().WithMessage(
            "deletion vector ", key,
            " of this delete is gone before its commit: ", head.status().message());
      }
    }
    return arrow::Status::OK();
  }

  arrow::Result<DeleteResult> Commit(std::vector<Add> adds, std::vector<Cdc> cdc,
                                     const std::optional<std::string>& predicate_text,
                                     const CommitOptions& commit_options) {
    Transaction txn(store_, snapshot_, commit_options);
    txn.AddFiles(std::move(adds));
    txn.RemoveFiles(std::move(removes_));
    txn.AddChangeFiles(std::move(cdc));
    txn.ReadFiles(read_);
    if (!predicate_text) txn.ReadWholeTable();
    std::map<std::string, std::string> parameters;
    parameters["predicate"] =
        nlohmann::json(std::vector<std::string>{predicate_text.value_or("true")})
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    txn.SetOperation("DELETE", parameters);
    txn.SetOperationMetrics(
        {{"numRemovedFiles", std::to_string(result_.files_removed)},
         {"numAddedFiles", std::to_string(result_.files_added)},
         {"numDeletedRows", std::to_string(result_.rows_deleted)},
         {"numDeletionVectorsAdded", std::to_string(result_.files_marked)},
         {"numCopiedRows", std::to_string(result_.rows_copied)}});
    ARROW_ASSIGN_OR_RAISE(auto committed, txn.Commit());
    result_.version = committed.version;
    return result_;
  }

  void Abort() {
    (void)files_->Abort();
    if (changes_) (void)changes_->Abort();
    if (vectors_) (void)vectors_->Abort();
  }

  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::shared_ptr<WriteLease> lease_;
  std::unique_ptr<ChangeDataWriter> changes_;
  std::unique_ptr<DataFileWriter> files_;
  std::unique_ptr<DeletionVectorWriter> vectors_;
  std::unique_ptr<DeleteSink> sink_;
  std::unique_ptr<RowEdit> edit_;
  DeleteResult result_;
  std::vector<Remove> removes_;
  std::vector<std::string> read_;
  std::vector<const Add*> rewritten_;
  const Add* emptied_tagged_ = nullptr;
  bool row_count_unknown_ = false;  // a whole file removed without numRecords
};

// A delete of the rows matching `predicate_text`, or of every row when it is unset.
arrow::Result<DeleteResult> Delete(std::shared_ptr<storage::ObjectStore> store,
                                   const std::optional<std::string>& predicate_text,
                                   const DataFileOptions& file_options,
                                   const CommitOptions& commit_options) {
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<const Snapshot> snapshot, Snapshot::Load(store));
  ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(),
                                          *snapshot->schema()));
  std::optional<Predicate> predicate;
  if (predicate_text) {
    ARROW_ASSIGN_OR_RAISE(predicate,
                          Predicate::Parse(*predicate_text, snapshot->schema()));
  }
  const DeletePlan plan = PlanDelete(*snapshot, predicate);
  ARROW_ASSIGN_OR_RAISE(auto run, DeleteRun::Open(store, snapshot, file_options));
  return run->Execute(plan, predicate, predicate_text, commit_options);
}

}  // namespace

arrow::Result<DeleteResult> DeleteRows(std::shared_ptr<storage::ObjectStore> store,
                                       const std::string& predicate,
                                       const DataFileOptions& files,
                                       const CommitOptions& commit) {
  if (predicate.find_first_not_of(" \t\r\n") == std::string::npos) {
    return InvalidInputError(
        "the delete predicate is empty: give one (e.g. 'block_num >= 100'), "
        "or ask explicitly to delete every row");
  }
  return Delete(std::move(store), predicate, files, commit);
}

arrow::Result<DeleteResult> DeleteAllRows(std::shared_ptr<storage::ObjectStore> store,
                                          const CommitOptions& commit) {
  return Delete(std::move(store), std::nullopt, {}, commit);
}

}  // namespace ampdelta::delta

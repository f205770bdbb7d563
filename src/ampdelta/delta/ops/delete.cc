#include "ampdelta/delta/ops/delete.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

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

// A delete of the rows matching `predicate_text`, or of every row when it is unset.
arrow::Result<DeleteResult> Delete(std::shared_ptr<storage::ObjectStore> store,
                                   const std::optional<std::string>& predicate_text,
                                   const DataFileOptions& file_options,
                                   const CommitOptions& commit_options) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Snapshot::Load(store));
  ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(),
                                          *snapshot->schema()));
  std::optional<Predicate> predicate;
  if (predicate_text) {
    ARROW_ASSIGN_OR_RAISE(predicate,
                          Predicate::Parse(*predicate_text, snapshot->schema()));
  }
  DeleteResult result;
  Transaction txn(store, snapshot, commit_options);
  ARROW_ASSIGN_OR_RAISE(auto lease, WriteLease::Acquire(store));
  DataFileOptions options = FileOptionsForTable(snapshot.get(), file_options);
  options.file_token = lease->token();
  // With the change data feed on, the deleted rows are recorded, whole files' too (a
  // commit with change data is read from its change data alone).
  std::unique_ptr<ChangeDataWriter> changes;
  if (snapshot->properties().enable_change_data_feed) {
    ARROW_ASSIGN_OR_RAISE(changes,
                          ChangeDataWriter::Make(store, snapshot->schema(),
                                                 snapshot->partition_columns(), options));
  }
  ARROW_ASSIGN_OR_RAISE(auto writer, DataFileWriter::Make(store, snapshot->schema(),
                                                          snapshot->partition_columns(),
                                                          std::move(options)));
  // With deletion vectors on, a partly deleted file stays with its rows marked.
  std::unique_ptr<DeletionVectorWriter> deletion_vectors;
  if (WritesDeletionVectors(*snapshot)) {
    deletion_vectors = std::make_unique<DeletionVectorWriter>(store, lease->token());
  }
  const auto abort = [&] {
    (void)writer->Abort();
    if (changes) (void)changes->Abort();
    if (deletion_vectors) (void)deletion_vectors->Abort();
  };
  DeleteSink sink(writer.get(), changes.get(), deletion_vectors.get());
  RowEdit edit(*snapshot, &sink);
  std::vector<Remove> removes;
  std::vector<std::string> read;
  // The files whose tags the delete's output keeps: a stream's recorded block ranges are
  // progress, not rows, and a delete is respected, never reloaded.
  std::vector<const Add*> rewritten;
  const Add* emptied_tagged = nullptr;
  bool row_count_unknown = false;  // a whole file removed without numRecords
  for (const auto& file : snapshot->files()) {
    const FileMatch match = predicate
                                ? predicate->Classify(file, snapshot->partition_columns())
                                : FileMatch::kAll;
    if (match == FileMatch::kNone) {
      ++result.files_skipped;
      continue;
    }
    read.push_back(snapshot->FileKey(file.path));
    if (match == FileMatch::kAll) {
      if (changes) {
        // The change data holds the file's rows, which counts them exactly.
        ARROW_ASSIGN_OR_RAISE(auto table, ReadDataFile(*snapshot, file));
        ARROW_ASSIGN_OR_RAISE(auto rows, table->CombineChunksToBatch());
        if (rows->num_rows() == 0) continue;
        ARROW_RETURN_NOT_OK(changes->Write(rows, ChangeType::kDelete));
        result.rows_deleted += rows->num_rows();
      } else {
        auto stats = file.stats ? nlohmann::json::parse(*file.stats, nullptr, false)
                                : nlohmann::json();
        if (stats.is_object() && stats.contains("numRecords") &&
            stats["numRecords"].is_number_integer()) {
          result.rows_deleted +=
              stats["numRecords"].get<int64_t>() -
              (file.deletion_vector ? file.deletion_vector->cardinality : 0);
        } else {
          row_count_unknown = true;
        }
      }
      removes.push_back(RemoveFor(file));
      if (file.tags && !file.tags->empty()) {
        rewritten.push_back(&file);
        if (emptied_tagged == nullptr) emptied_tagged = &file;
      }
      continue;
    }
    // The matching rows go (row_edit.h): marked, or the file rewritten without them.
    ARROW_ASSIGN_OR_RAISE(auto batch, edit.Read(file, predicate->columns()));
    ARROW_ASSIGN_OR_RAISE(auto matches, predicate->Evaluate(*batch));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum keep,
                          arrow::compute::CallFunction("invert", {matches}));
    ARROW_ASSIGN_OR_RAISE(const FileEdit done, edit.Drop(file, batch, keep.make_array()));
    // None: statistics were loose, and the file stays as it is.
    result.rows_deleted += done.rows_removed;
    if (done.rows_removed > 0 && done.marked == nullptr) {  // rewritten, or emptied
      result.rows_copied += done.rows_kept;
      rewritten.push_back(&file);
    }
  }
  const auto tags = MergeFileTags(rewritten);
  if (writer->rows_written() == 0 && emptied_tagged != nullptr && tags &&
      !tags->empty()) {
    // No row is left to carry the tags: an empty file does.
    ARROW_RETURN_NOT_OK(writer->WriteEmptyFile(emptied_tagged->partition_values));
  }
  ARROW_ASSIGN_OR_RAISE(auto adds, writer->Finish());
  std::vector<Cdc> cdc;
  if (changes) {
    ARROW_ASSIGN_OR_RAISE(cdc, changes->Finish());
  }
  if (result.rows_deleted == 0 && !row_count_unknown) {
    // Only 0-row files matched (a streamed table emptied before): nothing changes.
    abort();
    return result;
  }
  // The copies keep what their sources' tags say (a stream's recorded block ranges).
  for (auto& add : adds) add.tags = tags;
  std::vector<Add> marked = edit.TakeMarked();
  for (auto& remove : edit.removes()) removes.push_back(std::move(remove));
  if (removes.empty()) {
    abort();
    return result;
  }
  result.files_removed = static_cast<int64_t>(removes.size() - marked.size());
  result.files_added = static_cast<int64_t>(adds.size());
  result.files_marked = static_cast<int64_t>(marked.size());
  for (auto& add : marked) adds.push_back(std::move(add));
  if (deletion_vectors) {
    // A vacuum that judged this delete dead may have taken its deletion vectors.
    for (const auto& key : deletion_vectors->files()) {
      auto head = store->Head(key);
      if (!head.ok()) {
        abort();
        return head.status().WithMessage(
            "deletion vector ", key,
            " of this delete is gone before its commit: ", head.status().message());
      }
    }
  }
  txn.AddFiles(std::move(adds));
  txn.RemoveFiles(std::move(removes));
  txn.AddChangeFiles(std::move(cdc));
  txn.ReadFiles(read);
  if (!predicate) txn.ReadWholeTable();
  std::map<std::string, std::string> parameters;
  parameters["predicate"] =
      nlohmann::json(std::vector<std::string>{predicate_text.value_or("true")})
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  txn.SetOperation("DELETE", parameters);
  txn.SetOperationMetrics(
      {{"numRemovedFiles", std::to_string(result.files_removed)},
       {"numAddedFiles", std::to_string(result.files_added)},
       {"numDeletedRows", std::to_string(result.rows_deleted)},
       {"numDeletionVectorsAdded", std::to_string(result.files_marked)},
       {"numCopiedRows", std::to_string(result.rows_copied)}});
  auto committed = txn.Commit();
  if (!committed.ok()) {
    abort();
    return committed.status();
  }
  result.version = committed->version;
  return result;
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

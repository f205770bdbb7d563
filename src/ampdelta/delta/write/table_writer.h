#pragma once

/// \file table_writer.h
/// \brief Write a stream of batches into a table as one commit: create, append,
/// overwrite, or do nothing / fail when the table exists. Data files stream out as
/// batches arrive; nothing is visible to readers until the single commit at the end.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/delta/write/change_data_writer.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/delta/write/deletion_vector_writer.h"
#include "ampdelta/delta/write/row_edit.h"
#include "ampdelta/delta/write/table_write_options.h"

namespace ampdelta::delta {

/// \brief Outcome of a write.
struct TableWriteResult {
  /// False when the table existed and the mode was ignore.
  bool committed = false;
  CommitReport commit;
  int64_t rows = 0;
  int64_t bytes = 0;
  int64_t files_added = 0;
  int64_t files_removed = 0;
  /// Files kept with rows marked in a new deletion vector (not in the two counts above).
  int64_t files_marked = 0;
};

/// \brief One write operation; the sink of the rows its RowEdit rewrites.
/// Thread-compatible.
class TableWriter : public RowSink {
 public:
  /// \brief Prepare a write of batches with `source_schema` into the table at `store`.
  ///
  /// Errors (the table is untouched): kInvalidInput for partition columns missing from
  /// the data or differing from the table's, schema differences with merge_schema=false,
  /// or types Delta cannot store; kUnsupportedFeature for tables ampdelta cannot write;
  /// Invalid when the table exists and the mode is error.
  static arrow::Result<std::unique_ptr<TableWriter>> Open(
      std::shared_ptr<storage::ObjectStore> store,
      const std::shared_ptr<arrow::Schema>& source_schema, TableWriteOptions options);

  ~TableWriter() override;

  /// \brief Return true when nothing will be written (mode ignore, table exists).
  bool skipped() const;
  /// \brief Return the schema the table will have after the commit.
  const std::shared_ptr<arrow::Schema>& table_schema() const;
  /// \brief Return the snapshot the write is based on (nullptr for a new table).
  const std::shared_ptr<const Snapshot>& read_snapshot() const;

  /// \brief Convert and write a batch (values that do not fit fail naming column and
  /// value).
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& batch) override;

  /// \brief Return `batch` in the table schema as Write writes it: values for the
  /// identity columns it lacks, generated columns it lacks computed (a merge conforms its
  /// source so before it matches rows; Write keeps what such a batch holds).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Conform(
      const std::shared_ptr<arrow::RecordBatch>& batch);

  /// \brief Return the identity columns this write gives values to.
  std::vector<std::string> generated_identity_columns() const;

  /// \brief Remove `files` in the same commit (copy-on-write rewrites), declaring the
  /// table-relative `read_keys` whose content the result depends on.
  void StageRemoves(std::vector<Remove> files, std::vector<std::string> read_keys);

  /// \brief Return the writer of deletion vectors when the table marks deleted rows in
  /// them (WritesDeletionVectors; never for an overwrite), else null. The adds it returns
  /// go to StageAdds, with the removes of the files they replace; its files are deleted
  /// when the write does not commit.
  DeletionVectorWriter* deletion_vectors() override;

  /// \brief Return true when the table records a change data feed: a caller that removes
  /// or rewrites rows must then report them with RecordChange().
  bool records_changes() const override;

  /// \brief Record rows this commit deletes, updates or (alongside recorded deletes)
  /// inserts in the change data feed; nothing when the table has none. Rows written
  /// with Write() are not recorded by themselves: a commit that records any change must
  /// record every change (change_data_writer.h).
  arrow::Status RecordChange(const std::shared_ptr<arrow::RecordBatch>& rows,
                             ChangeType type) override;

  /// \brief Commit an application transaction with the data (exactly-once streaming).
  void SetAppTransaction(SetTransaction txn);

  /// \brief Also record `txn` (TableWriteOptions::transaction_records), unless a record
  /// of its app id is already there.
  void AddTransactionRecord(SetTransaction txn);

  /// \brief Commit domain metadata with the data (replacing any set for that domain).
  void SetDomainMetadata(DomainMetadata domain);

  /// \brief Set the tags (`add.tags`) of every data file this write adds.
  void SetFileTags(NullableStringMap tags);

  /// \brief Add a file without rows (in the partition of nulls on a partitioned table),
  /// so that a write of no rows still leaves its file tags in the table. Call it last,
  /// before Commit().
  arrow::Status WriteEmptyFile();

  /// \brief Stage what `edit` did (its removes, read files and marked files) in this
  /// commit.
  void StageEdit(RowEdit* edit);

  /// \brief Add `files` as they are (e.g. re-tagged existing files, dataChange=false) in
  /// the same commit.
  void StageAdds(std::vector<Add> files);

  /// \brief Fail the commit when a concurrent commit removed one of these files as a data
  /// change (Transaction::WatchRemovals).
  void WatchRemovals(std::set<std::string> keys, std::set<std::string> tag_keys = {});

  /// \brief Report extra commitInfo.operationMetrics (merge counts).
  void AddOperationMetrics(const std::map<std::string, std::string>& metrics);

  /// \brief Close the data files and commit them.
  arrow::Result<TableWriteResult> Commit();

  /// \brief Delete the data files written so far; the table stays as it was. After a
  /// successful Commit() this does nothing.
  arrow::Status Abort();

  int64_t rows_written() const;
  int64_t bytes_written() const;

 private:
  class Impl;
  explicit TableWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// \brief Return data file options with the table's statistics and size properties
/// applied.
DataFileOptions FileOptionsForTable(const Snapshot* snapshot, DataFileOptions base);

}  // namespace ampdelta::delta

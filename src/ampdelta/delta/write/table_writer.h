#pragma once

/// \file table_writer.h
/// \brief Write a stream of batches into a table as one commit: create, append,
/// overwrite, or do nothing / fail when the table exists. Data files stream out as
/// batches arrive; nothing is visible to readers until the single commit at the end.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/change_data_writer.h"
#include "ampdelta/delta/write/data_file_writer.h"
#include "ampdelta/delta/write/deletion_vector_writer.h"

namespace ampdelta::delta {

/// \brief What to do when the table exists (delta-rs save modes).
enum class SaveMode : uint8_t {
  kAppend,
  /// Replace every row of the table with the written rows (one commit; older versions
  /// stay readable).
  kOverwrite,
  /// Fail if the table exists.
  kErrorIfExists,
  /// Write nothing if the table exists.
  kIgnore,
};

/// \brief Parse `append`, `overwrite`, `error`, `ignore`.
arrow::Result<SaveMode> ParseSaveMode(const std::string& mode);

/// \brief Options of one write.
struct TableWriteOptions {
  SaveMode mode = SaveMode::kAppend;
  /// Partition columns: for a new table; for an existing one they must match.
  std::vector<std::string> partition_by;
  /// Allow new columns (added as nullable, in the same commit). When false any schema
  /// difference fails, naming the columns.
  bool merge_schema = true;
  /// How unsigned and wide integers of columns this write creates are stored (existing
  /// columns keep their type: values are converted into it when they fit).
  TypeMapping types;
  /// Allow an overwrite to replace the table's schema and partitioning.
  bool overwrite_schema = false;
  DataFileOptions files;
  /// Table properties of a new table (`delta.*`).
  std::map<std::string, std::string> configuration;
  std::optional<std::string> name;
  std::optional<std::string> description;
  /// Writer features the table must have after this commit (added when missing).
  std::vector<std::string> writer_features;
  /// The engines that must read the table (reader_support.h): a write whose table would
  /// need a reader feature one of them cannot read is refused before it writes.
  std::vector<std::string> readers;
  /// Domain metadata committed with the data (needs writer feature `domainMetadata`).
  std::vector<DomainMetadata> domains;
  /// Liquid clustering (clustering.h): the columns to cluster by, recorded in the table
  /// (which gains the `clustering` writer feature) when they differ from its own; empty
  /// turns clustering off. Unset: the table keeps what it has.
  std::optional<std::vector<std::string>> cluster_by;
  /// Committed atomically with the data (exactly-once streaming).
  std::optional<SetTransaction> app_transaction;
  /// More `txn` actions to record (Transaction::AddTransactionRecord).
  std::vector<SetTransaction> transaction_records;
  /// Transaction::ConflictWithAppIds.
  std::function<bool(const std::string&)> overlapping_app_ids;
  /// Transaction::SupersedeAppIds.
  std::set<std::string> superseded_app_ids;
  /// Transaction::ConflictWithAdds.
  std::function<bool(const Add&)> claimed_adds;
  /// The table as last seen (a stream's previous commit), so Open need not read the log
  /// again; a stale snapshot is fine, the commit rebases over newer versions.
  std::shared_ptr<const Snapshot> read_snapshot;
  /// The caller saw no table (and read_snapshot is null): commit as the table's creator,
  /// so a table someone else created meanwhile is a conflict, never silently appended to.
  bool expect_new_table = false;
  CommitOptions commit;
  /// commitInfo.operation and extra operationParameters.
  std::string operation = "WRITE";
  std::map<std::string, std::string> operation_parameters;
  /// Serializable isolation (Transaction::ConflictWithConcurrentAppends).
  bool serializable = false;
  /// The rows written are the table's own (an undo's or a takeover's rewrite): identity
  /// columns keep the values they hold (identity_columns.h).
  bool rewrites_rows = false;
  /// The write lease the data files are written under (a stream keeps one across its
  /// commits); when null the writer holds its own until it commits or aborts.
  std::shared_ptr<WriteLease> lease;
};

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

/// \brief One write operation. Thread-compatible.
class TableWriter {
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

  ~TableWriter();

  /// \brief Return true when nothing will be written (mode ignore, table exists).
  bool skipped() const;
  /// \brief Return the schema the table will have after the commit.
  const std::shared_ptr<arrow::Schema>& table_schema() const;
  /// \brief Return the snapshot the write is based on (nullptr for a new table).
  const std::shared_ptr<const Snapshot>& read_snapshot() const;

  /// \brief Convert and write a batch (values that do not fit fail naming column and
  /// value).
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& batch);

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
  DeletionVectorWriter* deletion_vectors();

  /// \brief Return true when the table records a change data feed: a caller that removes
  /// or rewrites rows must then report them with RecordChange().
  bool records_changes() const;

  /// \brief Record rows this commit deletes, updates or (alongside recorded deletes)
  /// inserts in the change data feed; nothing when the table has none. Rows written
  /// with Write() are not recorded by themselves: a commit that records any change must
  /// record every change (change_data_writer.h).
  arrow::Status RecordChange(const std::shared_ptr<arrow::RecordBatch>& rows,
                             ChangeType type);

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

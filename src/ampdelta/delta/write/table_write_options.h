#pragma once

/// \file table_write_options.h
/// \brief What one table write is asked to do (save mode, partitioning, schema changes,
/// what commits with the data), apart from the writer so planning can take it without
/// including the writer.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/data_file_options.h"

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
  std::vector<TableFeature> writer_features;
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

}  // namespace ampdelta::delta

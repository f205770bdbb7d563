#pragma once

/// \file transaction.h
/// \brief Optimistic transactions: stage actions against a snapshot, commit
/// `_delta_log/<version>.json` with create-if-absent, and on a lost race check the
/// winning commits for conflicts and retry at the next version without rewriting data
/// files.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/committer.h"
#include "ampdelta/delta/txn/conflict_checker.h"
#include "ampdelta/storage/object_store.h"
#include "ampdelta/util/backoff.h"

namespace ampdelta::delta {

/// \brief The maintenance a commit made due (kernel's post-commit hooks): Commit runs it
/// when CommitOptions::post_commit_hooks, else its caller may
/// (Transaction::RunPostCommit).
struct PostCommitWork {
  Version version = -1;
  /// Write a checkpoint at `version`: delta.checkpointInterval reached, or a
  /// _last_checkpoint naming no checkpoint to repair.
  bool checkpoint = false;
  /// After the checkpoint, delete expired log files (delta.enableExpiredLogCleanup), at
  /// most as often as LogCleanupSchedule allows.
  bool log_cleanup = false;
  int64_t log_retention_ms = 0;
};

/// \brief What happened on commit.
struct CommitReport {
  Version version = 0;
  /// Attempts made (1 when there was no race).
  int attempts = 1;
  /// What the commit made due, whether or not it was run.
  PostCommitWork post_commit;
  /// A checkpoint was written after the commit.
  bool checkpoint_written = false;
  /// The table at the new version, when a post-commit step built it (a checkpoint);
  /// a caller that follows the table can update from it instead of replaying the commit.
  std::shared_ptr<const Snapshot> snapshot_after;
  /// Expired log files deleted after the commit.
  int64_t log_files_cleaned = 0;
  /// The post-commit step that failed, named in the message (OK: none); the commit
  /// itself stands.
  arrow::Status post_commit_status;
};

/// \brief When this process looks for a table's expired log files again: cleanup lists
/// the whole log, so running it at every checkpoint would make a long stream's
/// checkpoints cost the log's length (100,000 entries at version 100,000); once per
/// thousandth of the retention per table (43 minutes at the default 30 days) deletes no
/// file more than 0.1% of its retention late. Thread-safe.
class LogCleanupSchedule {
 public:
  /// \brief The schedule every transaction of this process shares.
  static LogCleanupSchedule& ForProcess();
  /// \brief Return true (and note the run) when the table at `root` is due at `now_ms`.
  bool Due(const std::string& root, int64_t retention_ms, int64_t now_ms);

 private:
  std::mutex mutex_;
  std::map<std::string, int64_t> last_run_ms_;
};

/// \brief Commit settings.
struct CommitOptions {
  /// Give up after this many attempts (each lost race is one attempt).
  int max_attempts = 16;
  /// Back-off between attempts: first delay, doubled each time, capped.
  std::chrono::milliseconds initial_backoff{5};
  std::chrono::milliseconds max_backoff{1000};
  /// How a back-off waits (tests pass a recorder).
  SleepFunction sleep = SleepFor;
  /// When set and true during a back-off, the commit gives up (arrow Cancelled) once
  /// the commits that won show none of its attempts landed.
  const std::atomic<bool>* stop = nullptr;
  /// Run checkpoints and log cleanup after the commit.
  bool post_commit_hooks = true;
};

/// \brief A transaction. Thread-compatible; commit once.
class Transaction {
 public:
  /// \param[in] store the table's store
  /// \param[in] read_snapshot the version read, or nullptr to create the table
  Transaction(std::shared_ptr<storage::ObjectStore> store,
              std::shared_ptr<const Snapshot> read_snapshot, CommitOptions options = {});

  /// \brief Set the protocol (required to create a table).
  void SetProtocol(Protocol protocol) { protocol_ = std::move(protocol); }
  /// \brief Set the metadata (required to create a table; a schema change otherwise).
  void SetMetadata(Metadata metadata) { metadata_ = std::move(metadata); }
  /// \brief Add data files.
  void AddFiles(std::vector<Add> files);
  /// \brief Name change data files (change_data_writer.h) in the commit.
  void AddChangeFiles(std::vector<Cdc> files) {
    for (auto& file : files) changes_.push_back(std::move(file));
  }
  /// \brief Remove data files (as tombstones).
  void RemoveFiles(std::vector<Remove> files);
  /// \brief Commit an application transaction id (exactly-once); two transactions with
  /// the same app id never both commit against the same state.
  void SetAppTransaction(SetTransaction txn) { txn_ = std::move(txn); }
  /// \brief Also record `txn` (an application's bookkeeping under its own app id, such
  /// as where a stream took a table over); it takes no part in conflict checks.
  void AddTransactionRecord(SetTransaction txn) { records_.push_back(std::move(txn)); }
  /// \brief Fail with kCommitConflict, subcode kConcurrentApp, when the read snapshot or
  /// a concurrent commit records a `txn` whose app id `overlaps` says claims the same
  /// work (the block ranges of a backfill's partitions, which differ in name when runs
  /// split the range differently).
  void ConflictWithAppIds(std::function<bool(const std::string&)> overlaps) {
    overlapping_app_ids_ = std::move(overlaps);
  }
  /// \brief Fail with kCommitConflict, subcode kConcurrentApp, when a concurrent commit
  /// adds data (dataChange) in a file `claims` says holds this commit's work (a restore
  /// putting back a backfill partition's file, an overwrite writing rows in its blocks).
  void ConflictWithAdds(std::function<bool(const Add&)> claims) {
    claimed_adds_ = std::move(claims);
  }
  /// \brief Records of the read snapshot the caller found stale (their rows are gone):
  /// they claim nothing, and this commit may record them again. A concurrent commit
  /// recording one still conflicts.
  void SupersedeAppIds(std::set<std::string> app_ids) {
    superseded_app_ids_ = std::move(app_ids);
  }
  /// \brief Set or remove a domain's metadata.
  void SetDomainMetadata(DomainMetadata domain) { domains_.push_back(std::move(domain)); }
  /// \brief Name the operation for commitInfo (`WRITE`, `DELETE`, `OPTIMIZE`, …).
  void SetOperation(std::string operation,
                    std::map<std::string, std::string> parameters = {});
  /// \brief Report operation metrics in commitInfo.
  void SetOperationMetrics(std::map<std::string, std::string> metrics) {
    metrics_ = std::move(metrics);
  }
  /// \brief Declare that the result depends on every file of the read snapshot (a delete
  /// or merge over the whole table): concurrent non-blind changes then conflict.
  void ReadWholeTable() { read_.whole_table = true; }
  /// \brief Declare the files (table-relative keys) whose content the result depends on.
  void ReadFiles(const std::vector<std::string>& keys) {
    read_.files.insert(keys.begin(), keys.end());
  }
  /// \brief Replace the whole table: files that concurrent commits added are removed too
  /// when the commit is rebased.
  void ReplaceWholeTable() { replace_whole_table_ = true; }
  /// \brief The commit creates the table or nothing (write modes error and ignore): a
  /// table another writer created meanwhile fails it with kTableCreatedConcurrently.
  void CreateOnly() { create_only_ = true; }
  /// \brief Serializable isolation: any concurrent data change conflicts, blind appends
  /// included (a merge must not miss rows another writer added with the same keys).
  void ConflictWithConcurrentAppends() { isolation_ = IsolationLevel::kSerializable; }
  /// \brief Mark the commit as changing no data (compaction): rearrangements never
  /// conflict with appends.
  void SetDataChange(bool data_change) { data_change_ = data_change; }
  /// \brief Fail with kCommitConflict, subcode kRolledBack, when a concurrent commit
  /// removed as a data change one of these files (table-relative keys), a file of the
  /// read snapshot with one of `tag_keys`, or any file whose remove carries one, or added
  /// as a data change a file with one: whatever this transaction built on them (a
  /// stream's progress) was taken back or changed, e.g. by a RESTORE. A winner with a
  /// `txn` of this transaction's application is reported as kConcurrentApp instead.
  void WatchRemovals(std::set<std::string> keys, std::set<std::string> tag_keys = {}) {
    watch_.keys = std::move(keys);
    watch_.tag_keys = std::move(tag_keys);
  }

  /// \brief Commit.
  ///
  /// Errors: kCommitConflict (a concurrent commit conflicts, or attempts ran out),
  /// kUnsupportedFeature (the table's writer features), kPreconditionFailed never
  /// escapes.
  arrow::Result<CommitReport> Commit();

  /// \brief Run what a commit made due (Commit does, with post_commit_hooks); failures
  /// go to report->post_commit_status, never undo the commit.
  void RunPostCommit(const PostCommitWork& work, CommitReport* report) const;

  /// \brief Return the read snapshot's version, or -1 for a new table.
  Version read_version() const { return read_snapshot_ ? read_snapshot_->version() : -1; }

 private:
  arrow::Result<std::vector<Action>> BuildActions(Version version, int64_t now_ms) const;
  // On a table with row tracking, give the new files of `adds` fresh row IDs and
  // `version` as their commit version; return the domain that records the raised
  // high-water mark (nullopt: none raised).
  arrow::Result<std::optional<DomainMetadata>> AssignRowIds(Version version,
                                                            std::vector<Add>* adds) const;
  // This commit adds the rowTracking feature or enables it: every file the table has
  // must then have row IDs, a concurrent commit's too.
  bool StartsRowTracking() const;
  // delta.enableInCommitTimestamps on the table as this commit leaves it.
  bool InCommitTimestamps() const;
  // The inCommitTimestamp of a committed version (nullopt: none, or no such file).
  arrow::Result<std::optional<int64_t>> InCommitTimestampOf(Version version) const;
  // Where a failed attempt leaves the commit: landed at `version` (a write of ours the
  // read-back had missed), or to be tried at `version`.
  struct NextAttempt {
    Version version;
    bool landed;
  };
  struct Landed {
    Version version;
    int attempts;
  };
  // Refuse what no attempt can commit: a second commit, a table without protocol and
  // metadata, features ampdelta cannot write, removes on an append-only table, work the
  // read snapshot already claims.
  arrow::Status CheckCommittable() const;
  // The protocol and metadata the table has after this commit.
  const Protocol& LeftProtocol() const;
  const Metadata& LeftMetadata() const;
  // Attempts at successive versions until one lands: storage errors retried, lost races
  // rebased over the winners.
  arrow::Result<Landed> CommitWithRetries();
  arrow::Result<CommitResult> CommitOnce(Version version, Committer* committer);
  bool IsOurs(const std::vector<Action>& winner) const;
  // Version 0 was taken: ours after all, or another writer created the table, which this
  // commit joins as an append when it is the same table.
  arrow::Result<NextAttempt> JoinConcurrentCreation();
  arrow::Status CheckSameTableCreated(const Snapshot& existing) const;
  // A later version was taken: back off, check the winners since, go to the next free.
  arrow::Result<NextAttempt> RebaseOverWinners(Version version, int attempt);
  arrow::Status CheckConflicts(const std::vector<Action>& winner, Version version);
  arrow::Status CheckClaim(const std::string& app_id) const;
  PostCommitWork PostCommitDue(Version version) const;
  // The table at `version`, just committed by this transaction.
  arrow::Result<std::shared_ptr<const Snapshot>> SnapshotAfter(Version version) const;

  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<const Snapshot> read_snapshot_;
  CommitOptions options_;
  std::optional<Protocol> protocol_;
  std::optional<Metadata> metadata_;
  std::vector<Add> adds_;
  std::vector<Remove> removes_;
  std::vector<Cdc> changes_;
  std::optional<SetTransaction> txn_;
  std::vector<SetTransaction> records_;
  std::function<bool(const std::string&)> overlapping_app_ids_;
  std::set<std::string> superseded_app_ids_;
  std::function<bool(const Add&)> claimed_adds_;
  std::vector<DomainMetadata> domains_;
  std::string operation_ = "WRITE";
  std::map<std::string, std::string> parameters_;
  std::map<std::string, std::string> metrics_;
  IsolationLevel isolation_ = IsolationLevel::kWriteSerializable;
  ReadSet read_;
  bool replace_whole_table_ = false;
  bool create_only_ = false;
  bool data_change_ = true;
  Watch watch_;
  bool watched_tagged_files_ = false;  // the read snapshot's tagged files are in watch_
  // The highest row ID high-water mark the winners this commit rebased over recorded.
  int64_t winners_row_id_high_water_mark_ = -1;
  std::string txn_id_;
  bool committed_ = false;
};

/// \brief Delete log files older than the log retention that a newer checkpoint makes
/// unnecessary (PROTOCOL.md "Metadata Cleanup"). Returns the number deleted.
arrow::Result<int64_t> CleanupExpiredLogs(storage::ObjectStore& store,
                                          int64_t retention_ms, int64_t now_ms);

}  // namespace ampdelta::delta

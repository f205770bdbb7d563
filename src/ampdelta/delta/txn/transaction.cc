#include "ampdelta/delta/txn/transaction.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <arrow/buffer.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/checkpoint_reader.h"
#include "ampdelta/delta/log/log_segment.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/delta/log/type_widening.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/delta/txn/committer.h"
#include "ampdelta/delta/txn/conflict_checker.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/metrics.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"
#include "ampdelta/version.h"

namespace ampdelta::delta {
namespace {

// Wait before retry `attempt`, in slices when a stop may cut it short; return true
// when a stop was asked for.
bool Backoff(const CommitOptions& options, int attempt) {
  auto delay = BackoffPolicy{options.initial_backoff, options.max_backoff}.Delay(attempt);
  if (options.stop == nullptr) {
    options.sleep(delay);
    return false;
  }
  constexpr std::chrono::milliseconds kSlice{50};
  while (delay.count() > 0 && !options.stop->load()) {
    const auto slice = std::min(delay, kSlice);
    options.sleep(slice);
    delay -= slice;
  }
  return options.stop->load();
}

}  // namespace

LogCleanupSchedule& LogCleanupSchedule::ForProcess() {
  static LogCleanupSchedule schedule;
  return schedule;
}

bool LogCleanupSchedule::Due(const std::string& root, int64_t retention_ms,
                             int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, first] = last_run_ms_.try_emplace(root, now_ms);
  if (first) return true;
  if (now_ms - it->second < retention_ms / 1000) return false;
  it->second = now_ms;
  return true;
}

Transaction::Transaction(std::shared_ptr<storage::ObjectStore> store,
                         std::shared_ptr<const Snapshot> read_snapshot,
                         CommitOptions options)
    : store_(std::move(store)),
      read_snapshot_(std::move(read_snapshot)),
      options_(options),
      txn_id_(NewUuid()) {}

void Transaction::AddFiles(std::vector<Add> files) {
  for (auto& file : files) adds_.push_back(std::move(file));
}

void Transaction::RemoveFiles(std::vector<Remove> files) {
  for (auto& file : files) removes_.push_back(std::move(file));
}

void Transaction::SetOperation(std::string operation,
                               std::map<std::string, std::string> parameters) {
  operation_ = std::move(operation);
  parameters_ = std::move(parameters);
}

arrow::Result<std::vector<Action>> Transaction::BuildActions(Version version,
                                                             int64_t now_ms) const {
  std::vector<Action> actions;
  CommitInfo info;
  info.timestamp = now_ms;
  info.operation = operation_;
  info.operation_parameters = parameters_;
  if (read_snapshot_) info.read_version = read_snapshot_->version();
  info.isolation_level = IsolationLevelName(isolation_);
  const bool blind_append = removes_.empty() && !read_.whole_table &&
                            read_.files.empty() && !metadata_ && !protocol_ && !txn_ &&
                            records_.empty();
  info.is_blind_append = blind_append;
  info.operation_metrics = metrics_;
  info.engine_info = std::string("ampdelta/") + kVersion;
  info.txn_id = txn_id_;
  if (!removes_.empty() && RowTrackingEnabled(LeftMetadata().configuration)) {
    // Rows this commit copies or updates keep their row IDs (row_tracking.h).
    info.tags["delta.rowTracking.preserved"] = "true";
  }
  if (InCommitTimestamps()) {
    // Strictly after the previous commit's, whatever this machine's clock says.
    int64_t timestamp = now_ms;
    if (version > 0) {
      ARROW_ASSIGN_OR_RAISE(auto previous, InCommitTimestampOf(version - 1));
      if (previous) timestamp = std::max(timestamp, *previous + 1);
    }
    info.in_commit_timestamp = timestamp;
  }
  actions.emplace_back(std::move(info));
  if (protocol_) actions.emplace_back(*protocol_);
  if (metadata_) {
    Metadata metadata = *metadata_;
    if (HasWriterFeature(LeftProtocol(), TableFeature::kTypeWideningPreview)) {
      // The preview records the version of each type change: this commit's.
      ARROW_ASSIGN_OR_RAISE(metadata.schema_string,
                            StampTypeChangeVersions(metadata.schema_string, version));
    }
    actions.emplace_back(std::move(metadata));
  }
  if (txn_) {
    SetTransaction txn = *txn_;
    if (!txn.last_updated) txn.last_updated = now_ms;
    actions.emplace_back(std::move(txn));
  }
  for (SetTransaction record : records_) {
    if (!record.last_updated) record.last_updated = now_ms;
    actions.emplace_back(std::move(record));
  }
  if (!domains_.empty()) {
    const Protocol* protocol =
        protocol_ ? &*protocol_
                  : (read_snapshot_ ? &read_snapshot_->protocol() : nullptr);
    // PROTOCOL.md: domainMetadata actions only in a table with the feature.
    if (protocol == nullptr ||
        !HasWriterFeature(*protocol, TableFeature::kDomainMetadata)) {
      return InvalidInputError(
          "domain metadata '", domains_.front().domain,
          "' needs the domainMetadata table feature, which the table lacks");
    }
  }
  for (const auto& domain : domains_) actions.emplace_back(domain);
  std::vector<Add> adds = adds_;
  ARROW_ASSIGN_OR_RAISE(auto row_ids, AssignRowIds(version, &adds));
  if (row_ids) actions.emplace_back(std::move(*row_ids));
  for (const auto& remove : removes_) {
    Remove tombstone = remove;
    if (!tombstone.deletion_timestamp) tombstone.deletion_timestamp = now_ms;
    tombstone.data_change = data_change_;
    actions.emplace_back(std::move(tombstone));
  }
  for (auto& file : adds) {
    file.data_change = data_change_ && file.data_change;  // a re-tag is no data change
    actions.emplace_back(std::move(file));
  }
  for (const auto& change : changes_) actions.emplace_back(change);
  return actions;
}

bool Transaction::StartsRowTracking() const {
  const bool had_feature = read_snapshot_ && HasWriterFeature(read_snapshot_->protocol(),
                                                              TableFeature::kRowTracking);
  const bool had_enabled =
      read_snapshot_ && RowTrackingEnabled(read_snapshot_->metadata().configuration);
  return (protocol_ && !had_feature &&
          HasWriterFeature(*protocol_, TableFeature::kRowTracking)) ||
         (metadata_ && !had_enabled && RowTrackingEnabled(metadata_->configuration));
}

arrow::Result<std::optional<DomainMetadata>> Transaction::AssignRowIds(
    Version version, std::vector<Add>* adds) const {
  // Spark's DROP FEATURE rowTracking suspends it first: its files get no IDs then.
  if (RowTrackingSuspended(LeftMetadata().configuration)) return std::nullopt;
  std::vector<Add*> files;
  for (auto& add : *adds) files.push_back(&add);
  if (KeepsRowCommitVersions(LeftProtocol())) AssignCommitVersions(version, files);
  if (!HasWriterFeature(LeftProtocol(), TableFeature::kRowTracking)) return std::nullopt;
  // Fresh IDs go above every ID handed out: the read snapshot's and the winners'
  // since, so an attempt rebased over a concurrent commit never reuses theirs.
  int64_t high_water_mark = winners_row_id_high_water_mark_;
  if (read_snapshot_) {
    ARROW_ASSIGN_OR_RAISE(const int64_t read,
                          RowIdHighWaterMark(read_snapshot_->domain_metadata()));
    high_water_mark = std::max(high_water_mark, read);
  }
  ARROW_ASSIGN_OR_RAISE(const int64_t raised, AssignFreshRowIds(high_water_mark, files));
  if (raised == high_water_mark) return std::nullopt;
  return RowIdHighWaterMarkDomain(raised);
}

bool Transaction::InCommitTimestamps() const {
  const Metadata* metadata =
      metadata_ ? &*metadata_ : (read_snapshot_ ? &read_snapshot_->metadata() : nullptr);
  return metadata != nullptr &&
         ParseTableProperties(metadata->configuration).enable_in_commit_timestamps;
}

arrow::Result<std::optional<int64_t>> Transaction::InCommitTimestampOf(
    Version version) const {
  auto data = store_->Get(CommitPath(version));
  if (!data.ok()) {
    if (IsError(data.status(), ErrorCode::kNotFound)) return std::nullopt;
    return data.status();
  }
  ARROW_ASSIGN_OR_RAISE(auto actions,
                        ParseCommit((*data)->ToString(), CommitPath(version)));
  for (const auto& action : actions) {
    if (const auto* info = std::get_if<CommitInfo>(&action))
      return info->in_commit_timestamp;
  }
  return std::nullopt;
}

arrow::Status Transaction::CheckClaim(const std::string& app_id) const {
  if (!overlapping_app_ids_ || !overlapping_app_ids_(app_id)) return arrow::Status::OK();
  return CommitConflictError("a concurrent commit recorded '", app_id,
                             "', which claims work this commit does too")
      .WithDetail(
          std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict, kConcurrentApp));
}

arrow::Status Transaction::CheckConflicts(const std::vector<Action>& winner,
                                          Version version) {
  for (const auto& action : winner) {
    if (const auto* txn = std::get_if<SetTransaction>(&action)) {
      ARROW_RETURN_NOT_OK(CheckClaim(txn->app_id));
    }
    if (const auto* domain = std::get_if<DomainMetadata>(&action)) {
      ARROW_ASSIGN_OR_RAISE(const auto mark, RowIdHighWaterMarkIn(*domain));
      if (mark) {
        winners_row_id_high_water_mark_ =
            std::max(winners_row_id_high_water_mark_, *mark);
      }
    }
    const auto* add = std::get_if<Add>(&action);
    if (add != nullptr && !add->base_row_id && StartsRowTracking()) {
      return CommitConflictError(
          "a concurrent commit added ", add->path,
          " without row IDs while this commit turns row tracking on; nothing was "
          "committed");
    }
    if (add != nullptr && add->data_change && claimed_adds_ && claimed_adds_(*add)) {
      return CommitConflictError("a concurrent commit added ", add->path,
                                 ", which holds work this commit does too")
          .WithDetail(
              std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict, kConcurrentApp));
    }
  }
  WriteSet write;
  for (const auto& remove : removes_) write.removes.insert(DecodeLogPath(remove.path));
  for (const auto& add : adds_) {
    (add.data_change ? write.adds : write.readds).insert(DecodeLogPath(add.path));
    if (!add.data_change) write.adds.insert(DecodeLogPath(add.path));
  }
  for (const auto& domain : domains_) write.domains.insert(domain.domain);
  if (txn_) write.app_id = txn_->app_id;
  write.replace_whole_table = replace_whole_table_;
  // The read snapshot's files carrying a watched tag are watched too (removes by other
  // engines may drop tags); collected on the conflict path, not on every commit.
  if (!watch_.tag_keys.empty() && read_snapshot_ && !watched_tagged_files_) {
    for (const auto& file : read_snapshot_->files()) {
      if (watch_.Tagged(file.tags))
        watch_.keys.insert(read_snapshot_->FileKey(file.path));
    }
    watched_tagged_files_ = true;
  }
  ARROW_ASSIGN_OR_RAISE(Rebase rebase,
                        CheckWinner(winner, version, isolation_, read_, write, watch_));
  // An overwrite replaces what others appended meanwhile too.
  if (!rebase.superseded.empty()) {
    removes_.erase(
        std::remove_if(removes_.begin(), removes_.end(),
                       [&](const Remove& remove) {
                         return rebase.superseded.count(DecodeLogPath(remove.path)) != 0;
                       }),
        removes_.end());
  }
  for (const auto& add : rebase.winner_adds) removes_.push_back(RemoveFor(add));
  return arrow::Status::OK();
}

arrow::Status Transaction::CheckCommittable() const {
  if (committed_) return arrow::Status::Invalid("transaction already committed");
  if (!read_snapshot_ && (!protocol_ || !metadata_)) {
    return arrow::Status::Invalid("creating a table needs a protocol and metadata");
  }
  // The protocol and metadata this commit leaves the table with must be writable.
  ARROW_ASSIGN_OR_RAISE(auto schema, SchemaFromJson(LeftMetadata().schema_string));
  ARROW_RETURN_NOT_OK(CheckWriteSupported(LeftProtocol(), LeftMetadata(), *schema));
  if (read_snapshot_ && read_snapshot_->properties().append_only && data_change_ &&
      !removes_.empty()) {
    return InvalidInputError(
        "table is append-only (delta.appendOnly=true): this operation would remove data");
  }
  // Work the read snapshot already records is claimed as surely as a winner's.
  if (read_snapshot_ && overlapping_app_ids_) {
    for (const auto& [app_id, txn] : read_snapshot_->app_transactions()) {
      if (superseded_app_ids_.count(app_id) != 0) continue;
      ARROW_RETURN_NOT_OK(CheckClaim(app_id));
    }
  }
  return arrow::Status::OK();
}

const Protocol& Transaction::LeftProtocol() const {
  return protocol_ ? *protocol_ : read_snapshot_->protocol();
}

const Metadata& Transaction::LeftMetadata() const {
  return metadata_ ? *metadata_ : read_snapshot_->metadata();
}

arrow::Result<CommitReport> Transaction::Commit() {
  ARROW_RETURN_NOT_OK(CheckCommittable());
  ARROW_ASSIGN_OR_RAISE(const Landed landed, CommitWithRetries());
  committed_ = true;
  CommitReport report;
  report.version = landed.version;
  report.attempts = landed.attempts;
  AMPDELTA_LOG_DEBUG("delta commit version=", landed.version, " operation=", operation_,
                     " adds=", adds_.size(), " removes=", removes_.size(),
                     " attempts=", landed.attempts);
  report.post_commit = PostCommitDue(landed.version);
  if (options_.post_commit_hooks) RunPostCommit(report.post_commit, &report);
  return report;
}

arrow::Result<Transaction::Landed> Transaction::CommitWithRetries() {
  // iceberg-cpp's shape: one attempt at a version, and a runner that decides what a
  // failed attempt means (a storage error retried, a lost race rebased).
  Version version = read_version() + 1;
  Committer committer(store_);
  for (int attempt = 1;; ++attempt) {
    ARROW_ASSIGN_OR_RAISE(const CommitResult outcome, CommitOnce(version, &committer));
    if (outcome == CommitResult::kCommitted) return Landed{version, attempt};
    if (outcome == CommitResult::kRetryable) {
      const arrow::Status& failure = committer.last_failure();
      if (attempt >= options_.max_attempts) {
        return failure.WithMessage("commit of version ", version,
                                   " failed: ", failure.message());
      }
      AMPDELTA_LOG_WARN("delta commit write failed, retrying version=", version,
                        " error=", failure.ToString());
      metrics::RetriesCounter("storage").Increment();
      Backoff(options_, attempt);
      continue;
    }
    // Lost the race for this version.
    if (attempt >= options_.max_attempts) {
      return CommitConflictError("gave up committing after ", attempt,
                                 " attempts: version ", version,
                                 " kept being taken by concurrent writers");
    }
    ARROW_ASSIGN_OR_RAISE(
        const NextAttempt next,
        version == 0 ? JoinConcurrentCreation() : RebaseOverWinners(version, attempt));
    if (next.landed) return Landed{next.version, attempt};
    version = next.version;
  }
}

arrow::Result<CommitResult> Transaction::CommitOnce(Version version,
                                                    Committer* committer) {
  ARROW_ASSIGN_OR_RAISE(auto actions, BuildActions(version, NowMs()));
  ARROW_ASSIGN_OR_RAISE(const std::string bytes, EncodeCommit(actions));
  return committer->TryCommit(version, bytes);
}

bool Transaction::IsOurs(const std::vector<Action>& winner) const {
  // Our own write, landed late after a failure the read-back could not resolve.
  return std::any_of(winner.begin(), winner.end(), [&](const Action& action) {
    const auto* info = std::get_if<CommitInfo>(&action);
    return info != nullptr && info->txn_id == txn_id_;
  });
}

arrow::Result<Transaction::NextAttempt> Transaction::JoinConcurrentCreation() {
  auto first = store_->Get(CommitPath(0));
  if (first.ok()) {
    ARROW_ASSIGN_OR_RAISE(auto winner, ParseCommit((*first)->ToString(), CommitPath(0)));
    if (IsOurs(winner)) return NextAttempt{0, true};
  }
  // Someone created the table first. Proceed as an append if it is the same table.
  ARROW_ASSIGN_OR_RAISE(auto existing, Snapshot::Load(store_));
  ARROW_RETURN_NOT_OK(CheckSameTableCreated(*existing));
  protocol_.reset();
  metadata_.reset();
  read_snapshot_ = existing;
  return NextAttempt{existing->version() + 1, false};
}

namespace {

// Table properties without those each writer picks for itself (the names of row
// tracking's materialized columns, random): two creators asking for the same table differ
// only there.
std::map<std::string, std::string> WithoutWriterChosenKeys(
    std::map<std::string, std::string> configuration) {
  configuration.erase(kMaterializedRowIdKey);
  configuration.erase(kMaterializedRowCommitVersionKey);
  return configuration;
}

}  // namespace

arrow::Status Transaction::CheckSameTableCreated(const Snapshot& existing) const {
  if (create_only_) {
    return CommitConflictError(
               "the table was created concurrently; this write creates a "
               "table or nothing")
        .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                  kTableCreatedConcurrently));
  }
  const Metadata& metadata = *metadata_;
  if (existing.metadata().schema_string != metadata.schema_string ||
      existing.metadata().partition_columns != metadata.partition_columns) {
    return CommitConflictError(
        "the table was created concurrently with a different schema or partitioning");
  }
  if (WithoutWriterChosenKeys(existing.metadata().configuration) !=
      WithoutWriterChosenKeys(metadata.configuration)) {
    // Appending would drop this write's table properties without a word.
    return CommitConflictError(
        "the table was created concurrently with different table properties; "
        "nothing was committed");
  }
  const bool serializable = isolation_ == IsolationLevel::kSerializable;
  if (serializable || replace_whole_table_) {
    return CommitConflictError("the table was created concurrently; this ",
                               serializable ? "merge" : "overwrite",
                               " must read it first: retry");
  }
  for (const auto& [app_id, txn] : existing.app_transactions()) {
    ARROW_RETURN_NOT_OK(CheckClaim(app_id));
  }
  if (txn_ && existing.AppTransactionVersion(txn_->app_id)) {
    return CommitConflictError("application '", txn_->app_id,
                               "' created the table concurrently; "
                               "another writer runs the same app")
        .WithDetail(
            std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict, kConcurrentApp));
  }
  return arrow::Status::OK();
}

arrow::Result<Transaction::NextAttempt> Transaction::RebaseOverWinners(Version version,
                                                                       int attempt) {
  // Back off first, then check every commit that won since our read and try the next
  // free version at once: sleeping between finding it and trying it would hand it to
  // any writer committing more often than the back-off (a stream).
  metrics::RetriesCounter("conflict").Increment();
  const bool stopped = Backoff(options_, attempt);
  Version next = version;
  while (true) {
    auto data = store_->Get(CommitPath(next));
    if (!data.ok()) {
      if (IsError(data.status(), ErrorCode::kNotFound)) break;
      return data.status();
    }
    ARROW_ASSIGN_OR_RAISE(auto winner,
                          ParseCommit((*data)->ToString(), CommitPath(next)));
    if (IsOurs(winner)) return NextAttempt{next, true};
    ARROW_RETURN_NOT_OK(CheckConflicts(winner, next));
    ++next;
  }
  // Stopped between attempts, once the winners showed none of them is ours.
  if (stopped) {
    return arrow::Status::Cancelled("stopped while retrying the commit (version ", next,
                                    " is free): nothing committed");
  }
  AMPDELTA_LOG_DEBUG("delta commit rebased from=", version, " to=", next);
  return NextAttempt{next, false};
}

arrow::Result<std::shared_ptr<const Snapshot>> Transaction::SnapshotAfter(
    Version version) const {
  // The read snapshot advanced by the commits since it (one HEAD and one read each)
  // costs what changed; a full load lists the log and replays the last checkpoint, which
  // would make every checkpoint of a long stream cost the table's size twice over.
  if (read_snapshot_) {
    auto updated = read_snapshot_->Update();
    if (updated.ok() && (*updated)->version() == version) return updated;
  }
  return Snapshot::Load(store_, SnapshotOptions{version, std::nullopt});
}

PostCommitWork Transaction::PostCommitDue(Version version) const {
  PostCommitWork work;
  work.version = version;
  if (!read_snapshot_ && version == 0) return work;
  const TableProperties properties = metadata_
                                         ? ParseTableProperties(metadata_->configuration)
                                         : read_snapshot_->properties();
  // A _last_checkpoint naming no checkpoint (a version past the latest, or one whose
  // checkpoint is gone) is repaired by checkpointing now, unless someone did meanwhile.
  bool repair = false;
  if (read_snapshot_ && read_snapshot_->log_segment().stale_checkpoint_hint) {
    const auto hint = ReadLastCheckpointHint(*store_);
    repair = hint && (*hint > version ||
                      hint == read_snapshot_->log_segment().stale_hint_version);
  }
  work.checkpoint =
      version != 0 && (repair || version % properties.checkpoint_interval == 0);
  work.log_cleanup = work.checkpoint && properties.enable_expired_log_cleanup;
  work.log_retention_ms = properties.log_retention_ms;
  return work;
}

void Transaction::RunPostCommit(const PostCommitWork& work, CommitReport* report) const {
  // Post-commit steps never fail the commit: it is already durable.
  if (!work.checkpoint) return;
  auto failed = [&](const char* step, const arrow::Status& status) {
    report->post_commit_status = status.WithMessage(step, ": ", status.message());
    AMPDELTA_LOG_WARN("delta post-commit step failed version=", work.version,
                      " error=", report->post_commit_status.ToString());
  };
  auto snapshot = SnapshotAfter(work.version);
  if (!snapshot.ok()) return failed("checkpoint", snapshot.status());
  report->snapshot_after = *snapshot;
  const int64_t now = NowMs();
  auto checkpoint = WriteCheckpoint(**snapshot, now);
  if (!checkpoint.ok()) return failed("checkpoint", checkpoint.status());
  report->checkpoint_written = true;
  if (!work.log_cleanup || !LogCleanupSchedule::ForProcess().Due(
                               store_->root_uri(), work.log_retention_ms, now)) {
    return;
  }
  auto cleaned = CleanupExpiredLogs(*store_, work.log_retention_ms, now);
  if (!cleaned.ok()) return failed("log cleanup", cleaned.status());
  report->log_files_cleaned = *cleaned;
}

namespace {

// The sidecars of `objects` older than `cutoff` that no checkpoint outside `doomed`
// names (PROTOCOL.md "Metadata Cleanup").
arrow::Result<std::vector<std::string>> UnreferencedSidecars(
    storage::ObjectStore& store, const std::vector<storage::ObjectMeta>& objects,
    const std::vector<std::string>& doomed_list, int64_t cutoff) {
  const std::set<std::string> doomed(doomed_list.begin(), doomed_list.end());
  const std::string folder = SidecarPath("");
  std::vector<std::string> expired;
  for (const auto& object : objects) {
    if (object.path.rfind(folder, 0) == 0 && object.last_modified_ms <= cutoff)
      expired.push_back(object.path);
  }
  if (expired.empty()) return expired;
  std::set<std::string> named;
  const auto collect = [&](Action&& action) {
    if (const auto* sidecar = std::get_if<Sidecar>(&action))
      named.insert(SidecarPath(sidecar->path));
    return arrow::Status::OK();
  };
  for (const auto& object : objects) {
    const auto parsed = ParseLogPath(object.path);
    if (!parsed || !parsed->is_single_file_checkpoint() ||
        doomed.count(object.path) != 0) {
      continue;
    }
    if (parsed->type == LogFileType::kUuidCheckpointJson) {
      ARROW_ASSIGN_OR_RAISE(auto data, store.Get(object.path));
      ARROW_ASSIGN_OR_RAISE(auto actions, ParseCommit(data->ToString(), object.path));
      for (auto& action : actions) ARROW_RETURN_NOT_OK(collect(std::move(action)));
    } else {
      ARROW_RETURN_NOT_OK(VisitParquetActions(store, object.path, collect));
    }
  }
  std::erase_if(expired, [&](const std::string& path) { return named.count(path) > 0; });
  return expired;
}

}  // namespace

arrow::Result<int64_t> CleanupExpiredLogs(storage::ObjectStore& store,
                                          int64_t retention_ms, int64_t now_ms) {
  const int64_t cutoff = now_ms - retention_ms;
  ARROW_ASSIGN_OR_RAISE(auto objects, store.List(std::string(kLogDir) + "/", ""));
  // The newest checkpoint whose own file is older than the cutoff: everything before it
  // is no longer needed to reconstruct any version inside the retention.
  std::optional<Version> safe;
  for (const auto& object : objects) {
    auto parsed = ParseLogPath(object.path);
    if (parsed && parsed->is_single_file_checkpoint() &&
        object.last_modified_ms <= cutoff) {
      safe = std::max(safe.value_or(-1), parsed->version);
    }
  }
  if (!safe) return 0;
  std::vector<std::string> doomed;
  for (const auto& object : objects) {
    auto parsed = ParseLogPath(object.path);
    if (!parsed || parsed->version >= *safe || object.last_modified_ms > cutoff) continue;
    if (parsed->type == LogFileType::kCommit || parsed->is_checkpoint() ||
        parsed->type == LogFileType::kChecksum ||
        parsed->type == LogFileType::kCompaction) {
      doomed.push_back(object.path);
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto sidecars,
                        UnreferencedSidecars(store, objects, doomed, cutoff));
  doomed.insert(doomed.end(), sidecars.begin(), sidecars.end());
  ARROW_RETURN_NOT_OK(store.DeleteMany(doomed));
  if (!doomed.empty()) {
    AMPDELTA_LOG_INFO("delta log cleanup deleted=", doomed.size(),
                      " before_version=", *safe);
  }
  return static_cast<int64_t>(doomed.size());
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/maintenance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/deletion_vector.h"
#include "ampdelta/delta/file_tags.h"
#include "ampdelta/delta/partitioning.h"
#include "ampdelta/delta/scan.h"
#include "ampdelta/delta/table_features.h"
#include "ampdelta/delta/table_writer.h"
#include "ampdelta/delta/write_lease.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

std::string FileIdentity(const Snapshot& snapshot, const std::string& path,
                         const std::optional<DeletionVectorDescriptor>& dv) {
  return snapshot.FileKey(path) + (dv ? "\n" + dv->UniqueId() : "");
}

}  // namespace

arrow::Result<OptimizeResult> Optimize(std::shared_ptr<storage::ObjectStore> store,
                                       const OptimizeOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Snapshot::Load(store));
  ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(), *snapshot->schema()));
  // Small files (or files with deleted rows to purge), grouped by partition.
  std::map<std::string, std::vector<const Add*>> by_partition;
  for (const auto& add : snapshot->files()) {
    if (add.size >= options.target_size && !add.deletion_vector) continue;
    if (options.eligible && !options.eligible(add)) continue;
    by_partition[PartitionFolder(snapshot->partition_columns(), add.partition_values)].push_back(&add);
  }
  // Bins of about target_size; a bin of one file without deletions gains nothing.
  std::vector<std::vector<const Add*>> bins;
  for (auto& [partition, files] : by_partition) {
    std::vector<const Add*> bin;
    int64_t bytes = 0;
    auto flush = [&] {
      if (bin.size() > 1 || (bin.size() == 1 && bin.front()->deletion_vector)) bins.push_back(bin);
      bin.clear();
      bytes = 0;
    };
    for (const Add* file : files) {
      if (!bin.empty() && bytes + file->size > options.target_size) flush();
      bin.push_back(file);
      bytes += file->size;
    }
    flush();
  }
  OptimizeResult result;
  if (bins.empty()) return result;
  ARROW_ASSIGN_OR_RAISE(auto lease, WriteLease::Acquire(store));
  DataFileOptions file_options = FileOptionsForTable(snapshot.get(), options.files);
  file_options.target_file_size = options.target_size;
  file_options.num_threads = 1;  // one output file per bin
  file_options.file_token = lease->token();
  std::set<std::string> partitions;
  std::vector<Add> adds;
  std::vector<Remove> removes;
  std::vector<std::string> read;
  // Files written by bins already finished are deleted when anything fails.
  std::vector<std::string> written;
  auto discard = [&](arrow::Status status) {
    for (const auto& add : adds) written.push_back(DecodeLogPath(add.path));
    (void)store->DeleteMany(written);
    return status;
  };
  arrow::Status compacted = [&]() -> arrow::Status {
    for (const auto& bin : bins) {
      ARROW_ASSIGN_OR_RAISE(auto writer, DataFileWriter::Make(store, snapshot->schema(),
                                                              snapshot->partition_columns(), file_options));
      for (const Add* file : bin) {
        ARROW_ASSIGN_OR_RAISE(auto table, ReadDataFile(*snapshot, *file));
        arrow::TableBatchReader reader(*table);
        std::shared_ptr<arrow::RecordBatch> batch;
        while (true) {
          ARROW_RETURN_NOT_OK(reader.ReadNext(&batch));
          if (batch == nullptr) break;
          ARROW_RETURN_NOT_OK(writer->Write(batch));
          result.rows += batch->num_rows();
        }
        removes.push_back(RemoveFor(*file, /*data_change=*/false));
        read.push_back(snapshot->FileKey(file->path));
      }
      const auto tags = MergeFileTags(bin);
      if (writer->rows_written() == 0 && tags && !tags->empty()) {
        // Only 0-row files (what a delete leaves to hold a stream's ranges): one keeps them.
        ARROW_RETURN_NOT_OK(writer->WriteEmptyFile(bin.front()->partition_values));
      }
      ARROW_ASSIGN_OR_RAISE(auto bin_files, writer->Finish());
      for (auto& add : bin_files) {
        add.tags = tags;
        adds.push_back(std::move(add));
      }
      partitions.insert(PartitionFolder(snapshot->partition_columns(), bin.front()->partition_values));
    }
    return arrow::Status::OK();
  }();
  if (!compacted.ok()) return discard(compacted);
  for (const auto& add : adds) written.push_back(DecodeLogPath(add.path));
  result.files_removed = static_cast<int64_t>(removes.size());
  result.files_added = static_cast<int64_t>(adds.size());
  result.partitions_optimized = static_cast<int64_t>(partitions.size());
  Transaction txn(store, snapshot, options.commit);
  txn.SetDataChange(false);
  txn.ReadFiles(read);
  txn.AddFiles(std::move(adds));
  txn.RemoveFiles(std::move(removes));
  txn.SetOperation("OPTIMIZE", {{"predicate", "[]"}, {"targetSize", std::to_string(options.target_size)}});
  txn.SetOperationMetrics({{"numRemovedFiles", std::to_string(result.files_removed)},
                           {"numAddedFiles", std::to_string(result.files_added)},
                           {"partitionsOptimized", std::to_string(result.partitions_optimized)}});
  auto committed = txn.Commit();
  if (!committed.ok()) {
    (void)store->DeleteMany(written);
    return committed.status();
  }
  result.version = committed->version;
  return result;
}

namespace {

// A temporary file older than this belongs to no write in flight, whoever made it.
constexpr int64_t kStagingMaxAgeMs = 3600 * 1000;

bool IsHidden(const std::string& path, const std::vector<std::string>& partition_columns) {
  // Hidden and underscore folders (the log, leases, checkpoints' sidecars, _change_data),
  // but not the partition folders of columns whose names start with one (as Spark sees it).
  size_t begin = 0;
  while (begin < path.size()) {
    const char first = path[begin];
    const std::string_view part =
        std::string_view(path).substr(begin, path.find('/', begin) - begin);
    const bool partition_folder =
        std::any_of(partition_columns.begin(), partition_columns.end(),
                    [&](const std::string& column) {
                      const std::string prefix = EscapePartitionPathValue(column) + "=";
                      return part.substr(0, prefix.size()) == prefix;
                    });
    if ((first == '_' || first == '.') && !partition_folder) return true;
    const size_t slash = path.find('/', begin);
    if (slash == std::string::npos) break;
    begin = slash + 1;
  }
  return false;
}

std::optional<std::string> DeletionVectorFile(const std::optional<DeletionVectorDescriptor>& dv) {
  if (!dv || dv->storage_type != "u") return std::nullopt;
  auto path = UuidDeletionVectorPath(dv->path_or_inline_dv);
  if (!path.ok()) return std::nullopt;
  return *path;
}

}  // namespace

arrow::Result<VacuumResult> Vacuum(std::shared_ptr<storage::ObjectStore> store,
                                   const VacuumOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto first, Snapshot::Load(store));
  // vacuumProtocolCheck: only a writer that understands every writer feature may vacuum.
  ARROW_RETURN_NOT_OK(CheckWriteSupported(first->protocol(), first->metadata(), *first->schema()));
  const int64_t table_retention = first->properties().deleted_file_retention_ms;
  int64_t retention = table_retention;
  if (options.retention_hours) {
    const double hours = *options.retention_hours;
    if (!std::isfinite(hours) || hours < 0 || hours > 1e6) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "retention must be a number of hours between 0 and 1000000, got ", hours);
    }
    retention = static_cast<int64_t>(hours * 3600.0 * 1000.0);
    if (options.enforce_retention && retention < table_retention) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "retention of ", hours, " hours is shorter than the table's ",
                       table_retention / 3600000.0, " hours (delta.deletedFileRetentionDuration): "
                       "readers of older versions could lose files; to insist, disable the retention "
                       "check (ampdelta table vacuum --force)");
    }
  }
  const int64_t now = NowMs();
  const int64_t cutoff = now - retention;
  // The order matters (write_lease.h): announce this vacuum (restores wait for it), list the
  // files, then read the leases, then the latest snapshot.
  std::shared_ptr<WriteLease> announced;
  if (!options.dry_run) {
    ARROW_ASSIGN_OR_RAISE(announced, WriteLease::Acquire(store, LeaseKind::kVacuum));
  }
  std::vector<storage::ObjectMeta> objects;
  std::vector<storage::StagingObject> staging;
  if (options.full) {
    ARROW_ASSIGN_OR_RAISE(objects, store->List("", ""));
    ARROW_ASSIGN_OR_RAISE(staging, store->ListStaging(""));
  }
  ARROW_ASSIGN_OR_RAISE(auto leases, ReadLeases(*store, now));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, first->Update());
  // Files some version within the retention may read: live files, and files removed after
  // the cutoff; plus the deletion-vector files they use.
  std::set<std::string> keep;
  std::vector<std::string> candidates;
  std::set<std::string> tombstoned;
  for (const auto& add : snapshot->files()) {
    keep.insert(snapshot->FileKey(add.path));
    if (auto dv = DeletionVectorFile(add.deletion_vector)) keep.insert(*dv);
  }
  for (const auto& remove : snapshot->tombstones()) {
    const std::string key = snapshot->FileKey(remove.path);
    auto dv = DeletionVectorFile(remove.deletion_vector);
    if (remove.deletion_timestamp && *remove.deletion_timestamp >= cutoff) {
      keep.insert(key);
      if (dv) keep.insert(*dv);
    } else {
      candidates.push_back(key);
      tombstoned.insert(key);
      if (dv) candidates.push_back(*dv);  // unless a kept file still uses it
    }
  }
  for (const auto& object : objects) {
    if (IsHidden(object.path, snapshot->partition_columns()) ||
        object.last_modified_ms >= cutoff) {
      continue;
    }
    candidates.push_back(object.path);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  VacuumResult result;
  result.dry_run = options.dry_run;
  for (const auto& key : candidates) {
    if (keep.count(key) != 0) continue;
    if (tombstoned.count(key) != 0 ? leases.Lists(key) : leases.Protects(key)) continue;
    auto head = store->Head(key);
    if (!head.ok()) continue;  // already gone
    result.bytes += head->size;
    result.files.push_back(key);
  }
  for (const auto& temporary : staging) {
    const Liveness owner =
        temporary.owner ? CheckLiveness(*temporary.owner) : Liveness::kUnknown;
    const bool abandoned =
        owner == Liveness::kDead ||
        (owner == Liveness::kUnknown && temporary.last_modified_ms < now - kStagingMaxAgeMs);
    if (abandoned && !leases.Protects(temporary.path)) {
      result.temporary_files.push_back(temporary.path);
    }
  }
  result.leases_expired = static_cast<int64_t>(leases.dead.size());
  if (options.dry_run) return result;
  for (const auto& lease : leases.dead) {
    AMPDELTA_LOG_INFO("delta vacuum expired lease key=", lease.key);
    ARROW_RETURN_NOT_OK(store->Delete(lease.key));
  }
  ARROW_RETURN_NOT_OK(store->DeleteMany(result.temporary_files));
  if (!result.files.empty()) {
    // VACUUM START / END: commitInfo-only commits, as Spark and delta-rs record them.
    Transaction start(store, snapshot);
    start.SetDataChange(false);
    start.SetOperation("VACUUM START",
                       {{"retentionCheckEnabled", options.enforce_retention ? "true" : "false"},
                        {"defaultRetentionMillis", std::to_string(table_retention)}});
    start.SetOperationMetrics({{"numFilesToDelete", std::to_string(result.files.size())},
                               {"sizeOfDataToDelete", std::to_string(result.bytes)}});
    ARROW_RETURN_NOT_OK(start.Commit().status());
    ARROW_RETURN_NOT_OK(store->DeleteMany(result.files));
    ARROW_ASSIGN_OR_RAISE(auto after, snapshot->Update());
    Transaction end(store, after);
    end.SetDataChange(false);
    end.SetOperation("VACUUM END", {{"status", "COMPLETED"}});
    end.SetOperationMetrics({{"numDeletedFiles", std::to_string(result.files.size())}});
    ARROW_RETURN_NOT_OK(end.Commit().status());
  }
  ARROW_RETURN_NOT_OK(announced->Release());
  AMPDELTA_LOG_INFO("delta vacuum deleted=", result.files.size(), " bytes=", result.bytes,
                    " temporary=", result.temporary_files.size(),
                    " leases_expired=", result.leases_expired);
  return result;
}

namespace {

arrow::Result<CommitResult> RestoreOnce(const std::shared_ptr<storage::ObjectStore>& store,
                                        Version version, const CommitOptions& commit) {
  ARROW_ASSIGN_OR_RAISE(auto latest, Snapshot::Load(store));
  ARROW_ASSIGN_OR_RAISE(auto target, Snapshot::Load(store, SnapshotOptions{version, std::nullopt}));
  ARROW_RETURN_NOT_OK(CheckWriteSupported(latest->protocol(), latest->metadata(), *latest->schema()));
  std::set<std::string> in_target;
  std::set<std::string> in_latest;
  for (const auto& add : target->files()) in_target.insert(FileIdentity(*target, add.path, add.deletion_vector));
  for (const auto& add : latest->files()) in_latest.insert(FileIdentity(*latest, add.path, add.deletion_vector));
  // The files to add back are protected by a lease before they are checked, and checked
  // only once no vacuum that could have missed the lease is running (write_lease.h).
  std::vector<std::string> revived;
  for (const auto& add : target->files()) {
    if (in_latest.count(FileIdentity(*target, add.path, add.deletion_vector)) != 0) continue;
    revived.push_back(target->FileKey(add.path));
    if (auto dv = DeletionVectorFile(add.deletion_vector)) revived.push_back(*dv);
  }
  ARROW_ASSIGN_OR_RAISE(auto lease, WriteLease::Acquire(store, LeaseKind::kWrite, revived));
  ARROW_RETURN_NOT_OK(WaitForVacuums(*store, std::chrono::minutes(10)));
  std::vector<Add> adds;
  for (const auto& add : target->files()) {
    if (in_latest.count(FileIdentity(*target, add.path, add.deletion_vector)) != 0) continue;
    if (auto dv = DeletionVectorFile(add.deletion_vector); dv && !store->Head(*dv).ok()) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid, "cannot restore version ",
                       version, ": its deletion vector ", *dv, " no longer exists (vacuumed)");
    }
    auto head = store->Head(target->FileKey(add.path));
    if (!head.ok()) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid, "cannot restore version ",
                       version, ": its file ", target->FileKey(add.path), " no longer exists (vacuumed)");
    }
    Add restored = add;
    restored.data_change = true;
    adds.push_back(std::move(restored));
  }
  std::vector<Remove> removes;
  // The files the target shares with the latest version stay: a concurrent commit that
  // removes one of them (a compaction, a delete) makes the restore start over.
  std::vector<std::string> kept;
  for (const auto& add : latest->files()) {
    if (in_target.count(FileIdentity(*latest, add.path, add.deletion_vector)) == 0) {
      removes.push_back(RemoveFor(add, /*data_change=*/true));
    } else {
      kept.push_back(latest->FileKey(add.path));
    }
  }
  Transaction txn(store, latest, commit);
  txn.ReadFiles(kept);
  if (!(target->metadata() == latest->metadata())) txn.SetMetadata(target->metadata());
  // The result is the target's files whatever happened meanwhile: what concurrent commits
  // added is removed as well (a stream notices and loads it again).
  txn.ReplaceWholeTable();
  const int64_t added = static_cast<int64_t>(adds.size());
  const int64_t removed = static_cast<int64_t>(removes.size());
  txn.AddFiles(std::move(adds));
  txn.RemoveFiles(std::move(removes));
  txn.SetOperation("RESTORE", {{"version", std::to_string(version)}});
  txn.SetOperationMetrics({{"numRestoredFiles", std::to_string(added)},
                           {"numRemovedFiles", std::to_string(removed)}});
  return txn.Commit();
}

}  // namespace

arrow::Result<CommitResult> Restore(std::shared_ptr<storage::ObjectStore> store, Version version,
                                    const CommitOptions& commit) {
  // A restore reads the whole table, so a concurrent writer (a stream) makes it conflict;
  // what it must do is still well defined, so it starts over from the new latest version.
  constexpr int kAttempts = 20;
  for (int attempt = 1;; ++attempt) {
    auto restored = RestoreOnce(store, version, commit);
    if (restored.ok() || !IsError(restored.status(), ErrorCode::kCommitConflict) ||
        attempt >= kAttempts) {
      return restored;
    }
    AMPDELTA_LOG_INFO("delta restore conflicted with a concurrent commit, starting over attempt=",
                      attempt);
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
  }
}

}  // namespace ampdelta::delta

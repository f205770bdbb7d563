#include "ampdelta/delta/maintenance.h"

#include <algorithm>
#include <map>
#include <set>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/deletion_vector.h"
#include "ampdelta/delta/file_tags.h"
#include "ampdelta/delta/partitioning.h"
#include "ampdelta/delta/scan.h"
#include "ampdelta/delta/table_features.h"
#include "ampdelta/delta/table_writer.h"
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
  DataFileOptions file_options = FileOptionsForTable(snapshot.get(), options.files);
  file_options.target_file_size = options.target_size;
  file_options.num_threads = 1;  // one output file per bin
  std::set<std::string> partitions;
  std::vector<Add> adds;
  std::vector<Remove> removes;
  std::vector<std::string> read;
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
    ARROW_ASSIGN_OR_RAISE(auto written, writer->Finish());
    const auto tags = MergeFileTags(bin);
    for (auto& add : written) {
      add.tags = tags;
      adds.push_back(std::move(add));
    }
    partitions.insert(PartitionFolder(snapshot->partition_columns(), bin.front()->partition_values));
  }
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
  ARROW_ASSIGN_OR_RAISE(auto committed, txn.Commit());
  result.version = committed.version;
  return result;
}

arrow::Result<VacuumResult> Vacuum(std::shared_ptr<storage::ObjectStore> store,
                                   const VacuumOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Snapshot::Load(store));
  // vacuumProtocolCheck: only a writer that understands every writer feature may vacuum.
  ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(), *snapshot->schema()));
  const int64_t table_retention = snapshot->properties().deleted_file_retention_ms;
  int64_t retention = table_retention;
  if (options.retention_hours) {
    retention = static_cast<int64_t>(*options.retention_hours * 3600.0 * 1000.0);
    if (options.enforce_retention && retention < table_retention) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "retention of ", *options.retention_hours, " hours is shorter than the table's ",
                       table_retention / 3600000.0, " hours (delta.deletedFileRetentionDuration): "
                       "readers of older versions could lose files; pass the override to insist");
    }
  }
  const int64_t now = NowMs();
  const int64_t cutoff = now - retention;
  // Files some version within the retention may read: live files, and files removed after
  // the cutoff; plus the deletion-vector files they use.
  std::set<std::string> keep;
  auto keep_dv = [&](const std::optional<DeletionVectorDescriptor>& dv) {
    if (dv && dv->storage_type == "u") {
      auto path = UuidDeletionVectorPath(dv->path_or_inline_dv);
      if (path.ok()) keep.insert(*path);
    }
  };
  for (const auto& add : snapshot->files()) {
    keep.insert(snapshot->FileKey(add.path));
    keep_dv(add.deletion_vector);
  }
  std::vector<std::string> candidates;
  for (const auto& remove : snapshot->tombstones()) {
    const std::string key = snapshot->FileKey(remove.path);
    if (remove.deletion_timestamp && *remove.deletion_timestamp >= cutoff) {
      keep.insert(key);
      keep_dv(remove.deletion_vector);
    } else {
      candidates.push_back(key);
    }
  }
  if (options.full) {
    ARROW_ASSIGN_OR_RAISE(auto objects, store->List("", ""));
    for (const auto& object : objects) {
      // Hidden and underscore folders (the log, checkpoints' sidecars, _change_data) stay.
      bool hidden = false;
      size_t begin = 0;
      while (begin < object.path.size()) {
        const char first = object.path[begin];
        if (first == '_' || first == '.') hidden = true;
        const size_t slash = object.path.find('/', begin);
        if (slash == std::string::npos) break;
        begin = slash + 1;
      }
      if (hidden || object.last_modified_ms >= cutoff) continue;
      candidates.push_back(object.path);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  VacuumResult result;
  result.dry_run = options.dry_run;
  for (const auto& key : candidates) {
    if (keep.count(key) != 0) continue;
    auto head = store->Head(key);
    if (!head.ok()) continue;  // already gone
    result.bytes += head->size;
    result.files.push_back(key);
  }
  if (options.dry_run || result.files.empty()) return result;
  // VACUUM START / END: commitInfo-only commits, as Spark and delta-rs record them.
  Transaction start(store, snapshot);
  start.SetDataChange(false);
  start.SetOperation("VACUUM START", {{"retentionCheckEnabled", options.enforce_retention ? "true" : "false"},
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
  AMPDELTA_LOG_INFO("delta vacuum deleted=", result.files.size(), " bytes=", result.bytes);
  return result;
}

arrow::Result<CommitResult> Restore(std::shared_ptr<storage::ObjectStore> store, Version version,
                                    const CommitOptions& commit) {
  ARROW_ASSIGN_OR_RAISE(auto latest, Snapshot::Load(store));
  ARROW_ASSIGN_OR_RAISE(auto target, Snapshot::Load(store, SnapshotOptions{version, std::nullopt}));
  ARROW_RETURN_NOT_OK(CheckWriteSupported(latest->protocol(), latest->metadata(), *latest->schema()));
  std::set<std::string> in_target;
  std::set<std::string> in_latest;
  for (const auto& add : target->files()) in_target.insert(FileIdentity(*target, add.path, add.deletion_vector));
  for (const auto& add : latest->files()) in_latest.insert(FileIdentity(*latest, add.path, add.deletion_vector));
  std::vector<Add> adds;
  for (const auto& add : target->files()) {
    if (in_latest.count(FileIdentity(*target, add.path, add.deletion_vector)) != 0) continue;
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
  for (const auto& add : latest->files()) {
    if (in_target.count(FileIdentity(*latest, add.path, add.deletion_vector)) == 0) {
      removes.push_back(RemoveFor(add, /*data_change=*/true));
    }
  }
  Transaction txn(store, latest, commit);
  if (!(target->metadata() == latest->metadata())) txn.SetMetadata(target->metadata());
  txn.ReadWholeTable();
  const int64_t added = static_cast<int64_t>(adds.size());
  const int64_t removed = static_cast<int64_t>(removes.size());
  txn.AddFiles(std::move(adds));
  txn.RemoveFiles(std::move(removes));
  txn.SetOperation("RESTORE", {{"version", std::to_string(version)}});
  txn.SetOperationMetrics({{"numRestoredFiles", std::to_string(added)},
                           {"numRemovedFiles", std::to_string(removed)}});
  return txn.Commit();
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/ops/vacuum.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/change_data_writer.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

namespace {

// A temporary file older than this belongs to no write in flight, whoever made it.
constexpr int64_t kStagingMaxAgeMs = 3600 * 1000;

bool IsHidden(const std::string& path,
              const std::vector<std::string>& partition_columns) {
  // Hidden and underscore folders (the log, leases, checkpoints' sidecars, _change_data),
  // but not the partition folders of columns whose names start with one (as Spark sees
  // it).
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

}  // namespace

arrow::Result<VacuumResult> Vacuum(std::shared_ptr<storage::ObjectStore> store,
                                   const VacuumOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto first, Snapshot::Load(store));
  return Vacuum(std::move(first), options);
}

arrow::Result<VacuumResult> Vacuum(std::shared_ptr<const Snapshot> first,
                                   const VacuumOptions& options) {
  const std::shared_ptr<storage::ObjectStore>& store = first->store();
  // vacuumProtocolCheck: only a writer that understands every writer feature may vacuum.
  ARROW_RETURN_NOT_OK(
      CheckWriteSupported(first->protocol(), first->metadata(), *first->schema()));
  const int64_t table_retention = first->properties().deleted_file_retention_ms;
  int64_t retention = table_retention;
  if (options.retention_hours) {
    const double hours = *options.retention_hours;
    if (!std::isfinite(hours) || hours < 0 || hours > 1e6) {
      return InvalidInputError(
          "retention must be a number of hours between 0 and 1000000, got ", hours);
    }
    retention = static_cast<int64_t>(hours * 3600.0 * 1000.0);
    if (options.enforce_retention && retention < table_retention) {
      return InvalidInputError(
          "retention of ", hours, " hours is shorter than the table's ",
          table_retention / 3600000.0,
          " hours (delta.deletedFileRetentionDuration): "
          "readers of older versions could lose files; to insist, disable the retention "
          "check (ampdelta table vacuum --force)");
    }
  }
  const int64_t now = NowMs();
  const int64_t cutoff = now - retention;
  // The order matters (write_lease.h): announce this vacuum (restores wait for it), list
  // the files, then read the leases, then the latest snapshot.
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
    if (auto dv = DeletionVectorFileKey(add.deletion_vector)) keep.insert(*dv);
  }
  for (const auto& remove : snapshot->tombstones()) {
    const std::string key = snapshot->FileKey(remove.path);
    auto dv = DeletionVectorFileKey(remove.deletion_vector);
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
  // Change data files are never live: the change feed of commits within the retention
  // reads those younger than the cutoff, the rest go (as Spark's VACUUM does).
  ARROW_ASSIGN_OR_RAISE(auto changes,
                        store->List(std::string(kChangeDataFolder) + "/", ""));
  for (const auto& object : changes) {
    if (object.last_modified_ms < cutoff) candidates.push_back(object.path);
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
        owner == Liveness::kDead || (owner == Liveness::kUnknown &&
                                     temporary.last_modified_ms < now - kStagingMaxAgeMs);
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
    start.SetOperation(
        "VACUUM START",
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

}  // namespace ampdelta::delta

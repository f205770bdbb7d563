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

// The retention asked for, in ms: the table's unless given, never shorter than the
// table's when enforced.
arrow::Result<int64_t> RetentionMs(int64_t table_retention,
                                   const VacuumOptions& options) {
  if (!options.retention_hours) return table_retention;
  const double hours = *options.retention_hours;
  if (!std::isfinite(hours) || hours < 0 || hours > 1e6) {
    return InvalidInputError(
        "retention must be a number of hours between 0 and 1000000, got ", hours);
  }
  const auto retention = static_cast<int64_t>(hours * 3600.0 * 1000.0);
  if (options.enforce_retention && retention < table_retention) {
    return InvalidInputError(
        "retention of ", hours, " hours is shorter than the table's ",
        table_retention / 3600000.0,
        " hours (delta.deletedFileRetentionDuration): "
        "readers of older versions could lose files; to insist, disable the retention "
        "check (ampdelta table vacuum --force)");
  }
  return retention;
}

// What the table holds as a vacuum finds it, read in the order write_lease.h requires:
// this vacuum announced (restores wait for it), the files listed, then the leases, then
// the latest snapshot.
struct VacuumView {
  std::shared_ptr<WriteLease> announced;        // none in a dry run
  std::vector<storage::ObjectMeta> objects;     // full vacuums only
  std::vector<storage::StagingObject> staging;  // full vacuums only
  std::vector<storage::ObjectMeta> change_data;
  Leases leases;
  std::shared_ptr<const Snapshot> snapshot;
};

arrow::Result<VacuumView> ReadVacuumView(const std::shared_ptr<const Snapshot>& first,
                                         const VacuumOptions& options, int64_t now) {
  const std::shared_ptr<storage::ObjectStore>& store = first->store();
  VacuumView view;
  if (!options.dry_run) {
    ARROW_ASSIGN_OR_RAISE(view.announced, WriteLease::Acquire(store, LeaseKind::kVacuum));
  }
  if (options.full) {
    ARROW_ASSIGN_OR_RAISE(view.objects, store->List("", ""));
    ARROW_ASSIGN_OR_RAISE(view.staging, store->ListStaging(""));
  }
  ARROW_ASSIGN_OR_RAISE(view.leases, ReadLeases(*store, now));
  ARROW_ASSIGN_OR_RAISE(view.snapshot, first->Update());
  ARROW_ASSIGN_OR_RAISE(view.change_data,
                        store->List(std::string(kChangeDataFolder) + "/", ""));
  return view;
}

// Files a vacuum may delete, before the leases and the store are asked.
struct VacuumCandidates {
  std::set<std::string> keep;        // some version within the retention reads them
  std::set<std::string> tombstoned;  // removed by the log before the cutoff
  std::vector<std::string> files;    // sorted, unique; may hold kept ones
};

VacuumCandidates FindCandidates(const VacuumView& view, int64_t cutoff) {
  const Snapshot& snapshot = *view.snapshot;
  VacuumCandidates found;
  // Files some version within the retention may read: live files, and files removed
  // after the cutoff; plus the deletion-vector files they use.
  for (const auto& add : snapshot.files()) {
    found.keep.insert(snapshot.FileKey(add.path));
    if (auto dv = DeletionVectorFileKey(add.deletion_vector)) found.keep.insert(*dv);
  }
  for (const auto& remove : snapshot.tombstones()) {
    const std::string key = snapshot.FileKey(remove.path);
    auto dv = DeletionVectorFileKey(remove.deletion_vector);
    if (remove.deletion_timestamp && *remove.deletion_timestamp >= cutoff) {
      found.keep.insert(key);
      if (dv) found.keep.insert(*dv);
    } else {
      found.files.push_back(key);
      found.tombstoned.insert(key);
      if (dv) found.files.push_back(*dv);  // unless a kept file still uses it
    }
  }
  // A full vacuum: any file of the table's folders the log does not mention.
  for (const auto& object : view.objects) {
    if (IsHidden(object.path, snapshot.partition_columns()) ||
        object.last_modified_ms >= cutoff) {
      continue;
    }
    found.files.push_back(object.path);
  }
  // Change data files are never live: the change feed of commits within the retention
  // reads those younger than the cutoff, the rest go (as Spark's VACUUM does).
  for (const auto& object : view.change_data) {
    if (object.last_modified_ms < cutoff) found.files.push_back(object.path);
  }
  std::sort(found.files.begin(), found.files.end());
  found.files.erase(std::unique(found.files.begin(), found.files.end()),
                    found.files.end());
  return found;
}

// The candidates no version within the retention reads and no live write lease protects
// (a removed file only when a lease lists it: a writer adds it back), still present.
void ChooseDeletable(const VacuumView& view, const VacuumCandidates& candidates,
                     VacuumResult* result) {
  for (const auto& key : candidates.files) {
    if (candidates.keep.count(key) != 0) continue;
    const bool protected_file = candidates.tombstoned.count(key) != 0
                                    ? view.leases.Lists(key)
                                    : view.leases.Protects(key);
    if (protected_file) continue;
    auto head = view.snapshot->store()->Head(key);
    if (!head.ok()) continue;  // already gone
    result->bytes += head->size;
    result->files.push_back(key);
  }
}

// Temporary files of writers known to have exited, or of unknown ones older than an
// hour, unless a live lease protects them.
std::vector<std::string> AbandonedTemporaryFiles(const VacuumView& view, int64_t now) {
  std::vector<std::string> abandoned_files;
  for (const auto& temporary : view.staging) {
    const Liveness owner =
        temporary.owner ? CheckLiveness(*temporary.owner) : Liveness::kUnknown;
    const bool abandoned =
        owner == Liveness::kDead || (owner == Liveness::kUnknown &&
                                     temporary.last_modified_ms < now - kStagingMaxAgeMs);
    if (abandoned && !view.leases.Protects(temporary.path)) {
      abandoned_files.push_back(temporary.path);
    }
  }
  return abandoned_files;
}

// VACUUM START, the deletes, VACUUM END: commitInfo-only commits around them, as Spark
// and delta-rs record them.
arrow::Status DeleteRecorded(const std::shared_ptr<const Snapshot>& snapshot,
                             const VacuumOptions& options, int64_t table_retention,
                             const VacuumResult& result) {
  const std::shared_ptr<storage::ObjectStore>& store = snapshot->store();
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
  return end.Commit().status();
}

arrow::Status ExecuteVacuum(const VacuumView& view, const VacuumOptions& options,
                            int64_t table_retention, const VacuumResult& result) {
  const std::shared_ptr<storage::ObjectStore>& store = view.snapshot->store();
  for (const auto& lease : view.leases.dead) {
    AMPDELTA_LOG_INFO("delta vacuum expired lease key=", lease.key);
    ARROW_RETURN_NOT_OK(store->Delete(lease.key));
  }
  ARROW_RETURN_NOT_OK(store->DeleteMany(result.temporary_files));
  if (!result.files.empty()) {
    ARROW_RETURN_NOT_OK(DeleteRecorded(view.snapshot, options, table_retention, result));
  }
  ARROW_RETURN_NOT_OK(view.announced->Release());
  AMPDELTA_LOG_INFO("delta vacuum deleted=", result.files.size(), " bytes=", result.bytes,
                    " temporary=", result.temporary_files.size(),
                    " leases_expired=", result.leases_expired);
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<VacuumResult> Vacuum(std::shared_ptr<storage::ObjectStore> store,
                                   const VacuumOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto first, Snapshot::Load(store));
  return Vacuum(std::move(first), options);
}

arrow::Result<VacuumResult> Vacuum(std::shared_ptr<const Snapshot> first,
                                   const VacuumOptions& options) {
  // vacuumProtocolCheck: only a writer that understands every writer feature may vacuum.
  ARROW_RETURN_NOT_OK(
      CheckWriteSupported(first->protocol(), first->metadata(), *first->schema()));
  const int64_t table_retention = first->properties().deleted_file_retention_ms;
  ARROW_ASSIGN_OR_RAISE(const int64_t retention, RetentionMs(table_retention, options));
  const int64_t now = NowMs();
  ARROW_ASSIGN_OR_RAISE(const VacuumView view, ReadVacuumView(first, options, now));
  VacuumResult result;
  result.dry_run = options.dry_run;
  ChooseDeletable(view, FindCandidates(view, now - retention), &result);
  result.temporary_files = AbandonedTemporaryFiles(view, now);
  result.leases_expired = static_cast<int64_t>(view.leases.dead.size());
  if (options.dry_run) return result;
  ARROW_RETURN_NOT_OK(ExecuteVacuum(view, options, table_retention, result));
  return result;
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/ops/restore.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/identity_columns.h"
#include "ampdelta/delta/write/table_writer.h"
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

namespace {

// Delta refuses to change a table's column mapping mode (Spark's RESTORE too): files
// written under one mode name their columns as the other cannot resolve.
arrow::Status CheckSameColumnMapping(const Snapshot& latest, const Snapshot& target) {
  const auto mode_of = [](const Snapshot& snapshot) {
    return ColumnMappingModeOf(snapshot.metadata().configuration)
        .ValueOr(ColumnMappingMode::kNone);
  };
  if (mode_of(latest) == mode_of(target)) return arrow::Status::OK();
  return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                   "restore to version ", target.version(), " would change ",
                   kColumnMappingModeKey, " (columnMapping) from ",
                   ColumnMappingModeName(mode_of(latest)), " to ",
                   ColumnMappingModeName(mode_of(target)),
                   ", which Delta does not allow; restore to a version made since the "
                   "mode was set");
}

// What a restore changes, decided from the two versions' logs: the target's files the
// latest lacks come back, the latest's files the target lacks go, the files both hold
// stay (a concurrent commit that removes one makes the restore start over).
struct RestorePlan {
  std::vector<const Add*> revived;
  std::vector<std::string> revived_keys;  // their data and deletion-vector files
  std::vector<Remove> removes;
  std::vector<std::string> kept;
};

RestorePlan PlanRestore(const Snapshot& latest, const Snapshot& target) {
  std::set<std::string> in_target;
  std::set<std::string> in_latest;
  for (const auto& add : target.files())
    in_target.insert(FileIdentity(target, add.path, add.deletion_vector));
  for (const auto& add : latest.files())
    in_latest.insert(FileIdentity(latest, add.path, add.deletion_vector));
  RestorePlan plan;
  for (const auto& add : target.files()) {
    if (in_latest.count(FileIdentity(target, add.path, add.deletion_vector)) != 0)
      continue;
    plan.revived.push_back(&add);
    plan.revived_keys.push_back(target.FileKey(add.path));
    if (auto dv = DeletionVectorFileKey(add.deletion_vector)) {
      plan.revived_keys.push_back(*dv);
    }
  }
  for (const auto& add : latest.files()) {
    if (in_target.count(FileIdentity(latest, add.path, add.deletion_vector)) == 0) {
      plan.removes.push_back(RemoveFor(add, /*data_change=*/true));
    } else {
      plan.kept.push_back(latest.FileKey(add.path));
    }
  }
  return plan;
}

// The revived files' adds, once each file (and deletion vector) is found still there.
arrow::Result<std::vector<Add>> RevivedAdds(const Snapshot& target,
                                            const RestorePlan& plan, Version version) {
  const auto& store = target.store();
  std::vector<Add> adds;
  for (const Add* add : plan.revived) {
    if (auto dv = DeletionVectorFileKey(add->deletion_vector);
        dv && !store->Head(*dv).ok()) {
      return InvalidInputError("cannot restore version ", version,
                               ": its deletion vector ", *dv,
                               " no longer exists (vacuumed)");
    }
    auto head = store->Head(target.FileKey(add->path));
    if (!head.ok()) {
      return InvalidInputError("cannot restore version ", version, ": its file ",
                               target.FileKey(add->path), " no longer exists (vacuumed)");
    }
    Add restored = *add;
    restored.data_change = true;
    adds.push_back(std::move(restored));
  }
  return adds;
}

// The target's metadata, but for what stays given since: column IDs (a column added
// later must not reuse one) and identity values (as Spark's RESTORE keeps them).
arrow::Result<Metadata> RestoredMetadata(const Snapshot& latest, const Snapshot& target) {
  Metadata restored = target.metadata();
  if (restored.configuration.count(kMaxColumnIdKey) != 0) {
    restored.configuration[kMaxColumnIdKey] = std::to_string(
        std::max(MaxColumnId(*latest.schema(), latest.metadata().configuration),
                 MaxColumnId(*target.schema(), restored.configuration)));
  }
  ARROW_ASSIGN_OR_RAISE(auto marked,
                        KeepHighWaterMarks(target.schema(), *latest.schema()));
  if (marked != target.schema()) {
    ARROW_ASSIGN_OR_RAISE(restored.schema_string, SchemaToJson(*marked));
  }
  return restored;
}

// Domains go back to the target's state too (a stream's cursor, clustering columns),
// all but the row ID high-water mark: IDs handed out since stay handed out.
void StageRestoredDomains(const Snapshot& latest, const Snapshot& target,
                          Transaction* txn) {
  for (const auto& [name, domain] : latest.domain_metadata()) {
    if (name == kRowTrackingDomain) continue;
    auto then = target.domain_metadata().find(name);
    if (then == target.domain_metadata().end()) {
      txn->SetDomainMetadata(
          DomainMetadata{name, domain.configuration, /*removed=*/true});
    }
  }
  for (const auto& [name, domain] : target.domain_metadata()) {
    if (name == kRowTrackingDomain) continue;
    auto now = latest.domain_metadata().find(name);
    if (now == latest.domain_metadata().end() || !(now->second == domain)) {
      txn->SetDomainMetadata(domain);
    }
  }
}

arrow::Result<CommitReport> RestoreOnce(
    const std::shared_ptr<storage::ObjectStore>& store, Version version,
    const CommitOptions& commit) {
  ARROW_ASSIGN_OR_RAISE(auto latest, Snapshot::Load(store));
  ARROW_ASSIGN_OR_RAISE(auto target,
                        Snapshot::Load(store, SnapshotOptions{version, std::nullopt}));
  ARROW_RETURN_NOT_OK(
      CheckWriteSupported(latest->protocol(), latest->metadata(), *latest->schema()));
  ARROW_RETURN_NOT_OK(CheckSameColumnMapping(*latest, *target));
  RestorePlan plan = PlanRestore(*latest, *target);
  // The files to add back are protected by a lease before they are checked, and checked
  // only once no vacuum that could have missed the lease is running (write_lease.h).
  ARROW_ASSIGN_OR_RAISE(auto lease,
                        WriteLease::Acquire(store, LeaseKind::kWrite, plan.revived_keys));
  ARROW_RETURN_NOT_OK(WaitForVacuums(*store, std::chrono::minutes(10)));
  ARROW_ASSIGN_OR_RAISE(std::vector<Add> adds, RevivedAdds(*target, plan, version));
  Transaction txn(store, latest, commit);
  txn.ReadFiles(plan.kept);
  ARROW_ASSIGN_OR_RAISE(Metadata restored, RestoredMetadata(*latest, *target));
  if (!(restored == latest->metadata())) txn.SetMetadata(std::move(restored));
  StageRestoredDomains(*latest, *target, &txn);
  // The result is the target's files whatever happened meanwhile: what concurrent commits
  // added is removed as well (a stream notices and loads it again).
  txn.ReplaceWholeTable();
  const int64_t added = static_cast<int64_t>(adds.size());
  const int64_t removed = static_cast<int64_t>(plan.removes.size());
  txn.AddFiles(std::move(adds));
  txn.RemoveFiles(std::move(plan.removes));
  txn.SetOperation("RESTORE", {{"version", std::to_string(version)}});
  txn.SetOperationMetrics({{"numRestoredFiles", std::to_string(added)},
                           {"numRemovedFiles", std::to_string(removed)}});
  return txn.Commit();
}

}  // namespace

arrow::Result<CommitReport> Restore(std::shared_ptr<storage::ObjectStore> store,
                                    Version version, const CommitOptions& commit) {
  // A restore reads the whole table, so a concurrent writer (a stream) makes it conflict;
  // what it must do is still well defined, so it starts over from the new latest version.
  constexpr int kAttempts = 20;
  for (int attempt = 1;; ++attempt) {
    auto restored = RestoreOnce(store, version, commit);
    if (restored.ok() || !IsError(restored.status(), ErrorCode::kCommitConflict) ||
        attempt >= kAttempts) {
      return restored;
    }
    AMPDELTA_LOG_INFO(
        "delta restore conflicted with a concurrent commit, starting over attempt=",
        attempt);
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
  }
}

}  // namespace ampdelta::delta

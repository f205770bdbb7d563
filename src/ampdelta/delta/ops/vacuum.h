#pragma once

/// \file vacuum.h
/// \brief VACUUM: delete the files no version within the retention reads.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief VACUUM settings.
struct VacuumOptions {
  /// Keep files any version of the last `retention_hours` may read; default: the table's
  /// `delta.deletedFileRetentionDuration` (7 days).
  std::optional<double> retention_hours;
  /// Only report what would be deleted.
  bool dry_run = false;
  /// Refuse a retention shorter than the table's (pass false to override, at your risk).
  bool enforce_retention = true;
  /// Also delete files in the table's folders that the log never mentions (older than the
  /// retention); otherwise only files the log removed.
  bool full = false;
};

/// \brief What VACUUM found and deleted.
struct VacuumResult {
  std::vector<std::string> files;  // deleted (or, in a dry run, to be deleted)
  int64_t bytes = 0;
  bool dry_run = false;
  /// Temporary files crashed writers left (full vacuums), deleted or to be deleted.
  std::vector<std::string> temporary_files;
  /// Write leases of writers that exited or went silent, removed (or to be removed).
  int64_t leases_expired = 0;
};

/// \brief Delete data files no version within the retention reads, and the
/// deletion-vector files only they used. Files of writes in flight are never deleted
/// (write_lease.h): a full vacuum with zero retention during a load leaves the load's
/// files alone. A full vacuum also deletes temporary files of crashed writers (a process
/// known to have exited, or older than an hour).
/// Starts from `snapshot` and brings it up to date only after announcing itself and
/// reading the leases (the order write_lease.h requires).
arrow::Result<VacuumResult> Vacuum(std::shared_ptr<const Snapshot> snapshot,
                                   const VacuumOptions& options = {});

/// \brief Vacuum starting from the latest snapshot of the table at `store` (for callers
/// that hold no snapshot: the CLI, the Python module).
arrow::Result<VacuumResult> Vacuum(std::shared_ptr<storage::ObjectStore> store,
                                   const VacuumOptions& options = {});

}  // namespace ampdelta::delta

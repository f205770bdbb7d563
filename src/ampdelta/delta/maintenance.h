#pragma once

/// \file maintenance.h
/// \brief Table maintenance: OPTIMIZE (bin-packing compaction), VACUUM and RESTORE.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/data_file_writer.h"
#include "ampdelta/delta/snapshot.h"
#include "ampdelta/delta/transaction.h"

namespace ampdelta::delta {

/// \brief Compaction settings.
struct OptimizeOptions {
  /// Files are packed into files of about this size; files at least this large stay.
  int64_t target_size = 128 * 1024 * 1024;
  /// Only files this accepts are compacted (e.g. a stream's finalised files); all when unset.
  std::function<bool(const Add&)> eligible;
  DataFileOptions files;
  CommitOptions commit;
};

/// \brief What a compaction did.
struct OptimizeResult {
  std::optional<Version> version;  // unset when nothing needed compacting
  int64_t files_removed = 0;
  int64_t files_added = 0;
  int64_t partitions_optimized = 0;
  int64_t rows = 0;
};

/// \brief Bin-pack the small files of each partition into files of about the target size,
/// in one commit whose actions have dataChange = false: readers see the same rows, and
/// concurrent appends never conflict with it. Deletion vectors are applied while rewriting;
/// the new files' tags are merged from the old ones (file_tags.h).
arrow::Result<OptimizeResult> Optimize(std::shared_ptr<storage::ObjectStore> store,
                                       const OptimizeOptions& options = {});

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

/// \brief Delete data files no version within the retention reads, and the deletion-vector
/// files only they used. Files of writes in flight are never deleted (write_lease.h): a
/// full vacuum with zero retention during a load leaves the load's files alone. A full
/// vacuum also deletes temporary files of crashed writers (a process known to have exited,
/// or older than an hour).
arrow::Result<VacuumResult> Vacuum(std::shared_ptr<storage::ObjectStore> store,
                                   const VacuumOptions& options = {});

/// \brief Make the latest version's content equal `version`'s, in one commit (earlier and
/// later versions stay readable). Fails when files of that version were vacuumed.
arrow::Result<CommitResult> Restore(std::shared_ptr<storage::ObjectStore> store, Version version,
                                    const CommitOptions& commit = {});

}  // namespace ampdelta::delta

#pragma once

/// \file log_segment.h
/// \brief The log files that make up one table version: the newest usable checkpoint at
/// or below it plus the contiguous commits after that checkpoint.

#include <memory>
#include <optional>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief One complete checkpoint: a single file, every part of a multi-part checkpoint,
/// or a UUID-named V2 checkpoint.
struct CheckpointFiles {
  Version version = 0;
  std::vector<ParsedLogPath> files;
};

/// \brief Files to replay for a version. Commits are ascending and contiguous.
struct LogSegment {
  Version version = 0;
  std::optional<CheckpointFiles> checkpoint;
  std::vector<ParsedLogPath> commits;
  /// Older complete checkpoints (newest first), to fall back on if `checkpoint` is
  /// damaged.
  std::vector<CheckpointFiles> older_checkpoints;
  /// Every commit listed (ascending), including those before the checkpoint; used to fall
  /// back to a full replay.
  std::vector<ParsedLogPath> listed_commits;
  /// `_last_checkpoint` names a version with no checkpoint (past the latest version,
  /// say): the next writer repairs it (other readers, deltalake among them, refuse such a
  /// table).
  bool stale_checkpoint_hint = false;
  /// The version that stale hint names.
  std::optional<Version> stale_hint_version;
};

/// \brief Build the segment for `target` (the latest version when unset).
///
/// A stale, missing or unparsable `_last_checkpoint` only costs a longer listing. Errors:
/// kNotFound when there is no `_delta_log`; kCorruptLog for non-contiguous versions or
/// when version 0 and every checkpoint are missing; Invalid for a version beyond the
/// latest.
arrow::Result<LogSegment> BuildLogSegment(storage::ObjectStore& store,
                                          std::optional<Version> target);

/// \brief List every commit file, ascending (for history and time travel by timestamp).
arrow::Result<std::vector<ParsedLogPath>> ListCommits(storage::ObjectStore& store);

/// \brief Read `_last_checkpoint`'s version, or nullopt when absent or unreadable.
std::optional<Version> ReadLastCheckpointHint(storage::ObjectStore& store);

/// \brief Return a kCorruptLog error: the log of the table at `root` is unusable because
/// of `what`.
arrow::Status CorruptLogError(const std::string& root, const std::string& what);

}  // namespace ampdelta::delta

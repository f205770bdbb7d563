#pragma once

/// \file checkpoint_writer.h
/// \brief Write checkpoints and `_last_checkpoint` (PROTOCOL.md "Checkpoints", "Last
/// Checkpoint File"): classic single-file checkpoints, and on tables with the
/// `v2Checkpoint` feature UUID-named V2 checkpoints (a `checkpointMetadata` row, file
/// actions in sidecars when there are many) as Spark writes them.

#include <memory>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/snapshot.h"

namespace ampdelta::delta {

/// \brief What a checkpoint write produced.
struct CheckpointInfo {
  Version version = 0;
  int64_t num_actions = 0;
  int64_t num_add_files = 0;
  int64_t size_in_bytes = 0;
  /// The checkpoint file, relative to the table.
  std::string path;
  /// V2 checkpoints: the sidecar files holding its file actions, if any.
  int64_t num_sidecars = 0;
};

/// \brief How a V2 checkpoint lays out its file actions (adds and tombstones).
struct CheckpointOptions {
  /// More file actions than this go to sidecars (a small table's stay inline).
  int64_t max_inline_file_actions = 10'000;
  /// The most file actions one sidecar holds.
  int64_t file_actions_per_sidecar = 100'000;
};

/// \brief Return the Arrow schema of a classic checkpoint file (Spark's layout).
std::shared_ptr<arrow::Schema> CheckpointSchema();

/// \brief Return the Arrow schema of a V2 checkpoint's top-level file: the classic one
/// with `checkpointMetadata` and `sidecar`.
std::shared_ptr<arrow::Schema> V2CheckpointSchema();

/// \brief Write a checkpoint of the snapshot and point `_last_checkpoint` at it:
/// `<version>.checkpoint.parquet`, or on a `v2Checkpoint` table
/// `<version>.checkpoint.<uuid>.parquet` (its sidecars first). Tombstones older than the
/// deleted-file retention and expired app transactions are dropped; commitInfo never
/// appears in checkpoints.
/// \param[in] now_ms the current time (tombstone expiry is measured from it)
arrow::Result<CheckpointInfo> WriteCheckpoint(const Snapshot& snapshot, int64_t now_ms,
                                              const CheckpointOptions& options = {});

}  // namespace ampdelta::delta

#pragma once

/// \file checkpoint_writer.h
/// \brief Write classic single-file checkpoints and `_last_checkpoint`
/// (PROTOCOL.md "Checkpoints", "Last Checkpoint File").

#include <memory>

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
};

/// \brief Return the Arrow schema of a classic checkpoint file (Spark's layout).
std::shared_ptr<arrow::Schema> CheckpointSchema();

/// \brief Write `<version>.checkpoint.parquet` for the snapshot and point
/// `_last_checkpoint` at it. Tombstones older than the deleted-file retention and expired
/// app transactions are dropped; commitInfo never appears in checkpoints.
/// \param[in] now_ms the current time (tombstone expiry is measured from it)
arrow::Result<CheckpointInfo> WriteCheckpoint(const Snapshot& snapshot, int64_t now_ms);

}  // namespace ampdelta::delta

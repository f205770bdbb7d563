#pragma once

/// \file checkpoint_reader.h
/// \brief Read checkpoint files into actions: classic and multi-part Parquet checkpoints,
/// and V2 checkpoints (JSON or Parquet) with their sidecars.

#include <functional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/log_segment.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief Receives actions one at a time; an error stops the read.
using ActionSink = std::function<arrow::Status(Action&&)>;

/// \brief Pass every action of a checkpoint to `sink`, following V2 sidecars, without
/// holding them all (a million-file checkpoint's actions are most of a snapshot's
/// memory). On error, `sink` may have seen some of the actions.
arrow::Status VisitCheckpoint(storage::ObjectStore& store,
                              const CheckpointFiles& checkpoint, const ActionSink& sink);

/// \brief Read every action of a checkpoint, following V2 sidecars.
/// Statistics stored only as `stats_parsed` are turned into the JSON `stats` string.
arrow::Result<std::vector<Action>> ReadCheckpoint(storage::ObjectStore& store,
                                                  const CheckpointFiles& checkpoint);

/// \brief Pass the actions of one Parquet file laid out with the checkpoint schema to
/// `sink`.
arrow::Status VisitParquetActions(storage::ObjectStore& store, const std::string& path,
                                  const ActionSink& sink);

/// \brief Read the actions of one Parquet file laid out with the checkpoint schema (a
/// nullable struct column per action type).
arrow::Result<std::vector<Action>> ReadParquetActions(storage::ObjectStore& store,
                                                      const std::string& path);

}  // namespace ampdelta::delta

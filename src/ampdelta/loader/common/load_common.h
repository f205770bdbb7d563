#pragma once

/// \file load_common.h
/// \brief What batch and streaming loads share: write options from the configuration,
/// retry back-off, and the once-per-load maintenance.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/loader/common/load_result.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::loader::internal {

/// \brief The table write options of a load (mode, partitioning, schema rules, codec,
/// sizes).
arrow::Result<delta::TableWriteOptions> WriteOptions(const DeltaLakeConfig& config,
                                                     const LoadOptions& options);

/// \brief Wait `delay` in slices, to see options.stop within 50 ms; return true when
/// stopping.
bool SleepUnlessStopped(const LoadOptions& options, std::chrono::milliseconds delay);

/// \brief Delay before retry `attempt` (0-based) per `resilience.retry`.
std::chrono::milliseconds Backoff(const RetryConfig& retry, int attempt);

/// \brief optimize_after_write / vacuum_after_write, once, after a load's commit, on
/// `committed` (the table at or before that commit; null: read it from `store`) brought
/// up to date; failures are reported in the result's metadata and never undo the load.
/// Compaction packs files in `block_column` order, so each new file holds a run of
/// blocks.
void RunMaintenance(const std::shared_ptr<storage::ObjectStore>& store,
                    const std::shared_ptr<const delta::Snapshot>& committed,
                    const DeltaLakeConfig& config, const delta::TableWriteOptions& write,
                    const std::string& block_column, LoadResult* result);

/// \brief The store a load writes to: `options.store`, else the one `table_path` names;
/// warns (log and result metadata) when cloud credentials are missing.
arrow::Result<std::shared_ptr<storage::ObjectStore>> OpenStore(
    const DeltaLakeConfig& config, const LoadOptions& options, LoadResult* result);

/// \brief Run a load and fill in what every LoadResult reports: table name, duration,
/// success or the error, rows per second. `body` fills rows_loaded and metadata.
LoadResult RunLoad(const DeltaLakeConfig& config, const LoadOptions& options,
                   const std::function<arrow::Status(LoadResult*)>& body);

}  // namespace ampdelta::loader::internal

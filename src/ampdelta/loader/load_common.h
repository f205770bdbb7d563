#pragma once

/// \file load_common.h
/// \brief What batch and streaming loads share: write options from the configuration,
/// retry back-off, and the once-per-load maintenance.

#include <chrono>
#include <memory>
#include <string>

#include <arrow/result.h>

#include "ampdelta/delta/table_writer.h"
#include "ampdelta/loader/batch_loader.h"
#include "ampdelta/loader/config.h"
#include "ampdelta/loader/load_result.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::loader::internal {

/// \brief Return true for `merge` and `upsert`.
bool IsMerge(const std::string& mode);

/// \brief The table write options of a load (mode, partitioning, schema rules, codec, sizes).
arrow::Result<delta::TableWriteOptions> WriteOptions(const DeltaLakeConfig& config,
                                                     const LoadOptions& options);

/// \brief Delay before retry `attempt` (0-based) per `resilience.retry`.
std::chrono::milliseconds Backoff(const RetryConfig& retry, int attempt);

/// \brief optimize_after_write / vacuum_after_write, once, after a load's commit; failures
/// are reported in the result's metadata and never undo the load.
void RunMaintenance(const std::shared_ptr<storage::ObjectStore>& store,
                    const DeltaLakeConfig& config, const delta::TableWriteOptions& write,
                    LoadResult* result);

}  // namespace ampdelta::loader::internal

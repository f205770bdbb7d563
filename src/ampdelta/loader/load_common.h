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
#include "ampdelta/loader/batch_loader.h"
#include "ampdelta/loader/config.h"
#include "ampdelta/loader/load_result.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::loader::internal {

/// \brief What a batch load records in the table besides its rows (a backfill
/// partition's claim on its block range).
struct LoadRecords {
  std::optional<delta::SetTransaction> app_transaction;
  std::vector<delta::SetTransaction> transaction_records;
  /// TableWriteOptions::overlapping_app_ids.
  std::function<bool(const std::string&)> overlapping_app_ids;
  /// Tags of every data file.
  delta::NullableStringMap file_tags;
  /// Called with the load's rows just before its commit (append loads): a backfill
  /// partition's tag and record count them.
  std::function<arrow::Status(int64_t rows, delta::TableWriter* writer)> before_commit;
  /// TableWriteOptions::superseded_app_ids.
  std::set<std::string> superseded_app_ids;
  /// TableWriteOptions::claimed_adds.
  std::function<bool(const delta::Add&)> claimed_adds;
  /// The table as the caller planned the load on (null: read it at the start).
  std::shared_ptr<const delta::Snapshot> read_snapshot;
};

/// \brief LoadBatch, committing `records` with the rows.
LoadResult LoadBatchRecorded(amp::Client& client, const std::string& sql,
                             const DeltaLakeConfig& config, const LoadOptions& options,
                             const LoadRecords& records);

/// \brief Return true for `merge` and `upsert`.
bool IsMerge(const std::string& mode);

/// \brief The table write options of a load (mode, partitioning, schema rules, codec,
/// sizes).
arrow::Result<delta::TableWriteOptions> WriteOptions(const DeltaLakeConfig& config,
                                                     const LoadOptions& options);

/// \brief Delay before retry `attempt` (0-based) per `resilience.retry`.
std::chrono::milliseconds Backoff(const RetryConfig& retry, int attempt);

/// \brief optimize_after_write / vacuum_after_write, once, after a load's commit;
/// failures are reported in the result's metadata and never undo the load.
void RunMaintenance(const std::shared_ptr<storage::ObjectStore>& store,
                    const DeltaLakeConfig& config, const delta::TableWriteOptions& write,
                    LoadResult* result);

/// \brief The store a load writes to: `options.store`, else the one `table_path` names;
/// warns (log and result metadata) when cloud credentials are missing.
arrow::Result<std::shared_ptr<storage::ObjectStore>> OpenStore(
    const DeltaLakeConfig& config, const LoadOptions& options, LoadResult* result);

/// \brief Run a load and fill in what every LoadResult reports: table name, duration,
/// success or the error, rows per second. `body` fills rows_loaded and metadata.
LoadResult RunLoad(const DeltaLakeConfig& config, const LoadOptions& options,
                   const std::function<arrow::Status(LoadResult*)>& body);

}  // namespace ampdelta::loader::internal

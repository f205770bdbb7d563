#include "ampdelta/loader/common/load_common.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/loader/common/telemetry.h"
#include "ampdelta/storage/credentials.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/backoff.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader::internal {

namespace {

delta::SaveMode SaveModeOf(LoadMode mode) {
  switch (mode) {
    case LoadMode::kOverwrite:
      return delta::SaveMode::kOverwrite;
    case LoadMode::kErrorIfExists:
      return delta::SaveMode::kErrorIfExists;
    case LoadMode::kIgnore:
      return delta::SaveMode::kIgnore;
    default:
      return delta::SaveMode::kAppend;
  }
}

}  // namespace

arrow::Result<delta::TableWriteOptions> WriteOptions(const DeltaLakeConfig& config,
                                                     const LoadOptions& options) {
  delta::TableWriteOptions write;
  const std::string mode = LoadModeName(options.mode);
  if (IsMerge(options.mode)) {
    if (options.merge_keys.empty()) {
      return InvalidInputError("mode '", mode,
                               "' needs merge_keys: the columns that identify a row");
    }
    if (options.commit_every_rows) {
      return InvalidInputError("commit_every_rows cannot be combined with mode '", mode,
                               "' (a merge commits once)");
    }
  } else {
    write.mode = SaveModeOf(options.mode);
    if (!options.merge_keys.empty()) {
      // Keys a load would not use: the user expects a merge and would get duplicates.
      return InvalidInputError(
          "merge_keys are the keys of mode 'merge' or 'upsert'; mode '", mode,
          "' does not use them (did you mean --mode merge?)");
    }
  }
  if (options.commit_every_rows && *options.commit_every_rows <= 0) {
    return InvalidInputError("commit_every_rows must be a positive number of rows");
  }
  write.partition_by = config.partition_by;
  write.cluster_by = config.cluster_by;
  write.configuration = config.table_properties;
  write.readers = config.readers;
  write.merge_schema = config.merge_schema;
  write.types = delta::TypeMapping(config.integer_mapping, config.wide_integers);
  if (config.unsigned64) write.types.unsigned64 = *config.unsigned64;
  write.types.block_columns.push_back(options.block_column);
  // schema_evolution: an overwrite may replace the table's schema.
  write.overwrite_schema = config.schema_evolution;
  ARROW_ASSIGN_OR_RAISE(write.files.codec, delta::ParseCodec(options.compression));
  write.files.compression_level = options.compression_level;
  if (config.file_size_hint) write.files.target_file_size = *config.file_size_hint;
  if (config.max_rows_per_file) write.files.max_rows_per_file = *config.max_rows_per_file;
  if (config.max_rows_per_group)
    write.files.max_rows_per_group = *config.max_rows_per_group;
  if (config.writer_threads)
    write.files.num_threads = static_cast<int>(*config.writer_threads);
  if (config.memory_budget_mib)
    write.files.memory_budget_bytes = *config.memory_budget_mib << 20;
  return write;
}

bool SleepUnlessStopped(const LoadOptions& options, std::chrono::milliseconds delay) {
  constexpr std::chrono::milliseconds kSlice{50};
  while (delay.count() > 0) {
    if (options.stop != nullptr && options.stop->load()) return true;
    const auto slice = std::min(delay, kSlice);
    options.sleep(slice);
    delay -= slice;
  }
  return options.stop != nullptr && options.stop->load();
}

// Delay before retry `attempt` (0-based) per resilience.retry.
std::chrono::milliseconds Backoff(const RetryConfig& retry, int attempt) {
  return BackoffPolicy{std::chrono::milliseconds(retry.initial_backoff_ms),
                       std::chrono::milliseconds(retry.max_backoff_ms),
                       retry.backoff_multiplier, retry.jitter}
      .Delay(attempt);
}

void RunMaintenance(const std::shared_ptr<storage::ObjectStore>& store,
                    const std::shared_ptr<const delta::Snapshot>& committed,
                    const DeltaLakeConfig& config, const delta::TableWriteOptions& write,
                    const std::string& block_column, LoadResult* result) {
  // Once per load, after the commit: a failure is reported, the load stands.
  if (!config.optimize_after_write && !config.vacuum_after_write) return;
  // The snapshot the load committed on, brought up to date (its commits since: one
  // listing from its version), rather than the whole log read again.
  auto latest = committed != nullptr ? committed->Update() : delta::Snapshot::Load(store);
  if (!latest.ok() && committed != nullptr) latest = delta::Snapshot::Load(store);
  if (!latest.ok()) {
    const std::string error = latest.status().message();
    if (config.optimize_after_write) result->metadata["optimize_error"] = error;
    if (config.vacuum_after_write) result->metadata["vacuum_error"] = error;
    return;
  }
  std::shared_ptr<const delta::Snapshot> snapshot = *latest;
  if (config.optimize_after_write) {
    delta::OptimizeOptions optimize;
    if (config.file_size_hint) optimize.target_size = *config.file_size_hint;
    optimize.files.codec = write.files.codec;
    optimize.order_by = block_column;
    auto compacted = delta::Optimize(snapshot, optimize);
    if (compacted.ok()) {
      if (compacted->version) {
        telemetry::Compacted(result->table_name, *compacted->version,
                             compacted->files_removed, compacted->files_added);
        result->metadata["optimize_version"] = static_cast<int64_t>(*compacted->version);
        result->metadata["optimize_files_removed"] =
            static_cast<int64_t>(compacted->files_removed);
        result->metadata["optimize_files_stitched"] =
            static_cast<int64_t>(compacted->files_stitched);
      }
    } else {
      result->metadata["optimize_error"] = compacted.status().message();
    }
  }
  if (config.vacuum_after_write) {
    // Vacuum brings the snapshot up to date itself (after reading the leases).
    auto vacuumed = delta::Vacuum(snapshot);
    if (vacuumed.ok()) {
      result->metadata["vacuum_files_deleted"] =
          static_cast<int64_t>(vacuumed->files.size());
    } else {
      result->metadata["vacuum_error"] = vacuumed.status().message();
    }
  }
}

arrow::Result<std::shared_ptr<storage::ObjectStore>> OpenStore(
    const DeltaLakeConfig& config, const LoadOptions& options, LoadResult* result) {
  const std::string warning =
      storage::MissingCredentialsWarning(config.table_path, config.storage_options);
  if (!warning.empty()) {
    AMPDELTA_LOG_WARN(warning);
    result->metadata["warning"] = warning;
  }
  if (options.store != nullptr) return options.store;
  return storage::OpenObjectStore(config.table_path, config.storage_options);
}

LoadResult RunLoad(const DeltaLakeConfig& config, const LoadOptions& options,
                   const std::function<arrow::Status(LoadResult*)>& body) {
  LoadResult result;
  // The table path may carry credentials in its user-info: never echo them.
  result.table_name =
      RedactUrl(options.destination.empty() ? config.table_path : options.destination);
  const auto start = std::chrono::steady_clock::now();
  arrow::Status status = body(&result);
  result.duration =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) telemetry::Failed(status);
  result.success = status.ok();
  if (!status.ok()) result.error = status.message();
  result.status = status;
  result.ops_per_second =
      result.duration > 0 ? static_cast<double>(result.rows_loaded) / result.duration : 0;
  return result;
}

}  // namespace ampdelta::loader::internal

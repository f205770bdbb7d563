#pragma once

/// \file recorded_load.h
/// \brief A batch load that commits records with its rows: how a backfill partition
/// claims its block range in the same commit as the rows that fill it.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/status.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/loader/common/load_result.h"

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

/// \brief LoadRecordBatches, committing `records` with the rows.
LoadResult LoadRecordBatchesRecorded(
    const std::shared_ptr<arrow::RecordBatchReader>& reader,
    const DeltaLakeConfig& config, const LoadOptions& options,
    const LoadRecords& records);

}  // namespace ampdelta::loader::internal

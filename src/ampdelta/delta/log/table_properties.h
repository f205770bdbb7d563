#pragma once

/// \file table_properties.h
/// \brief Typed view of the `delta.*` table properties ampdelta acts on.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <arrow/result.h>

namespace ampdelta::delta {

/// \brief Table properties with Spark's defaults.
struct TableProperties {
  /// `delta.checkpointInterval`: checkpoint every N commits.
  int64_t checkpoint_interval = 10;
  /// `delta.logRetentionDuration` (default 30 days), milliseconds.
  int64_t log_retention_ms = int64_t{30} * 24 * 3600 * 1000;
  /// `delta.deletedFileRetentionDuration` (default 1 week), milliseconds.
  int64_t deleted_file_retention_ms = int64_t{7} * 24 * 3600 * 1000;
  /// `delta.enableExpiredLogCleanup`.
  bool enable_expired_log_cleanup = true;
  /// `delta.appendOnly`.
  bool append_only = false;
  /// `delta.dataSkippingNumIndexedCols` (-1: all columns).
  int64_t data_skipping_num_indexed_cols = 32;
  /// `delta.dataSkippingStatsColumns`, when set.
  std::optional<std::string> data_skipping_stats_columns;
  /// `delta.targetFileSize` in bytes, when set.
  std::optional<int64_t> target_file_size;
  /// `delta.setTransactionRetentionDuration`, when set.
  std::optional<int64_t> set_transaction_retention_ms;
  /// `delta.enableChangeDataFeed`: commits that remove or rewrite rows record them in
  /// `_change_data` files (PROTOCOL.md "Add CDC File").
  bool enable_change_data_feed = false;
  /// `delta.enableInCommitTimestamps`: every commit carries its time in commitInfo.
  bool enable_in_commit_timestamps = false;
  /// `delta.enableDeletionVectors`: deletes mark rows in deletion vectors instead of
  /// rewriting files (on tables whose protocol has the feature).
  bool enable_deletion_vectors = false;
};

/// \brief Parse the properties of a table's configuration; unknown keys are ignored and
/// malformed values fall back to defaults.
TableProperties ParseTableProperties(
    const std::map<std::string, std::string>& configuration);

/// \brief Return `config` as a table should record it: `delta.*` keys in their canonical
/// spelling whatever the case and surrounding spaces, boolean values as `true`/`false`,
/// then checked (ValidateTableProperties). Errors: kInvalidInput naming an unknown
/// `delta.*` key (with the known ones), a key given twice in different spellings, or a
/// value ValidateTableProperties refuses.
arrow::Result<std::map<std::string, std::string>> NormalizeTableProperties(
    const std::map<std::string, std::string>& config);

/// \brief Check the values of the properties ampdelta interprets (intervals, counts,
/// booleans), for a write that sets them: kInvalidInput names the key and the value.
arrow::Status ValidateTableProperties(
    const std::map<std::string, std::string>& configuration);

/// \brief Parse `interval <n> <unit>` (also without the `interval` prefix) to
/// milliseconds.
arrow::Result<int64_t> ParseIntervalMs(const std::string& text);

}  // namespace ampdelta::delta

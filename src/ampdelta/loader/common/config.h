#pragma once

/// \file config.h
/// \brief The `deltalake` connection configuration (product.md §4), with the Python SDK's
/// keys, defaults and error messages.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/schema.h"

namespace ampdelta::loader {

/// \brief `resilience.retry` (amp-protocol.md §3.8).
struct RetryConfig {
  bool enabled = true;
  int max_retries = 5;
  int64_t initial_backoff_ms = 2000;
  int64_t max_backoff_ms = 120000;
  double backoff_multiplier = 2.0;
  bool jitter = true;
};

/// \brief `state` (amp-protocol.md §3.8).
struct StateConfig {
  bool enabled = true;
  std::string storage = "memory";
  std::string data_dir = ".amp_state";
  bool store_batch_id = true;
  bool store_full_metadata = false;
  /// `state.cursor_in_log`: a stream also records its cursor in the table's log, as
  /// domain metadata (stream_cursor_log.h), adding the `domainMetadata` writer feature
  /// (which deltalake 1.6.6 cannot write to). A table that has the feature gets the
  /// record anyway.
  bool cursor_in_log = false;
};

/// \brief A validated `deltalake` connection.
struct DeltaLakeConfig {
  std::string table_path;
  std::map<std::string, std::string> storage_options;
  std::vector<std::string> partition_by;
  /// `cluster_by`: Liquid clustering columns (delta/log/clustering.h); the table gains
  /// the `clustering` and `domainMetadata` writer features. Unset: the table keeps its
  /// own.
  std::optional<std::vector<std::string>> cluster_by;
  /// `table_properties`: `delta.*` properties of the table (a new table is created with
  /// them; an existing one gets those that differ in the load's first commit).
  std::map<std::string, std::string> table_properties;
  /// `readers`: engines that must read the table (delta/log/reader_support.h); a load
  /// whose table would need a feature one of them cannot read is refused.
  std::vector<std::string> readers;
  bool optimize_after_write = true;
  bool vacuum_after_write = false;
  bool merge_schema = true;
  bool schema_evolution = true;
  /// `type_mapping`: how new columns store unsigned integers: "lossless" (the default,
  /// uint32 → long) or "deltalake" (the Python SDK's tables: uint32 → integer).
  delta::IntegerMapping integer_mapping = delta::IntegerMapping::kLossless;
  /// `wide_integers`: how new columns store integers wider than decimal(38) (Amp's
  /// Decimal256(76, 0)): "string" (the default: decimal text, lossless) or "decimal"
  /// (decimal(38, 0); a value with more digits fails the load, naming it).
  delta::WideIntegers wide_integers = delta::WideIntegers::kString;
  /// `uint64`: how new columns and fields store uint64 (delta::Unsigned64): "auto",
  /// "decimal" or "long"; unset: "long" with type_mapping "deltalake", else "auto".
  std::optional<delta::Unsigned64> unsigned64;
  std::optional<int64_t> file_size_hint;
  std::optional<int64_t> max_rows_per_file;
  std::optional<int64_t> max_rows_per_group;
  /// `memory_budget_mib`: what the row groups being written may hold in all
  /// (DataFileOptions::memory_budget_bytes); unset: 128 MiB.
  std::optional<int64_t> memory_budget_mib;
  /// `writer_threads`: files written at once (DataFileOptions::num_threads); unset: one
  /// per core, at most 8.
  std::optional<int64_t> writer_threads;
  StateConfig state;
  RetryConfig retry;
};

/// \brief Parse a configuration given as a JSON object.
///
/// \return Invalid("Invalid DeltaLakeLoader configuration: …") naming an unknown key
/// (with a
///   hint where the key belongs elsewhere), a key of the wrong type, or a missing
///   table_path
arrow::Result<DeltaLakeConfig> ParseDeltaLakeConfig(const std::string& json);

}  // namespace ampdelta::loader

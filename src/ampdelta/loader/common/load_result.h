#pragma once

/// \file load_result.h
/// \brief The outcome of a load, printed as the Python SDK prints its LoadResult.

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include <arrow/status.h>

namespace ampdelta::loader {

/// \brief A metadata value, typed: a count stays a number and a flag a boolean until an
/// edge (the CLI's summary, the Python package) renders it.
using MetadataValue = std::variant<std::string, int64_t, bool, double>;

/// \brief The value as text: "12", "true", "1.500000" (std::to_string), or the string.
std::string MetadataText(const MetadataValue& value);

/// \brief The integer value of `key` in `metadata`, when it holds one.
std::optional<int64_t> MetadataInt(const std::map<std::string, MetadataValue>& metadata,
                                   const std::string& key);

/// \brief An invalidated block range of a reorg.
struct InvalidationRange {
  std::string network;
  uint64_t start = 0;
  uint64_t end = 0;
};

/// \brief Where a load stands, typed (the metadata map holds the same; programs read
/// these).
struct LoadProgress {
  /// Per-batch results of batch loads: this batch's index, and the rows and bytes so far.
  int64_t batch_index = -1;
  int64_t total_rows = 0;
  int64_t total_bytes = 0;
  /// Stream commits: the committed ranges (`network:first-last,…`) and the block time of
  /// the newest committed block, when the server sent it.
  std::string block_ranges;
  std::optional<int64_t> end_timestamp;
};

/// \brief What a load did.
struct LoadResult {
  int64_t rows_loaded = 0;
  double duration = 0;  // seconds
  double ops_per_second = 0;
  std::string table_name;
  std::string loader_type = "deltalake";
  bool success = false;
  std::string error;
  /// The failure itself (its ErrorCode tells the class: ClassifyError); OK on success.
  arrow::Status status;
  /// table_version, files_added, bytes_written, …
  std::map<std::string, MetadataValue> metadata;
  LoadProgress progress;
  bool is_reorg = false;
  std::vector<InvalidationRange> invalidation_ranges;

  /// \brief `✅ Loaded N rows to DEST in S.SSs`, `🔄 Reorg detected: N ranges invalidated`
  /// or `❌ Failed to load to DEST: ERROR`.
  std::string ToString() const;
};

std::ostream& operator<<(std::ostream& out, const LoadResult& result);

}  // namespace ampdelta::loader

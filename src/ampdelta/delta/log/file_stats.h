#pragma once

/// \file file_stats.h
/// \brief A data file's statistics (`add.stats`, PROTOCOL.md "Per-file Statistics") as
/// the readers of the log see them: parsed once per file, looked up by column.
///
/// Statistics come from any writer (Spark, delta-rs, an older ampdelta) and may be
/// absent, partial or not JSON at all: every answer is then unknown, never an error,
/// since statistics only ever let a reader skip work. Their writer is StatsCollector
/// (delta/write/stats.h).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

/// \brief A section of the statistics keyed by column (nested columns as nested objects).
enum class StatsSection { kMinValues, kMaxValues, kNullCount };

/// \brief One file's parsed statistics.
class FileStats {
 public:
  using Json = nlohmann::ordered_json;

  /// \brief Statistics that say nothing.
  FileStats() = default;
  /// \brief Parse `add.stats`; text that is absent, not JSON or not an object says
  /// nothing.
  explicit FileStats(const std::optional<std::string>& text);
  /// \brief Return the statistics of `file`.
  static FileStats Of(const Add& file) { return FileStats(file.stats); }

  /// \brief Return true when the statistics are a JSON object.
  bool known() const { return json_.is_object(); }
  /// \brief Return `numRecords` (the physical rows, before any deletion vector); nullopt
  /// when absent or not a non-negative int64.
  std::optional<int64_t> num_records() const;
  /// \brief Return the entry of `section` at `path` (a nested column's names from the
  /// top, physical); nullptr when absent.
  const Json* Find(StatsSection section, const std::vector<std::string>& path) const;
  /// \brief Return the entry of `section` for top-level column `column` in any ASCII
  /// case (the table's names resolve so); nullptr when absent or null.
  const Json* FindIgnoringCase(StatsSection section, std::string_view column) const;
  /// \brief Return the null count at `path`; nullopt when absent or not a non-negative
  /// int64.
  std::optional<int64_t> NullCount(const std::vector<std::string>& path) const;

  /// \brief Return the statistics as JSON text with `numRecords` set to `num_records`
  /// and `tightBounds` false: min and max may now describe rows a deletion vector hides.
  std::string WithLooseBounds(int64_t num_records) const;

 private:
  Json json_;
};

/// \brief Return the row count a file's statistics record (`numRecords`, before any
/// deletion vector); nullopt when it has no statistics or they do not say.
std::optional<int64_t> StatsNumRecords(const Add& add);

}  // namespace ampdelta::delta

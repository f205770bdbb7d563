#pragma once

// Progress of `ampdelta load` on stderr: a line redrawn in place on a terminal; on
// anything else (a log file, a pipe, systemd's journal) a plain `progress …` line, or a
// JSON `progress` event with --log-format json, every interval; nothing with --quiet.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "ampdelta/loader/common/load_result.h"

namespace ampdelta::cli {

/// \brief Prints a load's progress. Thread-compatible (loads report from one thread).
class ProgressReporter {
 public:
  struct Options {
    bool quiet = false;
    /// Redraw one line in place (stderr is a terminal).
    bool tty = false;
    /// Without a terminal: a line at most this often (zero: none).
    std::chrono::milliseconds interval{std::chrono::seconds(10)};
    /// Batch loads: the query's row count, when counted first (ETA).
    std::optional<int64_t> total_rows;
  };

  explicit ProgressReporter(Options options);

  /// \brief Batch loads: a batch arrived (its progress holds the running totals).
  void OnBatch(const loader::LoadResult& batch);
  /// \brief Streams: a commit or a reorg.
  void OnStreamResult(const loader::LoadResult& result);
  /// \brief Clear the redrawn line before the result line (a terminal only).
  void ClearLine();
  /// \brief End the redrawn line after the load (a terminal only).
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  // Whether a plain line is due now (and note that it was printed).
  bool PlainLineDue();

  Options options_;
  Clock::time_point start_;
  Clock::time_point last_line_;
  bool drawn_ = false;
  // Streams.
  int64_t rows_ = 0;
  int64_t commits_ = 0;
  int64_t reorgs_ = 0;
  std::string head_ = "-";
  std::optional<int64_t> lag_seconds_;
};

}  // namespace ampdelta::cli

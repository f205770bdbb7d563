#include "progress_reporter.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

#include "ampdelta/util/logging.h"

namespace ampdelta::cli {
namespace {

std::string Fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

}  // namespace

ProgressReporter::ProgressReporter(Options options)
    : options_(std::move(options)), start_(Clock::now()), last_line_(start_) {}

bool ProgressReporter::PlainLineDue() {
  if (options_.quiet || options_.tty || options_.interval.count() <= 0) return false;
  const auto now = Clock::now();
  if (now - last_line_ < options_.interval) return false;
  last_line_ = now;
  return true;
}

void ProgressReporter::OnBatch(const loader::LoadResult& batch) {
  if (options_.quiet) return;
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const auto rows = batch.progress.total_rows;
  const double mb_per_s =
      seconds > 0 ? static_cast<double>(batch.progress.total_bytes) / 1e6 / seconds : 0;
  std::optional<double> eta;
  if (options_.total_rows && *options_.total_rows > 0 && rows > 0 && seconds > 0) {
    const double rate = static_cast<double>(rows) / seconds;
    eta = static_cast<double>(std::max<int64_t>(*options_.total_rows - rows, 0)) / rate;
  }
  if (options_.tty) {
    std::string total;
    if (options_.total_rows) {
      total = " of " + std::to_string(*options_.total_rows) + " (" +
              Fixed(100.0 * static_cast<double>(rows) /
                        static_cast<double>(std::max<int64_t>(*options_.total_rows, 1)),
                    0) +
              "%)";
    }
    std::fprintf(stderr,
                 "\r\033[K  %lld rows%s  %lld batches  %.1f MB/s  %.1fs elapsed%s ",
                 static_cast<long long>(rows), total.c_str(),
                 static_cast<long long>(batch.progress.batch_index + 1), mb_per_s,
                 seconds, eta ? (", ETA " + Fixed(*eta, 0) + "s").c_str() : "");
    drawn_ = true;
    return;
  }
  if (!PlainLineDue()) return;
  log::Fields fields = {{"rows", static_cast<int64_t>(rows)},
                        {"batches", static_cast<int64_t>(batch.progress.batch_index + 1)},
                        {"mb_per_s", mb_per_s, 1},
                        {"elapsed_s", seconds, 1}};
  if (options_.total_rows) {
    fields.emplace_back("total_rows", static_cast<int64_t>(*options_.total_rows));
  }
  if (eta) fields.emplace_back("eta_s", *eta, 0);
  log::WriteToStderr(log::Record{log::Level::kInfo, "progress", fields, {}});
}

void ProgressReporter::OnStreamResult(const loader::LoadResult& result) {
  if (result.is_reorg) {
    ++reorgs_;
  } else {
    rows_ += result.rows_loaded;
    ++commits_;
    const std::string& ranges = result.progress.block_ranges;
    head_ = ranges.substr(ranges.rfind('-') + 1);
    // Lag: how far the committed head's block time is behind the wall clock.
    if (result.progress.end_timestamp) {
      lag_seconds_ = std::time(nullptr) - *result.progress.end_timestamp;
    }
  }
  if (options_.quiet) return;
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rows_per_s = seconds > 0 ? static_cast<double>(rows_) / seconds : 0;
  if (options_.tty) {
    std::fprintf(
        stderr, "  head %s  lag %s  %.0f rows/s  %lld commits  %lld reorgs  %.0fs ",
        head_.c_str(), lag_seconds_ ? (std::to_string(*lag_seconds_) + "s").c_str() : "?",
        rows_per_s, static_cast<long long>(commits_), static_cast<long long>(reorgs_),
        seconds);
    drawn_ = true;
    return;
  }
  if (!PlainLineDue()) return;
  log::Fields fields = {{"head", head_},
                        {"rows", static_cast<int64_t>(rows_)},
                        {"rows_per_s", rows_per_s, 0},
                        {"commits", static_cast<int64_t>(commits_)},
                        {"reorgs", static_cast<int64_t>(reorgs_)},
                        {"elapsed_s", seconds, 1}};
  if (lag_seconds_) fields.emplace_back("lag_s", static_cast<int64_t>(*lag_seconds_));
  log::WriteToStderr(log::Record{log::Level::kInfo, "progress", fields, {}});
}

void ProgressReporter::ClearLine() {
  if (options_.tty && drawn_) std::fprintf(stderr, "\r\033[K");
}

void ProgressReporter::Finish() {
  if (options_.tty && drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace ampdelta::cli

#pragma once

/// \file commit_group.h
/// \brief The microbatches a stream load has written but not committed yet, and when to
/// commit them: after `max_rows` rows or `max_age` since the group's first microbatch
/// completed. Time comes from an injected clock, so the policy is tested without waiting.

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "ampdelta/amp/block_range.h"

namespace ampdelta::loader {

/// \brief Written rows awaiting their commit: the complete microbatches (committable) and
/// the rows of the microbatch in progress (never committed alone).
class CommitGroup {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  CommitGroup(int64_t max_rows, std::chrono::milliseconds max_age, Now now = Clock::now)
      : max_rows_(max_rows), max_age_(max_age), now_(std::move(now)) {}

  /// \brief Count `rows` written for the microbatch in progress.
  void AddOpenRows(int64_t rows) { open_rows_ += rows; }
  /// \brief Complete the microbatch in progress with these ranges; one without rows adds
  /// nothing (an empty microbatch needs no commit).
  void CompleteMicrobatch(const std::vector<amp::BlockRange>& ranges);
  /// \brief Forget everything (after a commit, or when the rows are abandoned).
  void Clear();
  /// \brief Forget the committed part (after its commit); the open rows stay.
  void ClearCommitted();

  /// \brief Return true when complete microbatches wait and nothing is half-written.
  bool Committable() const { return !ranges_.empty() && open_rows_ == 0; }
  /// \brief Return true when the complete microbatches are due: enough rows or old
  /// enough.
  bool Due() const;
  /// \brief Return how long a reader may wait for the next message before the group is
  /// due (at least 1 ms, at most 100 ms, 100 ms when nothing waits).
  std::chrono::milliseconds WaitTime() const;
  /// \brief Return the time since the group's first microbatch completed.
  std::chrono::duration<double> Age() const { return now_() - started_; }

  const std::vector<amp::BlockRange>& ranges() const { return ranges_; }
  int64_t rows() const { return rows_; }
  int64_t open_rows() const { return open_rows_; }

 private:
  int64_t max_rows_;
  std::chrono::milliseconds max_age_;
  Now now_;
  std::vector<amp::BlockRange> ranges_;
  int64_t rows_ = 0;
  int64_t open_rows_ = 0;
  Clock::time_point started_;
};

}  // namespace ampdelta::loader

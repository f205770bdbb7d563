#include "ampdelta/loader/stream/commit_group.h"

#include <algorithm>

namespace ampdelta::loader {

void CommitGroup::CompleteMicrobatch(const std::vector<amp::BlockRange>& ranges) {
  if (open_rows_ == 0) return;
  if (ranges_.empty()) started_ = now_();
  ranges_.insert(ranges_.end(), ranges.begin(), ranges.end());
  rows_ += open_rows_;
  open_rows_ = 0;
}

void CommitGroup::Clear() {
  ClearCommitted();
  open_rows_ = 0;
}

void CommitGroup::ClearCommitted() {
  ranges_.clear();
  rows_ = 0;
}

bool CommitGroup::Due() const {
  return !ranges_.empty() && (rows_ >= max_rows_ || now_() - started_ >= max_age_);
}

std::chrono::milliseconds CommitGroup::WaitTime() const {
  constexpr std::chrono::milliseconds kMostly(100);
  if (ranges_.empty()) return kMostly;
  const auto left =
      max_age_ - std::chrono::duration_cast<std::chrono::milliseconds>(now_() - started_);
  return std::clamp(left, std::chrono::milliseconds(1), kMostly);
}

}  // namespace ampdelta::loader

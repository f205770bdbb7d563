#include "ampdelta/loader/stream/commit_group.h"

#include <gtest/gtest.h>

namespace ampdelta::loader {
namespace {

using std::chrono::milliseconds;

amp::BlockRange Range(uint64_t start, uint64_t end) {
  amp::BlockRange range;
  range.network = "mainnet";
  range.start = start;
  range.end = end;
  return range;
}

class CommitGroupTest : public ::testing::Test {
 protected:
  CommitGroup::Clock::time_point now_{};
  CommitGroup group_{/*max_rows=*/100, /*max_age=*/milliseconds(1000),
                     [this] { return now_; }};
};

TEST_F(CommitGroupTest, AGroupIsDueAfterItsIntervalFromTheFirstCompleteMicrobatch) {
  EXPECT_FALSE(group_.Due());
  EXPECT_EQ(group_.WaitTime(), milliseconds(100));
  group_.AddOpenRows(10);
  now_ += milliseconds(5000);  // a slow microbatch does not count
  group_.CompleteMicrobatch({Range(0, 9)});
  EXPECT_TRUE(group_.Committable());
  EXPECT_FALSE(group_.Due());
  now_ += milliseconds(950);
  EXPECT_EQ(group_.WaitTime(), milliseconds(50));
  group_.AddOpenRows(5);
  EXPECT_FALSE(group_.Committable());  // a half-written microbatch is never committed
  group_.CompleteMicrobatch({Range(10, 19)});
  now_ += milliseconds(50);
  EXPECT_TRUE(group_.Due());
  EXPECT_EQ(group_.WaitTime(), milliseconds(1));
  EXPECT_EQ(group_.rows(), 15);
  EXPECT_EQ(group_.ranges().size(), 2u);
  EXPECT_DOUBLE_EQ(group_.Age().count(), 1.0);
  group_.ClearCommitted();
  EXPECT_FALSE(group_.Due());
}

TEST_F(CommitGroupTest, AGroupIsDueAtItsRowLimitAndEmptyMicrobatchesAddNothing) {
  group_.CompleteMicrobatch({Range(0, 9)});  // no rows: nothing to commit
  EXPECT_FALSE(group_.Committable());
  group_.AddOpenRows(100);
  group_.CompleteMicrobatch({Range(10, 19)});
  EXPECT_TRUE(group_.Due());
  group_.AddOpenRows(3);
  group_.Clear();
  EXPECT_EQ(group_.open_rows(), 0);
  EXPECT_FALSE(group_.Committable());
}

}  // namespace
}  // namespace ampdelta::loader

#include "ampdelta/util/backoff.h"

#include <gtest/gtest.h>

namespace ampdelta {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DelaysGrowByTheMultiplierUpToTheCap) {
  const BackoffPolicy policy{milliseconds(100), milliseconds(1000), 3.0,
                             /*jitter=*/false};
  EXPECT_EQ(policy.Delay(0), milliseconds(100));
  EXPECT_EQ(policy.Delay(1), milliseconds(300));
  EXPECT_EQ(policy.Delay(2), milliseconds(900));
  EXPECT_EQ(policy.Delay(3), milliseconds(1000));
  EXPECT_EQ(policy.Delay(10000), milliseconds(1000));  // no overflow far out
  EXPECT_EQ(policy.Delay(-1), milliseconds(100));
}

TEST(BackoffTest, JitterStaysBetweenHalfTheDelayAndTheDelay) {
  const BackoffPolicy policy{milliseconds(200), milliseconds(5000)};
  bool below_nominal = false;
  for (int i = 0; i < 1000; ++i) {
    const auto delay = policy.Delay(2);  // nominal 800 ms
    EXPECT_GE(delay, milliseconds(400));
    EXPECT_LE(delay, milliseconds(800));
    below_nominal = below_nominal || delay < milliseconds(790);
  }
  EXPECT_TRUE(below_nominal);
}

}  // namespace
}  // namespace ampdelta

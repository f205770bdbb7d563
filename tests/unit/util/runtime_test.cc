#include "ampdelta/util/runtime.h"

#include <sched.h>

#include <thread>

#include <gtest/gtest.h>

namespace ampdelta {
namespace {

TEST(UsableCoresTest, CountsTheCoresTheThreadIsPinnedToNotTheMachines) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  EXPECT_EQ(UsableCores(), CPU_COUNT(&before));
  // Pinned to its first allowed core (as `taskset -c N` pins a process).
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &before)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int pinned = UsableCores();
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);
  EXPECT_EQ(pinned, 1);
  EXPECT_LE(UsableCores(), static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace ampdelta

// StreamPacer: a live chain that awaits its streams grows only when every open stream has
// been sent all there is.

#include "ampdelta/devserver/stream_pacer.h"

#include <gtest/gtest.h>

namespace ampdelta::devserver {
namespace {

TEST(StreamPacerTest, WithNoStreamOpenTheChainWaits) {
  StreamPacer pacer;
  EXPECT_FALSE(pacer.AllWaiting());
}

TEST(StreamPacerTest, AStreamStillSendingHoldsTheChainUntilItWaits) {
  StreamPacer pacer;
  auto stream = pacer.Open();
  EXPECT_FALSE(pacer.AllWaiting());
  stream->SetWaiting(true);
  EXPECT_TRUE(pacer.AllWaiting());
  stream->SetWaiting(false);
  EXPECT_FALSE(pacer.AllWaiting());
}

TEST(StreamPacerTest, EveryOpenStreamMustWaitAndAClosedOneNoLongerCounts) {
  StreamPacer pacer;
  auto fast = pacer.Open();
  auto slow = pacer.Open();
  fast->SetWaiting(true);
  fast->SetWaiting(true);  // said twice, counted once
  EXPECT_FALSE(pacer.AllWaiting());
  slow.reset();  // the slow reader went away
  EXPECT_TRUE(pacer.AllWaiting());
  fast.reset();
  EXPECT_FALSE(pacer.AllWaiting());
}

}  // namespace
}  // namespace ampdelta::devserver

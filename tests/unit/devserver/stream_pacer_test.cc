// StreamPacer: a live chain that awaits its streams grows only when every open stream has
// been sent all of the chain's current change.

#include "ampdelta/devserver/stream_pacer.h"

#include <gtest/gtest.h>

namespace ampdelta::devserver {
namespace {

// Only the addresses matter: the pacer tells the chain's streams from the others by them.
const auto* const kChain = reinterpret_cast<const Dataset*>(0x1000);
const auto* const kParquet = reinterpret_cast<const Dataset*>(0x2000);

TEST(StreamPacerTest, WithNoStreamOpenTheChainWaits) {
  StreamPacer pacer;
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 0));
}

TEST(StreamPacerTest, AStreamStillSendingHoldsTheChainUntilItWaits) {
  StreamPacer pacer;
  auto stream = pacer.Open();
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 3));
  stream->WaitingAt(kChain, 3);
  EXPECT_TRUE(pacer.AllWaitingAt(kChain, 3));
  stream->Sending();
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 3));
}

TEST(StreamPacerTest, AStreamWaitingAtAnOlderChangeHoldsTheChainUntilItHasSentTheNewOne) {
  StreamPacer pacer;
  auto stream = pacer.Open();
  stream->WaitingAt(kChain, 3);
  // The chain moved on (a block, a reorg) before the stream's thread woke to send it.
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 4));
  stream->Sending();
  stream->WaitingAt(kChain, 4);
  EXPECT_TRUE(pacer.AllWaitingAt(kChain, 4));
}

TEST(StreamPacerTest, EveryOpenStreamMustWaitAndAClosedOneNoLongerCounts) {
  StreamPacer pacer;
  auto fast = pacer.Open();
  auto slow = pacer.Open();
  fast->WaitingAt(kChain, 7);
  fast->WaitingAt(kChain, 7);  // said twice
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 7));
  slow.reset();  // the slow reader went away
  EXPECT_TRUE(pacer.AllWaitingAt(kChain, 7));
  fast.reset();
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 7));
}

TEST(StreamPacerTest, AWaitingStreamThatClosesLeavesANewStreamToBeWaitedFor) {
  StreamPacer pacer;
  auto first = pacer.Open();
  first->WaitingAt(kChain, 2);
  first.reset();
  auto second = pacer.Open();
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 2));
  second->WaitingAt(kChain, 2);
  EXPECT_TRUE(pacer.AllWaitingAt(kChain, 2));
}

TEST(StreamPacerTest, AStreamOnAnotherDatasetCountsAsWaitingOnceItHasSentAllThereIs) {
  StreamPacer pacer;
  auto chain = pacer.Open();
  auto parquet = pacer.Open();
  chain->WaitingAt(kChain, 5);
  EXPECT_FALSE(pacer.AllWaitingAt(kChain, 5));
  parquet->WaitingAt(kParquet, 0);  // a Parquet dataset never changes
  EXPECT_TRUE(pacer.AllWaitingAt(kChain, 5));
}

}  // namespace
}  // namespace ampdelta::devserver

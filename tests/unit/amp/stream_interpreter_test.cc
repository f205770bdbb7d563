#include "ampdelta/amp/stream_interpreter.h"

#include "tests/support/test_util.h"

namespace ampdelta::amp {
namespace {

// A scripted chain: block hashes depend on (number, epoch); bumping a network's epoch at
// a block forks the chain from there, like the Rust client's scenario builder.
class Chain {
 public:
  std::string Hash(uint64_t number) const {
    uint64_t epoch = 0;
    for (uint64_t fork : forks_) {
      if (number >= fork) ++epoch;
    }
    std::string digits = std::to_string(number) + "e" + std::to_string(epoch);
    return "0x" + std::string(64 - digits.size(), '0') + digits;
  }
  void Fork(uint64_t at) { forks_.push_back(at); }

  BlockRange Range(uint64_t start, uint64_t end,
                   const std::string& network = "eth") const {
    return BlockRange{
        network,     start, end, Hash(end), start == 0 ? kZero : Hash(start - 1),
        std::nullopt};
  }

  static inline const std::string kZero = "0x" + std::string(64, '0');

 private:
  std::vector<uint64_t> forks_;
};

BatchMetadata Data(const BlockRange& range) { return BatchMetadata{{range}, false, ""}; }
BatchMetadata Marker(const BlockRange& range) { return BatchMetadata{{range}, true, ""}; }

class StreamInterpreterTest : public ::testing::Test {
 protected:
  // Feed one complete microbatch: a data batch and its marker.
  void Microbatch(const BlockRange& range) {
    ASSERT_OK_AND_ASSIGN(StreamEvent data, interpreter_.Accept(Data(range), 10));
    EXPECT_EQ(data.kind, StreamEvent::Kind::kData);
    EXPECT_FALSE(data.is_reorg()) << range.ToString();
    ASSERT_OK_AND_ASSIGN(StreamEvent end, interpreter_.Accept(Marker(range), 0));
    EXPECT_EQ(end.kind, StreamEvent::Kind::kMicrobatchEnd);
  }

  Chain chain_;
  StreamInterpreter interpreter_;
};

TEST_F(StreamInterpreterTest, ConsecutiveMicrobatchesContinueTheHashChain) {
  Microbatch(chain_.Range(0, 10));
  Microbatch(chain_.Range(11, 20));
  Microbatch(chain_.Range(21, 21));
  EXPECT_EQ(interpreter_.CompletedCursor().at("eth"), (CursorEntry{21, chain_.Hash(21)}));
}

TEST_F(StreamInterpreterTest, SeveralDataBatchesOfOneMicrobatchAreAccepted) {
  const BlockRange range = chain_.Range(0, 10);
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(StreamEvent event, interpreter_.Accept(Data(range), 5));
    EXPECT_EQ(event.kind, StreamEvent::Kind::kData);
    EXPECT_FALSE(event.replayed);
  }
  ASSERT_OK_AND_ASSIGN(StreamEvent keepalive, interpreter_.Accept(Data(range), 0));
  EXPECT_EQ(keepalive.kind, StreamEvent::Kind::kKeepAlive);
  ASSERT_OK_AND_ASSIGN(StreamEvent end, interpreter_.Accept(Marker(range), 0));
  EXPECT_EQ(end.kind, StreamEvent::Kind::kMicrobatchEnd);
  EXPECT_EQ(interpreter_.OpenRange("eth"), std::nullopt);
}

TEST_F(StreamInterpreterTest, MarkerOnlyMicrobatchCompletes) {
  Microbatch(chain_.Range(0, 10));
  ASSERT_OK_AND_ASSIGN(StreamEvent end,
                       interpreter_.Accept(Marker(chain_.Range(11, 15)), 0));
  EXPECT_EQ(end.kind, StreamEvent::Kind::kMicrobatchEnd);
  EXPECT_EQ(interpreter_.CompletedCursor().at("eth").number, 15u);
}

TEST_F(StreamInterpreterTest, WrongPrevHashIsAProtocolError) {
  Microbatch(chain_.Range(0, 10));
  BlockRange next = chain_.Range(11, 20);
  next.prev_hash = chain_.Hash(3);
  EXPECT_THAT(interpreter_.Accept(Data(next), 1),
              testing::HasErrorCode(ErrorCode::kProtocolError));
  EXPECT_THAT(interpreter_.Accept(Data(next), 1),
              testing::StatusHasMessage("hash mismatch"));
}

TEST_F(StreamInterpreterTest, GapIsAProtocolError) {
  Microbatch(chain_.Range(0, 10));
  EXPECT_THAT(interpreter_.Accept(Data(chain_.Range(12, 20)), 1),
              testing::StatusHasMessage("gap in stream"));
}

TEST_F(StreamInterpreterTest, NewRangeWithoutMarkerIsAProtocolError) {
  ASSERT_OK(interpreter_.Accept(Data(chain_.Range(0, 10)), 1).status());
  EXPECT_THAT(interpreter_.Accept(Data(chain_.Range(11, 20)), 1),
              testing::StatusHasMessage("no ranges_complete marker"));
}

TEST_F(StreamInterpreterTest, ReorgAtMicrobatchBoundaryInvalidatesFromTheFork) {
  Microbatch(chain_.Range(0, 9));
  Microbatch(chain_.Range(10, 19));
  Microbatch(chain_.Range(20, 29));
  chain_.Fork(20);
  const BlockRange replay = chain_.Range(20, 31);
  ASSERT_OK_AND_ASSIGN(StreamEvent event, interpreter_.Accept(Data(replay), 12));
  ASSERT_TRUE(event.is_reorg());
  EXPECT_FALSE(event.partial_reorg);
  ASSERT_EQ(event.invalidated.size(), 1u);
  EXPECT_EQ(event.invalidated[0].start, 20u);
  EXPECT_EQ(event.invalidated[0].end, 31u);
  // The rest of the replayed microbatch is ordinary data, and the chain continues on the
  // new fork.
  ASSERT_OK_AND_ASSIGN(StreamEvent more, interpreter_.Accept(Data(replay), 3));
  EXPECT_FALSE(more.is_reorg());
  ASSERT_OK(interpreter_.Accept(Marker(replay), 0).status());
  Microbatch(chain_.Range(32, 40));
}

TEST_F(StreamInterpreterTest, EveryMessageOfAReplayedMicrobatchIsMarkedReplayed) {
  Microbatch(chain_.Range(0, 9));
  const BlockRange again = chain_.Range(0, 9);
  for (int64_t rows : {5, 3, 0}) {
    ASSERT_OK_AND_ASSIGN(StreamEvent event, interpreter_.Accept(Data(again), rows));
    EXPECT_TRUE(event.replayed) << rows;
    EXPECT_FALSE(event.is_reorg());
  }
  ASSERT_OK_AND_ASSIGN(StreamEvent marker, interpreter_.Accept(Marker(again), 0));
  EXPECT_TRUE(marker.replayed);
  // The next microbatch is new data again.
  const BlockRange next = chain_.Range(10, 19);
  ASSERT_OK_AND_ASSIGN(StreamEvent fresh, interpreter_.Accept(Data(next), 4));
  EXPECT_FALSE(fresh.replayed);
  ASSERT_OK_AND_ASSIGN(StreamEvent fresh_marker, interpreter_.Accept(Marker(next), 0));
  EXPECT_FALSE(fresh_marker.replayed);
}

TEST_F(StreamInterpreterTest, DeepReorgAcrossSeveralMicrobatches) {
  for (uint64_t start = 0; start < 50; start += 10)
    Microbatch(chain_.Range(start, start + 9));
  chain_.Fork(10);
  ASSERT_OK_AND_ASSIGN(StreamEvent event,
                       interpreter_.Accept(Data(chain_.Range(10, 45)), 1));
  ASSERT_TRUE(event.is_reorg());
  EXPECT_FALSE(event.partial_reorg);
  EXPECT_EQ(event.invalidated[0].start, 10u);
  EXPECT_EQ(event.invalidated[0].end, 49u);
}

TEST_F(StreamInterpreterTest, ReorgOnAMarkerOnlyMicrobatchIsReported) {
  Microbatch(chain_.Range(0, 9));
  Microbatch(chain_.Range(10, 19));
  chain_.Fork(10);
  ASSERT_OK_AND_ASSIGN(StreamEvent event,
                       interpreter_.Accept(Marker(chain_.Range(10, 20)), 0));
  EXPECT_EQ(event.kind, StreamEvent::Kind::kMicrobatchEnd);
  ASSERT_TRUE(event.is_reorg());
  EXPECT_EQ(interpreter_.CompletedCursor().at("eth"), (CursorEntry{20, chain_.Hash(20)}));
}

TEST_F(StreamInterpreterTest,
       PartialReorgInvalidatesTheStraddlingRangeAndSaysWhereToResume) {
  Microbatch(chain_.Range(0, 10));
  Microbatch(chain_.Range(11, 20));
  chain_.Fork(15);
  ASSERT_OK_AND_ASSIGN(StreamEvent event,
                       interpreter_.Accept(Data(chain_.Range(15, 22)), 8));
  ASSERT_TRUE(event.is_reorg());
  EXPECT_TRUE(event.partial_reorg);
  EXPECT_EQ(event.invalidated[0].start, 11u);
  EXPECT_EQ(event.invalidated[0].end, 22u);
  ASSERT_TRUE(event.resume_cursor.has_value());
  EXPECT_EQ(event.resume_cursor->at("eth"), (CursorEntry{10, chain_.Hash(10)}));
  // Reconnected from the cursor, the server re-sends everything from block 11.
  EXPECT_EQ(interpreter_.CompletedCursor().at("eth"), (CursorEntry{10, chain_.Hash(10)}));
  Microbatch(chain_.Range(11, 22));
}

TEST_F(StreamInterpreterTest,
       PartialReorgOfTheFirstRangeResumesFromTheServersEarliestBlock) {
  // Block 4 was never served: it may not exist on the server (ampd waits for ever on a
  // cursor below its first block), so the network starts over without a cursor.
  Microbatch(chain_.Range(5, 20));
  chain_.Fork(12);
  ASSERT_OK_AND_ASSIGN(StreamEvent event,
                       interpreter_.Accept(Data(chain_.Range(12, 25)), 1));
  EXPECT_TRUE(event.partial_reorg);
  ASSERT_TRUE(event.resume_cursor.has_value());
  EXPECT_EQ(event.resume_cursor->count("eth"), 0u);
  EXPECT_EQ(event.invalidated[0].start, 5u);
  Microbatch(chain_.Range(5, 25));
}

TEST_F(StreamInterpreterTest,
       AReorgInsideTheFirstMicrobatchOfAChainFromGenesisStartsOver) {
  // The anvil case: the first microbatch covers blocks 0..6 and a fork at 4 arrives.
  Microbatch(chain_.Range(0, 6));
  chain_.Fork(4);
  ASSERT_OK_AND_ASSIGN(StreamEvent event,
                       interpreter_.Accept(Data(chain_.Range(4, 8)), 3));
  EXPECT_TRUE(event.partial_reorg);
  EXPECT_EQ(event.invalidated[0].start, 0u);
  EXPECT_EQ(event.invalidated[0].end, 8u);
  EXPECT_TRUE(event.resume_cursor->empty());
  EXPECT_TRUE(interpreter_.CompletedCursor().empty());
  Microbatch(chain_.Range(0, 8));
}

TEST_F(StreamInterpreterTest, BackwardsJumpWithUnchangedPrevHashIsAnInvalidReorg) {
  Microbatch(chain_.Range(0, 10));
  BlockRange bogus = chain_.Range(5, 12);
  bogus.prev_hash = chain_.Hash(10);
  EXPECT_THAT(interpreter_.Accept(Data(bogus), 1),
              testing::StatusHasMessage("invalid reorg"));
}

TEST_F(StreamInterpreterTest, ReplayedCompletedMicrobatchIsFlagged) {
  const BlockRange range = chain_.Range(0, 10);
  Microbatch(range);
  ASSERT_OK_AND_ASSIGN(StreamEvent event, interpreter_.Accept(Data(range), 4));
  EXPECT_TRUE(event.replayed);
  EXPECT_FALSE(event.is_reorg());
}

TEST_F(StreamInterpreterTest, ResumeCursorContinuesOrDetectsRewind) {
  StreamInterpreter resumed;
  resumed.SeedCursor({{"eth", {10, chain_.Hash(10)}}});
  ASSERT_OK_AND_ASSIGN(StreamEvent ok, resumed.Accept(Data(chain_.Range(11, 20)), 1));
  EXPECT_FALSE(ok.is_reorg());

  // The cursor's block was reorged away while the loader was down: the server rewinds.
  StreamInterpreter rewound;
  rewound.SeedCursor({{"eth", {10, chain_.Hash(10)}}});
  chain_.Fork(8);
  ASSERT_OK_AND_ASSIGN(StreamEvent event, rewound.Accept(Data(chain_.Range(8, 14)), 1));
  ASSERT_TRUE(event.is_reorg());
  EXPECT_FALSE(event.partial_reorg);
  EXPECT_EQ(event.invalidated[0].start, 8u);
  EXPECT_EQ(event.invalidated[0].end, 14u);
}

TEST_F(StreamInterpreterTest, SeededCompletedRangesLocatePartialReorgsAfterRestart) {
  StreamInterpreter restarted;
  restarted.SeedCompleted({chain_.Range(0, 10), chain_.Range(11, 20)});
  chain_.Fork(18);
  ASSERT_OK_AND_ASSIGN(StreamEvent event,
                       restarted.Accept(Data(chain_.Range(18, 21)), 1));
  EXPECT_TRUE(event.partial_reorg);
  EXPECT_EQ(event.invalidated[0].start, 11u);
}

TEST_F(StreamInterpreterTest, NetworksAreIndependent) {
  const BlockRange eth = chain_.Range(0, 10, "eth");
  const BlockRange base = chain_.Range(100, 110, "base");
  ASSERT_OK(interpreter_.Accept(BatchMetadata{{eth, base}, false, ""}, 5).status());
  ASSERT_OK(interpreter_.Accept(BatchMetadata{{eth, base}, true, ""}, 0).status());
  Cursor cursor = interpreter_.CompletedCursor();
  EXPECT_EQ(cursor.at("eth").number, 10u);
  EXPECT_EQ(cursor.at("base").number, 110u);
}

TEST_F(StreamInterpreterTest, EmptyRangesAreNotAnError) {
  ASSERT_OK_AND_ASSIGN(StreamEvent data,
                       interpreter_.Accept(BatchMetadata{{}, false, ""}, 0));
  EXPECT_EQ(data.kind, StreamEvent::Kind::kKeepAlive);
  ASSERT_OK_AND_ASSIGN(StreamEvent end,
                       interpreter_.Accept(BatchMetadata{{}, true, ""}, 0));
  EXPECT_EQ(end.kind, StreamEvent::Kind::kMicrobatchEnd);
  EXPECT_TRUE(interpreter_.CompletedCursor().empty());
}

// A stream handed over from a client that starts every stream at the first block (the
// Python SDK), on a table that holds `held`.
StreamInterpreter ReplayingFrom(const std::vector<BlockRange>& held) {
  StreamInterpreter::Options options;
  options.replays_from_start = true;
  StreamInterpreter interpreter(options);
  interpreter.SeedCompleted(held);
  interpreter.SeedHistory(held);
  return interpreter;
}

// What a microbatch's two messages made of it: "replayed", "replaces a-b", "reorg a-b" or
// "new".
std::string Outcome(StreamInterpreter& interpreter, const BlockRange& range) {
  auto data = interpreter.Accept(Data(range), 10);
  if (!data.ok()) return data.status().message();
  if (data->is_reorg()) {
    // (After a partial reorg the consumer reconnects: the rest is not sent.)
    return "reorg " + std::to_string(data->invalidated[0].start) + "-" +
           std::to_string(data->invalidated[0].end);
  }
  auto end = interpreter.Accept(Marker(range), 0);
  if (!end.ok()) return end.status().message();
  if (!data->replaces.empty()) {
    return "replaces " + std::to_string(data->replaces[0].start) + "-" +
           std::to_string(data->replaces[0].end);
  }
  return data->replayed && end->replayed ? "replayed" : "new";
}

TEST_F(StreamInterpreterTest, AReplayFromTheFirstBlockIsSkippedWhereItsHashesAgree) {
  // Three microbatches committed together; the SDK restarts at block 0.
  auto interpreter = ReplayingFrom(
      {chain_.Range(0, 99), chain_.Range(100, 199), chain_.Range(200, 299)});
  EXPECT_EQ(Outcome(interpreter, chain_.Range(0, 99)), "replayed");
  EXPECT_EQ(Outcome(interpreter, chain_.Range(100, 199)), "replayed");
  EXPECT_EQ(Outcome(interpreter, chain_.Range(200, 299)), "replayed");
  EXPECT_EQ(Outcome(interpreter, chain_.Range(300, 310)), "new");
  EXPECT_EQ(interpreter.CompletedCursor().at("eth").number, 310u);
}

TEST_F(StreamInterpreterTest, AReplayCutDifferentlyIsSkippedWhereItEndsOnAKnownBlock) {
  // Live one-block microbatches held; the replay comes in bigger ones.
  std::vector<BlockRange> held{chain_.Range(0, 9)};
  for (uint64_t block = 10; block < 20; ++block)
    held.push_back(chain_.Range(block, block));
  auto interpreter = ReplayingFrom(held);
  EXPECT_EQ(Outcome(interpreter, chain_.Range(0, 14)), "replayed");
  EXPECT_EQ(Outcome(interpreter, chain_.Range(15, 19)), "replayed");
  EXPECT_EQ(Outcome(interpreter, chain_.Range(20, 25)), "new");
}

TEST_F(StreamInterpreterTest, AReplayRunningPastTheHistoryReplacesItsUncheckedBlocks) {
  auto interpreter = ReplayingFrom({chain_.Range(0, 9), chain_.Range(10, 19)});
  EXPECT_EQ(Outcome(interpreter, chain_.Range(0, 9)), "replayed");
  // 10..25: no hash of 19 in it: 10..19 are replaced by what the server sends now.
  EXPECT_EQ(Outcome(interpreter, chain_.Range(10, 25)), "replaces 10-19");
  EXPECT_EQ(Outcome(interpreter, chain_.Range(26, 30)), "new");
  EXPECT_EQ(interpreter.CompletedCursor().at("eth").number, 30u);
}

TEST_F(StreamInterpreterTest, AReplayThatContradictsAHeldHashIsAReorg) {
  auto interpreter = ReplayingFrom({chain_.Range(0, 9), chain_.Range(10, 19)});
  EXPECT_EQ(Outcome(interpreter, chain_.Range(0, 9)), "replayed");
  chain_.Fork(15);  // while the client was down
  EXPECT_EQ(Outcome(interpreter, chain_.Range(10, 19)), "reorg 10-19");
}

TEST_F(StreamInterpreterTest, ARewindAfterTheStreamMovedOnIsAReorgAsEver) {
  auto interpreter = ReplayingFrom({chain_.Range(0, 9)});
  EXPECT_EQ(Outcome(interpreter, chain_.Range(10, 19)), "new");
  chain_.Fork(18);
  EXPECT_EQ(Outcome(interpreter, chain_.Range(18, 25)), "reorg 10-25");
}

TEST_F(StreamInterpreterTest, WithoutReplaysFromStartARewindIntoTheHistoryIsAReorg) {
  interpreter_.SeedCompleted({chain_.Range(0, 99), chain_.Range(100, 199)});
  EXPECT_EQ(Outcome(interpreter_, chain_.Range(0, 99)), "reorg 0-199");
}

TEST_F(StreamInterpreterTest, AMarkerSentTwiceInAReplayIsStillAReplay) {
  auto interpreter = ReplayingFrom({chain_.Range(0, 9), chain_.Range(10, 19)});
  const BlockRange range = chain_.Range(0, 9);
  ASSERT_OK_AND_ASSIGN(StreamEvent data, interpreter.Accept(Data(range), 10));
  ASSERT_OK_AND_ASSIGN(StreamEvent end, interpreter.Accept(Marker(range), 0));
  ASSERT_OK_AND_ASSIGN(StreamEvent again, interpreter.Accept(Marker(range), 0));
  EXPECT_TRUE(data.replayed && end.replayed && again.replayed);
  EXPECT_FALSE(again.is_reorg());
  EXPECT_EQ(Outcome(interpreter, chain_.Range(10, 19)), "replayed");
}

TEST_F(StreamInterpreterTest, AnUncheckedReplayFromInsideAHeldRangeIsRefusedNotUndone) {
  auto interpreter = ReplayingFrom({chain_.Range(0, 9), chain_.Range(10, 19)});
  auto event = interpreter.Accept(Data(chain_.Range(5, 14)), 10);
  EXPECT_THAT(event,
              testing::StatusHasMessage("from inside a microbatch the table holds"));
}

TEST_F(StreamInterpreterTest, AReplayedNetworkBesideANewOneIsReplacedNotSkipped) {
  // Each microbatch names two networks; only "base" goes past what the table holds.
  auto interpreter =
      ReplayingFrom({chain_.Range(0, 9, "eth"), chain_.Range(100, 109, "base")});
  const BlockRange eth = chain_.Range(0, 9, "eth");
  const BlockRange base = chain_.Range(100, 115, "base");
  ASSERT_OK_AND_ASSIGN(StreamEvent data,
                       interpreter.Accept(BatchMetadata{{eth, base}, false, ""}, 10));
  EXPECT_FALSE(data.replayed);
  ASSERT_EQ(data.replaces.size(), 2u);
  std::vector<std::string> replaced;
  for (const auto& range : data.replaces) replaced.push_back(range.ToString());
  EXPECT_THAT(replaced, ::testing::UnorderedElementsAre("eth[0..9]", "base[100..109]"));
}

}  // namespace
}  // namespace ampdelta::amp

#include "ampdelta/loader/backfill_state.h"

#include "tests/support/test_util.h"

namespace ampdelta::loader {
namespace {

TEST(BackfillStateTest, PartitionAppIdsRoundTripWithNetworksHoldingSlashes) {
  const std::string id = BackfillPartitionAppId("s", "eth/main", {10, 19});
  EXPECT_EQ(id, "s/backfill/eth/main/10-19");
  auto parsed = ParseBackfillPartitionAppId("s", id);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first, "eth/main");
  EXPECT_EQ(parsed->second, (BlockSpan{10, 19}));
  EXPECT_FALSE(ParseBackfillPartitionAppId("t", id).has_value());
  EXPECT_FALSE(ParseBackfillPartitionAppId("s", "s/backfill/main/19-10").has_value());
  EXPECT_FALSE(ParseBackfillPartitionAppId("s", "s/backfill/main/1x-2").has_value());
  EXPECT_FALSE(ParseBackfillPartitionAppId("s", "s/backfill/10-19").has_value());
}

TEST(BackfillStateTest, MissingIsWhatNoRecordCovers) {
  BackfillState state;
  state.loaded["main"] = MergeSpans({{30, 39}, {10, 19}, {20, 24}, {50, 60}});
  ASSERT_EQ(state.loaded["main"].size(), 3u);  // 10-24 merged
  EXPECT_EQ(state.Missing("main", {0, 100}),
            (std::vector<BlockSpan>{{0, 9}, {25, 29}, {40, 49}, {61, 100}}));
  EXPECT_EQ(state.Missing("main", {12, 22}), std::vector<BlockSpan>{});
  EXPECT_EQ(state.Missing("main", {22, 33}), (std::vector<BlockSpan>{{25, 29}}));
  EXPECT_EQ(state.Missing("other", {5, 6}), (std::vector<BlockSpan>{{5, 6}}));
  EXPECT_EQ(state.Missing("main", {55, 55}), std::vector<BlockSpan>{});
}

TEST(BackfillStateTest, UnfinishedIsPlannedBlocksNotLoadedAndGapsBetweenLoadedOnes) {
  BackfillState state;
  state.loaded["main"] = {{10, 19}, {30, 39}};
  state.planned["main"] = {{10, 49}};
  EXPECT_EQ(state.Unfinished().at("main"), (std::vector<BlockSpan>{{20, 29}, {40, 49}}));
  state.planned.clear();
  EXPECT_EQ(state.Unfinished().at("main"), (std::vector<BlockSpan>{{20, 29}}));
}

TEST(BackfillStateTest, SpansReachingTheLastBlockNumberDoNotWrap) {
  const uint64_t top = UINT64_MAX;
  EXPECT_EQ(MergeSpans({{top - 1, top}, {5, 6}, {top, top}}),
            (std::vector<BlockSpan>{{5, 6}, {top - 1, top}}));
  BackfillState state;
  state.loaded["main"] = {{top - 1, top}};
  EXPECT_EQ(state.Missing("main", {top - 3, top}),
            (std::vector<BlockSpan>{{top - 3, top - 2}}));
}

}  // namespace
}  // namespace ampdelta::loader

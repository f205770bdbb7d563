#include "ampdelta/loader/state/backfill_state.h"

#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"
#include "tests/unit/delta/table_test_util.h"

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

// A table holding a backfill's commits, written through the real write path.
class BackfillTableTest : public ::testing::Test {
 protected:
  static constexpr const char* kApp = "app";

  // Commit blocks [first, last] (one row each) as a partition would: tagged, recorded.
  void Partition(uint64_t first, uint64_t last, bool tagged = true,
                 std::optional<int64_t> recorded_rows = {}) {
    delta::TableWriteOptions options;
    const auto rows = static_cast<int64_t>(last - first + 1);
    options.app_transaction =
        delta::SetTransaction{BackfillPartitionAppId(kApp, "main", {first, last}),
                              recorded_rows.value_or(rows),
                              {}};
    // A partition recorded as empty wrote no rows.
    Write(delta::test_tables::Blocks(first, recorded_rows == 0 ? first : last + 1),
          options,
          tagged ? std::optional<BackfillPart>(BackfillPart{"main", {first, last}, rows})
                 : std::nullopt);
  }

  void Write(const std::shared_ptr<arrow::RecordBatch>& batch,
             const delta::TableWriteOptions& options,
             const std::optional<BackfillPart>& part) {
    ASSERT_OK_AND_ASSIGN(auto writer,
                         delta::TableWriter::Open(store_, batch->schema(), options));
    if (part) writer->SetFileTags({{BackfillTagKey(kApp), BackfillTagValue(*part)}});
    if (batch->num_rows() > 0) ASSERT_OK(writer->Write(batch));
    ASSERT_OK(writer->Commit().status());
  }

  BackfillState State(const std::string& block_column = "block_num") {
    auto snapshot = delta::Snapshot::Load(store_);
    EXPECT_OK(snapshot.status());
    auto state = ReadBackfillState(**snapshot, kApp, block_column);
    EXPECT_OK(state.status());
    return state.ok() ? *state : BackfillState();
  }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(BackfillTableTest, WhatTheLiveFilesTagsNameIsLoadedWithTheirRows) {
  Partition(0, 9);
  Partition(10, 19);
  const BackfillState state = State();
  EXPECT_EQ(state.loaded.at("main"), (std::vector<BlockSpan>{{0, 19}}));
  ASSERT_EQ(state.tagged.at("main").size(), 2u);
  EXPECT_EQ(state.tagged.at("main")[1], (BackfillPart{"main", {10, 19}, 10}));
  EXPECT_TRUE(state.stale.empty());
}

TEST_F(BackfillTableTest, ARecordWhoseRowsARestoreTookBackIsStaleAndItsBlocksMissing) {
  Partition(0, 9);
  Partition(10, 19);
  ASSERT_OK(delta::Restore(store_, 0).status());  // before the second
  const BackfillState state = State();
  EXPECT_EQ(state.loaded.at("main"), (std::vector<BlockSpan>{{0, 9}}));
  ASSERT_EQ(state.stale.size(), 1u);
  EXPECT_EQ(state.stale[0].span, (BlockSpan{10, 19}));
  EXPECT_EQ(state.Missing("main", {0, 19}), (std::vector<BlockSpan>{{10, 19}}));
  EXPECT_EQ(state.StaleAppIds(kApp),
            std::set<std::string>{BackfillPartitionAppId(kApp, "main", {10, 19})});
}

TEST_F(BackfillTableTest, TagsOutlastExpiredRecordsAndEmptyPartitionsNeedNoRows) {
  // Tags without records (a retention duration dropped them): still loaded.
  delta::TableWriteOptions untracked;
  Write(delta::test_tables::Blocks(0, 10), untracked, BackfillPart{"main", {0, 9}, 10});
  // A record of an empty partition: nothing can contradict it.
  Partition(10, 19, /*tagged=*/false, /*recorded_rows=*/0);
  const BackfillState state = State();
  EXPECT_EQ(state.loaded.at("main"), (std::vector<BlockSpan>{{0, 19}}));
  EXPECT_TRUE(state.stale.empty());
}

TEST_F(BackfillTableTest, UntaggedRowsInARecordsBlocksCorroborateItUnlessTooFew) {
  // Another engine's compaction dropped the tags: the rows are still there.
  Partition(0, 9, /*tagged=*/false);
  // Only half of what the record says it loaded.
  Partition(20, 24, /*tagged=*/false, /*recorded_rows=*/10);
  const BackfillState state = State();
  EXPECT_EQ(state.loaded.at("main"), (std::vector<BlockSpan>{{0, 9}, {20, 24}}));
  EXPECT_TRUE(state.stale.empty());
  ASSERT_EQ(state.short_records.size(), 1u);
  EXPECT_EQ(state.short_records[0].rows_found, 5);
  EXPECT_EQ(state.short_records[0].record.span, (BlockSpan{20, 24}));
}

TEST_F(BackfillTableTest, TagsWrittenBeforeRowsWereCountedStillRead) {
  delta::TableWriteOptions options;
  const auto batch = delta::test_tables::Blocks(5, 6);
  ASSERT_OK_AND_ASSIGN(auto writer,
                       delta::TableWriter::Open(store_, batch->schema(), options));
  writer->SetFileTags({{BackfillTagKey(kApp), R"(["main:5","main:7-9"])"}});
  ASSERT_OK(writer->Write(batch));
  ASSERT_OK(writer->Commit().status());
  const BackfillState state = State();
  EXPECT_EQ(state.tagged.at("main"),
            (std::vector<BackfillPart>{{"main", {5, 5}, {}}, {"main", {7, 9}, {}}}));
}

TEST_F(BackfillTableTest, AMalformedTagIsACorruptLogError) {
  delta::TableWriteOptions options;
  const auto batch = delta::test_tables::Blocks(5, 6);
  ASSERT_OK_AND_ASSIGN(auto writer,
                       delta::TableWriter::Open(store_, batch->schema(), options));
  writer->SetFileTags({{BackfillTagKey(kApp), R"(["main:9-5"])"}});
  ASSERT_OK(writer->Write(batch));
  ASSERT_OK(writer->Commit().status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, delta::Snapshot::Load(store_));
  EXPECT_THAT(ReadBackfillState(*snapshot, kApp, "block_num"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
}

}  // namespace
}  // namespace ampdelta::loader

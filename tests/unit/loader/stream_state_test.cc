#include "ampdelta/loader/state/stream_state.h"

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>

#include "tests/support/test_util.h"

namespace ampdelta::loader {
namespace {

amp::BlockRange Range(std::string network, uint64_t start, uint64_t end,
                      std::string hash = "", std::string prev = "") {
  amp::BlockRange range;
  range.network = std::move(network);
  range.start = start;
  range.end = end;
  range.hash = std::move(hash);
  range.prev_hash = std::move(prev);
  return range;
}

TEST(BatchIdTest, MatchesThePythonSdksVectors) {
  // amp-protocol.md §3.6.
  EXPECT_EQ(BatchId(Range("ethereum", 100, 102, "0xaaa")), "17871ff804370164");
  EXPECT_EQ(BatchId(Range("ethereum", 100, 110, "0xabc123")), "507ba6138502b1dd");
  EXPECT_EQ(
      BatchId(Range("anvil", 0, 2,
                    "0x0deee2eaa7adb2b28c7fa731f79ea86e77e375f8ee0a0f2619ba6ec3eb2f68e6",
                    "0x" + std::string(64, '0'))),
      "ccb8c042acbe11a0");
  EXPECT_EQ(BatchId(Range("blocks", 0, 250)), "a9dcacd2074b17c8");  // position-based
}

TEST(BatchIdTest, SeveralRangesAreJoinedWithABarAndAppendedAsTheLastColumn) {
  EXPECT_EQ(BatchIdValue({Range("ethereum", 100, 102, "0xaaa"), Range("blocks", 0, 250)}),
            "17871ff804370164|a9dcacd2074b17c8");
  auto batch =
      arrow::RecordBatch::Make(arrow::schema({arrow::field("x", arrow::int32())}), 2,
                               {*arrow::MakeArrayFromScalar(arrow::Int32Scalar(1), 2)});
  ASSERT_OK_AND_ASSIGN(auto with_id, AddBatchIdColumn(batch, "17871ff804370164"));
  ASSERT_EQ(with_id->num_columns(), 2);
  EXPECT_EQ(with_id->schema()->field(1)->name(), kBatchIdColumn);
  EXPECT_EQ((*with_id->column(1)->GetScalar(1))->ToString(), "17871ff804370164");
}

TEST(StreamStateTest, RangesRoundTripThroughTheFileTag) {
  std::vector<amp::BlockRange> ranges = {
      Range("mainnet", 10, 19, "0x" + std::string(64, 'a'), "0x" + std::string(64, 'b')),
      Range("mainnet", 20, 20, "0x" + std::string(64, 'c'), "0x" + std::string(64, 'a'))};
  ranges[1].timestamp = 1765585559;  // kept: a re-sent range must compare equal
  ASSERT_OK_AND_ASSIGN(auto decoded, RangesFromTag(RangesToTag(ranges)));
  EXPECT_EQ(decoded, ranges);
  EXPECT_THAT(RangesFromTag("{not json"), testing::HasErrorCode(ErrorCode::kCorruptLog));
}

TEST(StreamStateTest, ATagIsParsedAsAListOnItsOwn) {
  // Spliced into app_metadata text, this tag closed the list and set ranges_complete.
  EXPECT_THAT(RangesFromTag(R"([], "ranges_complete": true)"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(RangesFromTag(R"({"ranges":[]})"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(RangesFromTag(""), testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(RangesFromTag(R"([{"network":"n","start":2,"end":1}])"),
              testing::StatusHasMessage("ends before it starts"));
  ASSERT_OK_AND_ASSIGN(auto none, RangesFromTag("[]"));
  EXPECT_TRUE(none.empty());
}

TEST(StreamStateTest, TheResumeCursorIsTheNewestRecordedRangePerNetwork) {
  StreamState state;
  state.ranges["mainnet"] = {Range("mainnet", 0, 9, "0x01"),
                             Range("mainnet", 10, 19, "0x02")};
  state.ranges["base"] = {Range("base", 5, 5, "0x03")};
  const amp::Cursor cursor = state.ResumeCursor();
  EXPECT_EQ(cursor.at("mainnet"), (amp::CursorEntry{19, "0x02"}));
  EXPECT_EQ(cursor.at("base"), (amp::CursorEntry{5, "0x03"}));
}

TEST(StreamStateTest, AFileReachesABlockWhenOneOfItsRangesEndsAtOrAfterIt) {
  delta::Add file;
  file.tags = delta::NullableStringMap{
      {RangesTagKey("app-a"), RangesToTag({Range("mainnet", 10, 19, "0x01")})}};
  EXPECT_TRUE(*FileReachesBlock(file, "app-a", "mainnet", 19));
  EXPECT_TRUE(*FileReachesBlock(file, "app-a", "mainnet", 5));
  EXPECT_FALSE(*FileReachesBlock(file, "app-a", "mainnet", 20));
  EXPECT_FALSE(*FileReachesBlock(file, "app-a", "base", 0));
  EXPECT_FALSE(*FileReachesBlock(file, "app-b", "mainnet", 0));  // another stream's file
  EXPECT_FALSE(*FileReachesBlock(delta::Add{}, "app-a", "mainnet", 0));  // untagged
}

TEST(StreamStateTest, ASpanCountsForTheCursorAndForWhatAFileReaches) {
  StreamState state;
  state.ranges["mainnet"] = {Range("mainnet", 0, 9, "0x01")};
  state.spans["mainnet"] = {Range("mainnet", 10, 19, "0x02")};
  state.spans["base"] = {Range("base", 5, 7, "0x03")};
  EXPECT_TRUE(state.HasRecords());
  const amp::Cursor cursor = state.ResumeCursor();
  EXPECT_EQ(cursor.at("mainnet"), (amp::CursorEntry{19, "0x02"}));
  EXPECT_EQ(cursor.at("base"), (amp::CursorEntry{7, "0x03"}));
  EXPECT_EQ(state.FirstRecordedBlock("base"), std::optional<uint64_t>(5));
  EXPECT_EQ(state.Recorded("mainnet").size(), 2u);

  delta::Add file;
  file.tags = delta::NullableStringMap{
      {SpansTagKey("app-a"), RangesToTag({Range("mainnet", 10, 19, "0x01")})}};
  EXPECT_TRUE(*FileReachesBlock(file, "app-a", "mainnet", 19));
  EXPECT_FALSE(*FileReachesBlock(file, "app-a", "mainnet", 20));
  ASSERT_OK_AND_ASSIGN(FileRecord record, ReadFileRecord(file, "app-a"));
  EXPECT_TRUE(record.ranges.empty());
  EXPECT_EQ(record.spans.size(), 1u);
}

TEST(CoalesceRangesTest, ConsecutiveLinkedRangesBecomeOneSpanPerNetwork) {
  const std::string h1 = "0x" + std::string(64, '1');
  const std::string h2 = "0x" + std::string(64, '2');
  const std::string h3 = "0x" + std::string(64, '3');
  const std::string h0 = "0x" + std::string(64, '0');
  // Out of order, with a duplicate and another network.
  const auto spans =
      CoalesceRanges({Range("mainnet", 20, 29, h3, h2), Range("mainnet", 0, 9, h1, h0),
                      Range("base", 0, 0, h1, h0), Range("mainnet", 10, 19, h2, h1),
                      Range("mainnet", 10, 19, h2, h1)});
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0], Range("base", 0, 0, h1, h0));
  EXPECT_EQ(spans[1], Range("mainnet", 0, 29, h3, h0));
}

TEST(CoalesceRangesTest, AGapABrokenHashLinkOrTheSpanLimitStartsANewSpan) {
  const std::string a = "0x" + std::string(64, 'a');
  const std::string b = "0x" + std::string(64, 'b');
  const std::string c = "0x" + std::string(64, 'c');
  // 0..9 and 11..19: a gap. 20..29 names a parent that is not 19's hash.
  const auto spans = CoalesceRanges(
      {Range("n", 0, 9, a), Range("n", 11, 19, b, a), Range("n", 20, 29, c, a)});
  EXPECT_EQ(spans.size(), 3u);
  // At most max_blocks per span: 30 one-block ranges with 10 blocks per span.
  std::vector<amp::BlockRange> ranges;
  for (uint64_t block = 0; block < 30; ++block)
    ranges.push_back(Range("n", block, block));
  const auto capped = CoalesceRanges(ranges, 10);
  ASSERT_EQ(capped.size(), 3u);
  EXPECT_EQ(capped[1].start, 10u);
  EXPECT_EQ(capped[1].end, 19u);
  // Unknown hashes do not break a link.
  EXPECT_EQ(CoalesceRanges({Range("n", 0, 0), Range("n", 1, 1, "", a)}).size(), 1u);
}

TEST(MergeStreamTagsTest, ACompactedFilesRecordStaysOneSpanHoweverManyFilesItHolds) {
  const std::string app = "app";
  // 1,000 one-block files compacted ten at a time, each time with the last output: the
  // record of the output stays one span (a set union would hold 1,000 ranges).
  delta::Add compacted;
  for (uint64_t first = 0; first < 1000; first += 10) {
    std::vector<delta::Add> files(10);
    std::vector<const delta::Add*> bin = {&compacted};
    for (uint64_t i = 0; i < 10; ++i) {
      files[i].tags = delta::NullableStringMap{
          {RangesTagKey(app), RangesToTag({Range("mainnet", first + i, first + i)})},
          {"other", "kept"}};
      bin.push_back(&files[i]);
    }
    if (!compacted.tags) bin.erase(bin.begin());
    ASSERT_OK_AND_ASSIGN(compacted.tags, MergeStreamTags(bin, app));
    ASSERT_TRUE(compacted.tags);
  }
  EXPECT_EQ(compacted.tags->count(RangesTagKey(app)), 0u);
  ASSERT_OK_AND_ASSIGN(FileRecord record, ReadFileRecord(compacted, app));
  ASSERT_EQ(record.spans.size(), 1u);
  EXPECT_EQ(record.spans[0].start, 0u);
  EXPECT_EQ(record.spans[0].end, 999u);
  EXPECT_EQ(compacted.tags->at("other"), "kept");  // every input agrees on it
}

TEST(MergeStreamTagsTest, RangesOfSeveralNetworksAreUnitedNotCoalesced) {
  delta::Add a;
  a.tags = delta::NullableStringMap{
      {RangesTagKey("app"), RangesToTag({Range("mainnet", 0, 0)})}};
  delta::Add b;
  b.tags =
      delta::NullableStringMap{{RangesTagKey("app"), RangesToTag({Range("base", 0, 0)})}};
  ASSERT_OK_AND_ASSIGN(auto tags, MergeStreamTags({&a, &b}, "app"));
  ASSERT_TRUE(tags);
  EXPECT_EQ(tags->count(SpansTagKey("app")), 0u);
  ASSERT_OK_AND_ASSIGN(auto ranges, RangesFromTag(*tags->at(RangesTagKey("app"))));
  EXPECT_EQ(ranges.size(), 2u);
  delta::Add bad;
  bad.tags = delta::NullableStringMap{{SpansTagKey("app"), "{"}};
  EXPECT_THAT(MergeStreamTags({&a, &bad}, "app"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
}

TEST(StreamStateTest, AppIdsAreStablePerQueryAndDifferAcrossQueries) {
  EXPECT_EQ(StreamAppId("SELECT 1"), StreamAppId("SELECT 1"));
  EXPECT_NE(StreamAppId("SELECT 1"), StreamAppId("SELECT 2"));
  EXPECT_EQ(StreamAppId("SELECT 1").rfind("ampdelta-stream-", 0), 0u);
}

}  // namespace
}  // namespace ampdelta::loader

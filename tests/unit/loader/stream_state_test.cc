#include "ampdelta/loader/stream_state.h"

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

TEST(StreamStateTest, AppIdsAreStablePerQueryAndDifferAcrossQueries) {
  EXPECT_EQ(StreamAppId("SELECT 1"), StreamAppId("SELECT 1"));
  EXPECT_NE(StreamAppId("SELECT 1"), StreamAppId("SELECT 2"));
  EXPECT_EQ(StreamAppId("SELECT 1").rfind("ampdelta-stream-", 0), 0u);
}

}  // namespace
}  // namespace ampdelta::loader

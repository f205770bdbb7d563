#include "ampdelta/amp/block_range.h"

#include "tests/support/test_util.h"

namespace ampdelta::amp {
namespace {

const std::string kHashA = "0x" + std::string(64, 'a');
const std::string kHashB = "0x" + std::string(64, 'b');

TEST(BlockRangeTest, ParsesServerFormatWithSortedKeys) {
  // Exactly as Amp's serde_json writes it: keys in alphabetical order, nested numbers.
  const std::string json =
      R"({"ranges":[{"hash":")" + kHashA + R"(","network":"anvil","numbers":{"end":2,"start":0},)"
      R"("prev_hash":")" + kHashB + R"(","timestamp":1700000000}],"ranges_complete":false})";
  ASSERT_OK_AND_ASSIGN(BatchMetadata metadata, ParseBatchMetadata(json));
  ASSERT_EQ(metadata.ranges.size(), 1u);
  const BlockRange& range = metadata.ranges[0];
  EXPECT_EQ(range.network, "anvil");
  EXPECT_EQ(range.start, 0u);
  EXPECT_EQ(range.end, 2u);
  EXPECT_EQ(range.hash, kHashA);
  EXPECT_EQ(range.prev_hash, kHashB);
  EXPECT_EQ(range.timestamp, std::optional<uint64_t>(1700000000));
  EXPECT_FALSE(metadata.ranges_complete);
  EXPECT_TRUE(metadata.extra_json.empty());
}

TEST(BlockRangeTest, ParsesSdkFlatFormatAndKeepsUnknownKeys) {
  const std::string json =
      R"({"ranges":[{"network":"eth","start":5,"end":9,"hash":"0x01"}],)"
      R"("ranges_complete":true,"extra":{"a":1}})";
  ASSERT_OK_AND_ASSIGN(BatchMetadata metadata, ParseBatchMetadata(json));
  ASSERT_EQ(metadata.ranges.size(), 1u);
  EXPECT_EQ(metadata.ranges[0].start, 5u);
  EXPECT_EQ(metadata.ranges[0].end, 9u);
  EXPECT_TRUE(metadata.ranges[0].prev_hash.empty());
  EXPECT_FALSE(metadata.ranges[0].timestamp.has_value());
  EXPECT_TRUE(metadata.ranges_complete);
  EXPECT_EQ(metadata.extra_json, R"({"extra":{"a":1}})");
}

TEST(BlockRangeTest, EmptyRangesAreValid) {
  ASSERT_OK_AND_ASSIGN(BatchMetadata metadata,
                       ParseBatchMetadata(R"({"ranges":[],"ranges_complete":true})"));
  EXPECT_TRUE(metadata.ranges.empty());
  EXPECT_TRUE(metadata.ranges_complete);
}

TEST(BlockRangeTest, MalformedMetadataIsAProtocolError) {
  for (const char* bad : {"not json", "[]", R"({"ranges_complete":true})",
                          R"({"ranges":{}})", R"({"ranges":[{"numbers":{"start":1,"end":2}}]})",
                          R"({"ranges":[{"network":"n","numbers":{"start":5,"end":4}}]})",
                          R"({"ranges":[{"network":"n","numbers":{"start":-1,"end":4}}]})",
                          R"({"ranges":[],"ranges_complete":"yes"})"}) {
    EXPECT_THAT(ParseBatchMetadata(bad), testing::HasErrorCode(ErrorCode::kProtocolError))
        << bad;
  }
}

TEST(BlockRangeTest, MetadataRoundTripsThroughServerFormat) {
  BatchMetadata metadata;
  metadata.ranges.push_back({"mainnet", 10, 20, kHashA, kHashB, 1234});
  metadata.ranges_complete = true;
  ASSERT_OK_AND_ASSIGN(BatchMetadata parsed,
                       ParseBatchMetadata(BatchMetadataToJson(metadata)));
  EXPECT_EQ(parsed, metadata);
}

TEST(BlockRangeTest, CursorUsesAmpResumeFormat) {
  Cursor cursor{{"anvil", {2, kHashA}}};
  EXPECT_EQ(CursorToJson(cursor), R"({"anvil":{"hash":")" + kHashA + R"(","number":2}})");
  ASSERT_OK_AND_ASSIGN(Cursor parsed, ParseCursor(CursorToJson(cursor)));
  EXPECT_EQ(parsed, cursor);
  EXPECT_THAT(ParseCursor(R"({"anvil":{"number":"2"}})"),
              testing::StatusHasMessage("resume cursor entry for network 'anvil'"));
}

TEST(BlockRangeTest, CursorFromRangesTakesEndAndHash) {
  Cursor cursor = CursorFromRanges({{"mainnet", 1, 5, kHashA, kHashB, std::nullopt}});
  EXPECT_EQ(cursor.at("mainnet"), (CursorEntry{5, kHashA}));
}

}  // namespace
}  // namespace ampdelta::amp

#include "ampdelta/amp/block_range.h"

#include "tests/support/test_util.h"

namespace ampdelta::amp {
namespace {

const std::string kHashA = "0x" + std::string(64, 'a');
const std::string kHashB = "0x" + std::string(64, 'b');

TEST(BlockRangeTest, ParsesServerFormatWithSortedKeys) {
  // Exactly as Amp's serde_json writes it: keys in alphabetical order, nested numbers.
  const std::string json = R"({"ranges":[{"hash":")" + kHashA +
                           R"(","network":"anvil","numbers":{"end":2,"start":0},)"
                           R"("prev_hash":")" +
                           kHashB +
                           R"(","timestamp":1700000000}],"ranges_complete":false})";
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
  for (const char* bad :
       {"not json", "[]", R"({"ranges_complete":true})", R"({"ranges":{}})",
        R"({"ranges":[{"numbers":{"start":1,"end":2}}]})",
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

// Hostile app_metadata and cursors: a server (or a table tag) can send anything.

TEST(BlockRangeTest, WrongTypedFieldsAreProtocolErrorsNotExceptions) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"ranges":{}})", "'ranges' is not an array"},
      {R"({"ranges":[],"ranges_complete":"yes"})", "'ranges_complete' is not a boolean"},
      {R"({"ranges":[1]})", "range is not an object"},
      {R"({"ranges":[{"network":1,"numbers":{"start":1,"end":2}}]})",
       "no string 'network'"},
      {R"({"ranges":[{"network":"n","numbers":[1,2]}]})", "'numbers' is not an object"},
      {R"({"ranges":[{"network":"n","numbers":{"start":"1","end":2}}]})",
       "'start' is not a non-negative integer"},
      {R"({"ranges":[{"network":"n","numbers":{"start":-1,"end":2}}]})",
       "'start' is not a non-negative integer"},
      {R"({"ranges":[{"network":"n","numbers":{"start":1.5,"end":2}}]})",
       "'start' is not a non-negative integer"},
      {R"({"ranges":[{"network":"n","numbers":{"start":3,"end":2}}]})",
       "ends before it starts"},
      {R"({"ranges":[{"network":"n","numbers":{"start":1,"end":2},"hash":5}]})",
       "'hash' is not a string"},
      {R"({"ranges":[{"network":"n","numbers":{"start":1,"end":2},"timestamp":-5}]})",
       "'timestamp' is not an unsigned integer"},
      {R"({"ranges_complete":true})", "has no 'ranges'"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_THAT(ParseBatchMetadata(text), testing::StatusHasMessage(message)) << text;
    EXPECT_THAT(ParseBatchMetadata(text),
                testing::HasErrorCode(ErrorCode::kProtocolError));
  }
}

TEST(BlockRangeTest, HugeNumbersTruncatedAndBadBytesAreErrors) {
  EXPECT_THAT(ParseBatchMetadata(R"({"ranges":[{"network":"n","numbers":{"start":1,)"
                                 R"("end":18446744073709551616}}]})"),
              testing::HasErrorCode(ErrorCode::kProtocolError));
  ASSERT_OK_AND_ASSIGN(
      auto largest,
      ParseBatchMetadata(R"({"ranges":[{"network":"n","numbers":{"start":0,)"
                         R"("end":18446744073709551615}}]})"));
  EXPECT_EQ(largest.ranges[0].end, UINT64_MAX);
  const std::string text =
      R"({"ranges":[{"network":"mainnet","numbers":{"start":1,"end":2},"hash":")" +
      kHashA + R"("}],"ranges_complete":true})";
  ASSERT_OK(ParseBatchMetadata(text).status());
  for (size_t length = 0; length < text.size(); ++length) {
    EXPECT_FALSE(ParseBatchMetadata(text.substr(0, length)).ok()) << length;
  }
  EXPECT_THAT(ParseBatchMetadata("{\"ranges\":[],\"x\":\"\xff\"}"),
              testing::StatusHasMessage("\\xFF"));
  EXPECT_THAT(ParseBatchMetadata(""), testing::HasErrorCode(ErrorCode::kProtocolError));
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  EXPECT_THAT(ParseBatchMetadata(R"({"ranges":[],"x":)" + deep + "}"),
              testing::HasErrorCode(ErrorCode::kProtocolError));
}

TEST(BlockRangeTest, RangeListsParseOnTheirOwn) {
  ASSERT_OK_AND_ASSIGN(
      auto ranges, ParseBlockRanges(R"([{"network":"n","start":1,"end":2,"hash":"h"}])"));
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].hash, "h");
  EXPECT_THAT(ParseBlockRanges(R"({"ranges":[]})"),
              testing::StatusHasMessage("not a JSON array"));
  EXPECT_THAT(ParseBlockRanges("[]], \"ranges_complete\": true"),
              testing::HasErrorCode(ErrorCode::kProtocolError));
}

TEST(BlockRangeTest, HostileCursorsAreErrorsNotExceptions) {
  for (const char* text :
       {"", "[]", "{\"n\":1}", R"({"n":{"number":-1,"hash":"h"}})",
        R"({"n":{"number":1.5,"hash":"h"}})", R"({"n":{"number":1,"hash":2}})",
        R"({"n":{"number":18446744073709551616,"hash":"h"}})", R"({"n":{"hash":"h"}})",
        "{\"n\":{\"number\":1,\"hash\":\"\xc3\"}}"}) {
    EXPECT_FALSE(ParseCursor(text).ok()) << text;
  }
  Cursor cursor{{"net\xff", CursorEntry{1, "0x\xfe"}}};
  // Hand-built values that are not UTF-8 are replaced, not thrown on.
  EXPECT_EQ(CursorToJson(cursor),
            "{\"net\xef\xbf\xbd\":{\"hash\":\"0x\xef\xbf\xbd\",\"number\":1}}");
}

}  // namespace
}  // namespace ampdelta::amp

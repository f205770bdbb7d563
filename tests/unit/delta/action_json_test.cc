#include "ampdelta/delta/action_json.h"

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

TEST(ActionJsonTest, AddRoundTripsAndOmitsUnsetOptionals) {
  Add add;
  add.path = "x=A%252FA/part-0.parquet";
  add.partition_values = {{"x", "A/A"}, {"y", std::nullopt}};
  add.size = 42;
  add.modification_time = 1700000000000;
  add.stats = R"({"numRecords":3})";
  const std::string line = ActionToJson(add);
  EXPECT_EQ(line.find("deletionVector"), std::string::npos);
  EXPECT_EQ(line.find("tags"), std::string::npos);
  EXPECT_NE(line.find("\"y\":null"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(auto parsed, ParseActionLine(line));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(std::get<Add>(*parsed), add);
}

TEST(ActionJsonTest, EveryActionRoundTrips) {
  Metadata metadata;
  metadata.id = "id";
  metadata.schema_string = R"({"type":"struct","fields":[]})";
  metadata.partition_columns = {"a"};
  metadata.configuration = {{"delta.checkpointInterval", "3"}};
  metadata.created_time = 5;
  Protocol protocol{3, 7, std::vector<std::string>{"timestampNtz"},
                    std::vector<std::string>{"timestampNtz"}};
  Remove remove;
  remove.path = "p";
  remove.deletion_timestamp = 9;
  remove.extended_file_metadata = true;
  remove.size = 3;
  remove.deletion_vector = DeletionVectorDescriptor{"u", "ab^-aqEH.-t@S}K{vb[*k^", 1, 36, 2, {}};
  const std::vector<Action> actions = {protocol, metadata, remove,
                                       SetTransaction{"app", 4, 100},
                                       DomainMetadata{"d", "{}", false}};
  ASSERT_OK_AND_ASSIGN(auto parsed, ParseCommit(EncodeCommit(actions), "test"));
  ASSERT_EQ(parsed.size(), actions.size());
  for (size_t i = 0; i < actions.size(); ++i) EXPECT_EQ(parsed[i], actions[i]) << i;
  EXPECT_EQ(std::get<Remove>(parsed[2]).deletion_vector->UniqueId(), "uab^-aqEH.-t@S}K{vb[*k^@1");
}

TEST(ActionJsonTest, CommitInfoKeepsRawJsonAndTypedFields) {
  const std::string line =
      R"({"commitInfo":{"timestamp":12,"operation":"WRITE","operationParameters":{"mode":"Append","partitionBy":[]},"isBlindAppend":true,"readVersion":3,"custom":{"x":1}}})";
  ASSERT_OK_AND_ASSIGN(auto parsed, ParseActionLine(line));
  const auto& info = std::get<CommitInfo>(*parsed);
  EXPECT_EQ(info.timestamp, std::optional<int64_t>(12));
  EXPECT_EQ(info.operation, "WRITE");
  EXPECT_EQ(info.operation_parameters.at("partitionBy"), "[]");
  EXPECT_EQ(info.is_blind_append, std::optional<bool>(true));
  EXPECT_NE(info.raw_json.find("custom"), std::string::npos);
  EXPECT_NE(ActionToJson(info).find("custom"), std::string::npos);
}

TEST(ActionJsonTest, UnknownActionsAreSkippedAndBadOnesAreCorrupt) {
  ASSERT_OK_AND_ASSIGN(auto unknown, ParseActionLine(R"({"futureAction":{"x":1}})"));
  EXPECT_FALSE(unknown.has_value());
  EXPECT_THAT(ParseActionLine("{not json"), testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(ParseActionLine(R"({"add":{"size":1}})"),
              testing::StatusHasMessage("add has no 'path'"));
  EXPECT_THAT(ParseCommit("{\"txn\":{\"appId\":\"a\",\"version\":\"x\"}}\n", "v.json"),
              testing::StatusHasMessage("txn.version is not an integer"));
}

}  // namespace
}  // namespace ampdelta::delta

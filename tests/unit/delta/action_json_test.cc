#include "ampdelta/delta/log/action_json.h"

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
  ASSERT_OK_AND_ASSIGN(const std::string line, ActionToJson(add));
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
  remove.deletion_vector =
      DeletionVectorDescriptor{"u", "ab^-aqEH.-t@S}K{vb[*k^", 1, 36, 2, {}};
  const std::vector<Action> actions = {protocol, metadata, remove,
                                       SetTransaction{"app", 4, 100},
                                       DomainMetadata{"d", "{}", false}};
  ASSERT_OK_AND_ASSIGN(const std::string text, EncodeCommit(actions));
  ASSERT_OK_AND_ASSIGN(auto parsed, ParseCommit(text, "test"));
  ASSERT_EQ(parsed.size(), actions.size());
  for (size_t i = 0; i < actions.size(); ++i) EXPECT_EQ(parsed[i], actions[i]) << i;
  EXPECT_EQ(std::get<Remove>(parsed[2]).deletion_vector->UniqueId(),
            "uab^-aqEH.-t@S}K{vb[*k^@1");
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
  ASSERT_OK_AND_ASSIGN(const std::string encoded, ActionToJson(info));
  EXPECT_NE(encoded.find("custom"), std::string::npos);
}

TEST(ActionJsonTest, UnknownActionsAreSkippedAndBadOnesAreCorrupt) {
  ASSERT_OK_AND_ASSIGN(auto unknown, ParseActionLine(R"({"futureAction":{"x":1}})"));
  EXPECT_FALSE(unknown.has_value());
  EXPECT_THAT(ParseActionLine("{not json"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(ParseActionLine(R"({"add":{"size":1}})"),
              testing::StatusHasMessage("add has no 'path'"));
  EXPECT_THAT(ParseCommit("{\"txn\":{\"appId\":\"a\",\"version\":\"x\"}}\n", "v.json"),
              testing::StatusHasMessage("txn.version is not an integer"));
}

// Hostile input: every malformed commit is an error with the action and field named,
// never an exception (on a writer thread that is std::terminate) and never a wrapped
// value.

TEST(ActionJsonTest, WrongTypedFieldsAreErrorsNotExceptions) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"add":{"path":1,"size":1}})", "add.path is not a string"},
      {R"({"add":{"path":"p","size":"1"}})", "add.size is not an integer"},
      {R"({"add":{"path":"p","size":1.5}})", "add.size is not an integer"},
      {R"({"add":{"path":"p","size":1,"partitionValues":[]}})",
       "add.partitionValues is not an object"},
      {R"({"add":{"path":"p","size":1,"dataChange":"true"}})",
       "add.dataChange is not a boolean"},
      {R"({"add":{"path":"p","size":1,"tags":"t"}})", "add.tags is not an object"},
      {R"({"add":{"path":"p","size":1,"stats":{"numRecords":1}}})",
       "add.stats is not a string"},
      {R"({"add":{"path":"p","size":1,"deletionVector":[]}})",
       "deletionVector is not an object"},
      {R"({"add":{"path":"p","size":1,"deletionVector":{"storageType":"u","pathOrInlineDv":"x",)"
       R"("sizeInBytes":"1","cardinality":1}}})",
       "deletionVector.sizeInBytes is not an integer"},
      {R"({"remove":{"path":"p","deletionTimestamp":true}})",
       "remove.deletionTimestamp is not"},
      {R"({"metaData":{"id":"i","partitionColumns":[1]}})",
       "metaData.partitionColumns is not an array of strings"},
      {R"({"metaData":{"id":"i","partitionColumns":"a"}})",
       "metaData.partitionColumns is not an array"},
      {R"({"metaData":{"id":"i","configuration":[]}})",
       "metaData.configuration is not an object"},
      {R"({"protocol":{"minReaderVersion":"3","minWriterVersion":7}})",
       "protocol.minReaderVersion is not"},
      {R"({"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":{}}})",
       "protocol.readerFeatures is not an array"},
      {R"({"txn":{"appId":["a"],"version":1}})", "txn.appId is not a string"},
      {R"({"domainMetadata":{"domain":"d","configuration":"{}","removed":"no"}})",
       "domainMetadata.removed is not a boolean"},
      {R"({"sidecar":{"path":"s","sizeInBytes":null}})", "sidecar has no 'sizeInBytes'"},
      {R"({"add":[]})", "add is not an object"},
  };
  for (const auto& [line, message] : cases) {
    EXPECT_THAT(ParseCommit(line, "00.json"), testing::StatusHasMessage(message)) << line;
    EXPECT_THAT(ParseActionLine(line), testing::HasErrorCode(ErrorCode::kCorruptLog))
        << line;
  }
}

TEST(ActionJsonTest, OddlyTypedCommitInfoStillParses) {
  // commitInfo is free-form: wrongly typed well-known keys are left out, not errors.
  ASSERT_OK_AND_ASSIGN(
      auto parsed,
      ParseActionLine(
          R"({"commitInfo":{"timestamp":"x","operation":7,"isBlindAppend":"yes",)"
          R"("isolationLevel":1,"readVersion":18446744073709551615,)"
          R"("operationParameters":{"a":[1,{"b":null}],"n":null}}})"));
  const auto& info = std::get<CommitInfo>(*parsed);
  EXPECT_FALSE(info.timestamp.has_value());
  EXPECT_FALSE(info.read_version.has_value());
  EXPECT_EQ(info.operation, "7");
  EXPECT_FALSE(info.is_blind_append.has_value());
  EXPECT_EQ(info.operation_parameters.at("a"), R"([1,{"b":null}])");
  EXPECT_EQ(info.operation_parameters.count("n"), 0u);
}

TEST(ActionJsonTest, HugeNumbersAreRefusedNotWrapped) {
  // Above INT64_MAX, nlohmann's get<int64_t>() returns a negative number.
  EXPECT_THAT(
      ParseActionLine(R"({"add":{"path":"p","size":18446744073709551615}})"),
      testing::StatusHasMessage("add.size is not an integer in the range of a long"));
  EXPECT_THAT(ParseActionLine(R"({"txn":{"appId":"a","version":9223372036854775808}})"),
              testing::StatusHasMessage("txn.version is not an integer"));
  // int fields of the protocol would wrap around: 4294967297 is 1 as an int32.
  EXPECT_THAT(
      ParseActionLine(
          R"({"add":{"path":"p","size":1,"deletionVector":{"storageType":"u",)"
          R"("pathOrInlineDv":"x","sizeInBytes":4294967297,"cardinality":1}}})"),
      testing::StatusHasMessage("deletionVector.sizeInBytes is not an integer in the "
                                "range of an int"));
  EXPECT_THAT(ParseActionLine(
                  R"({"protocol":{"minReaderVersion":2147483648,"minWriterVersion":7}})"),
              testing::StatusHasMessage(
                  "protocol.minReaderVersion is not an integer in the range"));
  EXPECT_THAT(ParseActionLine(R"({"add":{"path":"p","size":1e400}})"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  ASSERT_OK_AND_ASSIGN(
      auto largest,
      ParseActionLine(R"({"add":{"path":"p","size":9223372036854775807}})"));
  EXPECT_EQ(std::get<Add>(*largest).size, INT64_MAX);
}

TEST(ActionJsonTest, TruncatedLinesAreErrorsAtEveryLength) {
  const std::string line =
      R"({"add":{"path":"a=1/p.parquet","partitionValues":{"a":"1"},"size":12,)"
      R"("modificationTime":3,"dataChange":true,"stats":"{\"numRecords\":1}",)"
      R"("tags":{"t":"v"},"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=0000",)"
      R"("sizeInBytes":4,"cardinality":0}}})";
  ASSERT_OK(ParseActionLine(line).status());
  for (size_t length = 0; length < line.size(); ++length) {
    EXPECT_FALSE(ParseActionLine(line.substr(0, length)).ok()) << length;
    auto commit = ParseCommit(line.substr(0, length), "00.json");
    EXPECT_FALSE(commit.ok()) << length;  // an empty commit is a write cut short too
  }
}

TEST(ActionJsonTest, EmptyAndBlankInput) {
  // A commit holds at least one action: empty or blank files are damage.
  EXPECT_THAT(ParseCommit("", "00.json"), testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(ParseCommit("\n \t\r\n\n", "00.json"),
              testing::StatusHasMessage("the commit file is empty"));
  EXPECT_THAT(ParseActionLine(""), testing::HasErrorCode(ErrorCode::kCorruptLog));
  ASSERT_OK_AND_ASSIGN(auto empty_object, ParseActionLine("{}"));
  EXPECT_FALSE(empty_object.has_value());
  EXPECT_THAT(ParseCommit("[]", "00.json"),
              testing::StatusHasMessage("line 1 is not a JSON object"));
  EXPECT_THAT(ParseCommit("\"add\"", "00.json"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_OK(ParseActionLine(R"({"add":{"path":"","size":0}})").status());
}

TEST(ActionJsonTest, NonUtf8BytesInTheLogAreCorrupt) {
  // JSON text must be UTF-8; the lexer refuses other bytes (overlong forms, surrogates).
  for (const std::string& bad :
       {std::string("\xff"), std::string("\xc0\x80"), std::string("\xed\xa0\x80"),
        std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82")}) {
    const std::string line = R"({"add":{"path":")" + bad + R"(","size":1}})";
    EXPECT_THAT(ParseCommit(line, "00.json"),
                testing::HasErrorCode(ErrorCode::kCorruptLog));
  }
  // A lone surrogate escape cannot become UTF-8 either.
  EXPECT_THAT(ParseActionLine(R"({"add":{"path":"\ud800","size":1}})"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
}

TEST(ActionJsonTest, DeeplyNestedJsonIsRefusedNotAStackOverflow) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(ParseActionLine(R"({"commitInfo":{"x":)" + deep + "}}"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  // Nesting within the limit (1000, as Jackson's) is fine, brackets in strings do not
  // count.
  const std::string ok = std::string(900, '[') + std::string(900, ']');
  ASSERT_OK_AND_ASSIGN(auto parsed, ParseActionLine(R"({"commitInfo":{"x":)" + ok +
                                                    R"(,"s":"[[[[[[[[[["}})"));
  ASSERT_OK(ActionToJson(*parsed).status());
}

TEST(ActionJsonTest, EncodingStringsThatAreNotUtf8IsAnErrorNotAnException) {
  Add add;
  add.path = "part-\xff.parquet";
  EXPECT_THAT(ActionToJson(add),
              testing::StatusHasMessage("add action is not valid UTF-8 at add.path"));
  EXPECT_THAT(EncodeCommit({add}), testing::HasErrorCode(ErrorCode::kInvalidInput));
  add.path = "p";
  add.partition_values = {{"x", std::string("\xc3")}};
  EXPECT_THAT(ActionToJson(add), testing::StatusHasMessage("at add.partitionValues.x"));
  add.partition_values = {};
  add.tags = NullableStringMap{{"k\xfe", "v"}};
  EXPECT_THAT(ActionToJson(add), testing::StatusHasMessage("the key add.tags.k\\xFE"));
  CommitInfo info;
  info.operation = "WRITE";
  info.operation_parameters = {{"predicate", "\x80"}};
  EXPECT_THAT(EncodeCommit({info}), testing::HasErrorCode(ErrorCode::kInvalidInput));
  SetTransaction txn{"app\xf8", 1, std::nullopt};
  EXPECT_THAT(ActionToJson(txn),
              testing::StatusHasMessage("txn action is not valid UTF-8"));
}

}  // namespace
}  // namespace ampdelta::delta

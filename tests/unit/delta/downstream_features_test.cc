// The change data feed and in-commit timestamps as the log records them, and the protocol
// each table property asks for (docs/downstream.md). Readers other than ampdelta check
// the same tables in tests/interop/test_change_data_feed.py.

#include <map>
#include <string>
#include <vector>

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/reader_support.h"
#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/merge.h"
#include "ampdelta/delta/write/change_data_writer.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::ActionsOf;
using test_tables::Blocks;
using test_tables::CommitOf;
using test_tables::WriteBatches;

// The `_change_type` values and block numbers of a commit's change data files.
std::multimap<std::string, uint64_t> ChangesOf(storage::ObjectStore& store,
                                               Version version) {
  std::multimap<std::string, uint64_t> out;
  for (const auto& cdc : ActionsOf<Cdc>(CommitOf(store, version))) {
    EXPECT_EQ(cdc.path.rfind("_change_data/cdc-", 0), 0u) << cdc.path;
    EXPECT_FALSE(cdc.data_change);
    auto file = store.OpenInputFile(DecodeLogPath(cdc.path));
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    auto reader = parquet::arrow::OpenFile(*file, arrow::default_memory_pool());
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    auto read = (*reader)->ReadTable();
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    const std::shared_ptr<arrow::Table> table = *read;
    EXPECT_EQ(table->schema()->field(table->num_columns() - 1)->name(),
              kChangeTypeColumn);
    auto combined = table->CombineChunksToBatch();
    EXPECT_TRUE(combined.ok());
    const auto& blocks =
        static_cast<const arrow::Int64Array&>(*(*combined)->GetColumnByName("block_num"));
    const auto& kinds = static_cast<const arrow::StringArray&>(
        *(*combined)->GetColumnByName(kChangeTypeColumn));
    for (int64_t i = 0; i < blocks.length(); ++i) {
      out.emplace(kinds.GetString(i), static_cast<uint64_t>(blocks.Value(i)));
    }
  }
  return out;
}

TableWriteOptions WithProperties(std::map<std::string, std::string> properties) {
  TableWriteOptions options;
  options.configuration = std::move(properties);
  return options;
}

class ChangeDataFeedTest : public ::testing::Test {
 protected:
  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(ChangeDataFeedTest, ADeleteRecordsExactlyTheRowsItRemoves) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)},
                         WithProperties({{"delta.enableChangeDataFeed", "true"}}))
                .status());
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 20)}).status());
  // A file rewritten without block 3, then one removed whole (10..19).
  ASSERT_OK_AND_ASSIGN(auto rewrite, DeleteRows(store_, "block_num = 3"));
  ASSERT_TRUE(rewrite.version.has_value());
  EXPECT_EQ(ChangesOf(*store_, *rewrite.version),
            (std::multimap<std::string, uint64_t>{{"delete", 3}}));
  ASSERT_OK_AND_ASSIGN(auto whole, DeleteRows(store_, "block_num >= 10"));
  ASSERT_TRUE(whole.version.has_value());
  std::multimap<std::string, uint64_t> expected;
  for (uint64_t block = 10; block < 20; ++block) expected.emplace("delete", block);
  EXPECT_EQ(ChangesOf(*store_, *whole.version), expected);
}

TEST_F(ChangeDataFeedTest, AppendsAndTablesWithoutTheFeedRecordNothing) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)},
                         WithProperties({{"delta.enableChangeDataFeed", "true"}}))
                .status());
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 20)}).status());
  EXPECT_TRUE(ActionsOf<Cdc>(CommitOf(*store_, 1)).empty());

  auto plain = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(WriteBatches(plain, {Blocks(0, 10)}).status());
  ASSERT_OK_AND_ASSIGN(auto deleted, DeleteRows(plain, "block_num = 3"));
  EXPECT_TRUE(ActionsOf<Cdc>(CommitOf(*plain, *deleted.version)).empty());
  ASSERT_OK_AND_ASSIGN(auto listed, plain->List("_change_data/", ""));
  EXPECT_TRUE(listed.empty());
}

TEST_F(ChangeDataFeedTest, AMergeRecordsPreAndPostImagesAndInserts) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)},
                         WithProperties({{"delta.enableChangeDataFeed", "true"}}))
                .status());
  MergeOptions merge;
  merge.keys = {"block_num"};
  const auto source = Blocks(8, 12, "base");
  ASSERT_OK_AND_ASSIGN(auto merged, MergeRows(store_, source->schema(), {source}, merge));
  const std::multimap<std::string, uint64_t> expected = {
      {"insert", 10},          {"insert", 11},         {"update_postimage", 8},
      {"update_postimage", 9}, {"update_preimage", 8}, {"update_preimage", 9}};
  EXPECT_EQ(ChangesOf(*store_, merged.write.commit.version), expected);
}

TEST_F(ChangeDataFeedTest, AFailedCommitLeavesNoChangeDataBehind) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)},
                         WithProperties({{"delta.enableChangeDataFeed", "true"}}))
                .status());
  ASSERT_OK_AND_ASSIGN(auto writer,
                       TableWriter::Open(store_, Blocks(0, 1)->schema(), {}));
  ASSERT_TRUE(writer->records_changes());
  ASSERT_OK(writer->RecordChange(Blocks(0, 3), ChangeType::kDelete));
  ASSERT_OK(writer->Abort());
  ASSERT_OK_AND_ASSIGN(auto listed, store_->List("_change_data/", ""));
  EXPECT_TRUE(listed.empty());
}

TEST(InCommitTimestampTest, EachCommitIsDatedAfterThePreviousOneFirstInItsCommit) {
  auto store = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(WriteBatches(store, {Blocks(0, 10)},
                         WithProperties({{"delta.enableInCommitTimestamps", "true"}}))
                .status());
  // A previous commit dated in the future: the next must still come after it.
  auto first = CommitOf(*store, 0);
  const int64_t future = 4'000'000'000'000;
  auto& edited = std::get<CommitInfo>(first[0]);
  edited.in_commit_timestamp = future;
  edited.raw_json.clear();  // encoded from its fields, not as read
  ASSERT_OK_AND_ASSIGN(auto bytes, EncodeCommit(first));
  ASSERT_OK(store->Put(CommitPath(0), arrow::Buffer::FromString(bytes),
                       storage::PutMode::kOverwrite));
  ASSERT_OK(WriteBatches(store, {Blocks(10, 20)}).status());
  ASSERT_OK(DeleteRows(store, "block_num < 5").status());
  int64_t previous = 0;
  for (Version version = 0; version <= 2; ++version) {
    const auto actions = CommitOf(*store, version);
    ASSERT_TRUE(std::holds_alternative<CommitInfo>(actions.front())) << version;
    const auto& info = std::get<CommitInfo>(actions.front());
    ASSERT_TRUE(info.in_commit_timestamp.has_value()) << version;
    EXPECT_GT(*info.in_commit_timestamp, previous) << version;
    previous = *info.in_commit_timestamp;
  }
  EXPECT_EQ(previous, future + 2);
}

TEST(InCommitTimestampTest, TablesWithoutThePropertyGetNone) {
  auto store = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(WriteBatches(store, {Blocks(0, 10)}).status());
  EXPECT_FALSE(std::get<CommitInfo>(CommitOf(*store, 0).front()).in_commit_timestamp);
}

Protocol Make(int reader, int writer,
              std::optional<std::vector<std::string>> readers = {},
              std::optional<std::vector<std::string>> writers = {}) {
  Protocol protocol;
  protocol.min_reader_version = reader;
  protocol.min_writer_version = writer;
  protocol.reader_features = std::move(readers);
  protocol.writer_features = std::move(writers);
  return protocol;
}

TEST(UpgradeProtocolTest, EachPropertyGetsTheFeaturesItNeedsAndNothingIsDropped) {
  const auto schema = arrow::schema({arrow::field("block_num", arrow::int64(), false)});
  const std::map<std::string, std::string> cdf = {{"delta.enableChangeDataFeed", "true"}};
  const std::map<std::string, std::string> ict = {
      {"delta.enableInCommitTimestamps", "true"}};
  const std::map<std::string, std::string> dv = {{"delta.enableDeletionVectors", "true"}};
  struct Case {
    Protocol existing;
    std::map<std::string, std::string> configuration;
    Protocol expected;
  };
  const Case cases[] = {
      {Make(1, 2), {}, Make(1, 2)},
      {Make(1, 2), cdf, Make(1, 4)},
      {Make(1, 4), cdf, Make(1, 4)},
      {Make(1, 2), {{"delta.enableChangeDataFeed", "false"}}, Make(1, 2)},
      {Make(1, 2), ict,
       Make(1, 7, {},
            std::vector<std::string>{"appendOnly", "invariants", "inCommitTimestamp"})},
      {Make(1, 2), dv,
       Make(3, 7, std::vector<std::string>{"deletionVectors"},
            std::vector<std::string>{"appendOnly", "invariants", "deletionVectors"})},
      // A table that lists features gains the feed as a feature, never as version 4.
      {Make(1, 7, {}, std::vector<std::string>{"appendOnly"}), cdf,
       Make(1, 7, {}, std::vector<std::string>{"appendOnly", "changeDataFeed"})},
      // Reader features the table had stay.
      {Make(3, 7, std::vector<std::string>{"timestampNtz"},
            std::vector<std::string>{"timestampNtz"}),
       dv,
       Make(3, 7, std::vector<std::string>{"timestampNtz", "deletionVectors"},
            std::vector<std::string>{"timestampNtz", "deletionVectors"})},
  };
  for (const auto& c : cases) {
    const Protocol got = UpgradeProtocol(c.existing, *schema, c.configuration);
    EXPECT_EQ(got, c.expected) << got.min_reader_version << "," << got.min_writer_version;
  }
}

TEST(TablePropertiesTest, PropertiesAmpdeltaCannotHonourAreRefused) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"delta.columnMapping.mode", "names"},
           {"delta.enableRowTracking", "yes"},
           {"delta.rowTracking.materializedRowIdColumnName", "_row_id"},
           {"delta.checkpointPolicy", "v3"},
           {"delta.enableTypeWidening", "1"},
           {"delta.constraints.positive", "block_num > 0"},
           {"delta.feature.clustering", "supported"},
           {"delta.minWriterVersion", "7"},
           {"delta.enableChangeDataFeed", "yes"}}) {
    const auto status = ValidateTableProperties({{key, value}});
    EXPECT_TRUE(IsError(status, ErrorCode::kInvalidInput)) << key;
    EXPECT_NE(status.message().find(key), std::string::npos) << status.message();
  }
  EXPECT_OK(ValidateTableProperties({{"delta.columnMapping.mode", "name"}}));
  EXPECT_OK(ValidateTableProperties({{"delta.columnMapping.mode", "id"}}));
  EXPECT_OK(ValidateTableProperties({{"delta.checkpointPolicy", "V2"}}));
  EXPECT_OK(ValidateTableProperties({{"delta.enableTypeWidening", "TRUE"}}));
  EXPECT_OK(ValidateTableProperties({{"delta.enableRowTracking", "true"}}));
  EXPECT_OK(ValidateTableProperties({{"delta.columnMapping.mode", "none"},
                                     {"delta.enableChangeDataFeed", "TRUE"},
                                     {"delta.checkpointPolicy", "classic"}}));
}

TEST(TablePropertiesTest, KeysAreTakenInTheirCanonicalSpellingAndUnknownOnesRefused) {
  ASSERT_OK_AND_ASSIGN(
      auto normal, NormalizeTableProperties({{" DELTA.enableChangeDataFeed ", " TRUE"},
                                             {"delta.checkpointpolicy", "CLASSIC"},
                                             {"owner", "Data Team"}}));
  EXPECT_EQ(normal,
            (std::map<std::string, std::string>{{"delta.enableChangeDataFeed", "true"},
                                                {"delta.checkpointPolicy", "classic"},
                                                {"owner", "Data Team"}}));
  for (const auto& config : std::vector<std::map<std::string, std::string>>{
           {{"delta.enableChangeDataFed", "true"}},
           {{"delta.enableChangeDataFeed", "true"},
            {"DELTA.enableChangeDataFeed", "false"}},
           {{"Delta.MinWriterVersion", "7"}},
           {{"DELTA.columnMapping.mode", "Names"}}}) {
    const auto status = NormalizeTableProperties(config).status();
    EXPECT_TRUE(IsError(status, ErrorCode::kInvalidInput)) << config.begin()->first;
  }
}

TEST(ChangeDataFeedPlanTest, TheFeedsReservedColumnsAreRefused) {
  auto store = std::make_shared<storage::MemoryStore>();
  auto schema = arrow::schema({arrow::field("block_num", arrow::int64()),
                               arrow::field("_Change_Type", arrow::utf8())});
  TableWriteOptions options = WithProperties({{"delta.enableChangeDataFeed", "true"}});
  auto opened = TableWriter::Open(store, schema, options);
  EXPECT_TRUE(IsError(opened.status(), ErrorCode::kInvalidInput));
  EXPECT_NE(opened.status().message().find("_change_type"), std::string::npos);
  // Without the feed the column is an ordinary one.
  ASSERT_OK(TableWriter::Open(store, schema, {}).status());
}

TEST(ChangeDataFeedPlanTest, TwoCreatorsWithDifferentPropertiesConflict) {
  auto store = std::make_shared<storage::MemoryStore>();
  TableWriteOptions plain;
  plain.expect_new_table = true;
  TableWriteOptions with_feed = WithProperties({{"delta.enableChangeDataFeed", "true"}});
  with_feed.expect_new_table = true;
  ASSERT_OK_AND_ASSIGN(auto first,
                       TableWriter::Open(store, Blocks(0, 1)->schema(), plain));
  ASSERT_OK_AND_ASSIGN(auto second,
                       TableWriter::Open(store, Blocks(0, 1)->schema(), with_feed));
  ASSERT_OK(first->Write(Blocks(0, 5)));
  ASSERT_OK(second->Write(Blocks(5, 10)));
  ASSERT_OK(first->Commit().status());
  const auto lost = second->Commit().status();
  EXPECT_TRUE(IsError(lost, ErrorCode::kCommitConflict)) << lost.ToString();
  EXPECT_NE(lost.message().find("table properties"), std::string::npos) << lost.message();
}

}  // namespace
}  // namespace ampdelta::delta

namespace ampdelta::delta {
namespace {

Protocol ReaderFeatures(std::vector<std::string> features) {
  return Protocol{3, 7, features, features};
}

TEST(ReaderSupportTest, DeclaredReadersAreKnownNamesInAnyCaseEachOnce) {
  ASSERT_OK_AND_ASSIGN(auto names, ParseReaderNames({"Spark", "duckdb", "SPARK"}));
  EXPECT_EQ(names, (std::vector<std::string>{"spark", "duckdb"}));
  EXPECT_THAT(ParseReaderNames({"spark", "presto"}),
              ::testing::AllOf(testing::HasErrorCode(ErrorCode::kInvalidInput),
                               testing::StatusHasMessage("unknown reader 'presto'")));
}

TEST(ReaderSupportTest, AReaderCannotReadTheFeaturesItLacksOrALegacyVersionAboveItsOwn) {
  const std::map<std::string, std::string> none;
  const std::map<std::string, std::string> mapped = {
      {"delta.columnMapping.mode", "name"}};
  const Protocol legacy{2, 5, std::nullopt, std::nullopt};
  EXPECT_TRUE(
      UnreadableBy("polars", Protocol{1, 2, std::nullopt, std::nullopt}, none).empty());
  EXPECT_EQ(
      UnreadableBy("polars", ReaderFeatures({"deletionVectors", "columnMapping"}), none),
      (std::vector<std::string>{"columnMapping"}));
  EXPECT_TRUE(UnreadableBy("spark",
                           ReaderFeatures({"v2Checkpoint", "typeWidening-preview"}), none)
                  .empty());
  // Reader version 2: Polars refuses the protocol; deltalake opens it and misreads only
  // a table whose column mapping is on.
  EXPECT_EQ(UnreadableBy("polars", legacy, none),
            (std::vector<std::string>{"reader version 2"}));
  EXPECT_TRUE(UnreadableBy("deltalake", legacy, none).empty());
  EXPECT_EQ(UnreadableBy("deltalake", legacy, mapped),
            (std::vector<std::string>{"columnMapping (reader version 2)"}));
  EXPECT_TRUE(UnreadableBy("duckdb", legacy, mapped).empty());
  // A feature no reader is known to read (a future one) counts as unreadable.
  EXPECT_EQ(UnreadableBy("spark", ReaderFeatures({"catalogManaged"}), none),
            (std::vector<std::string>{"catalogManaged"}));
}

TEST(ReaderSupportTest, AProtocolADeclaredReaderCannotReadIsRefusedNamingBoth) {
  const auto protocol = ReaderFeatures({"deletionVectors", "v2Checkpoint"});
  EXPECT_OK(CheckReaders({"spark", "duckdb"}, protocol, {}));
  EXPECT_OK(CheckReaders({}, protocol, {}));
  EXPECT_THAT(CheckReaders({"spark", "deltalake", "polars"}, protocol, {}),
              ::testing::AllOf(testing::HasErrorCode(ErrorCode::kInvalidInput),
                               testing::StatusHasMessage(
                                   "deltalake cannot read deletionVectors, v2Checkpoint; "
                                   "polars cannot read v2Checkpoint")));
}

}  // namespace
}  // namespace ampdelta::delta

#include "ampdelta/loader/common/config.h"

#include "ampdelta/loader/client/client.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/loader/common/load_result.h"
#include "tests/support/test_util.h"

namespace ampdelta::loader {
namespace {

TEST(DeltaLakeConfigTest, DefaultsMatchThePythonSdk) {
  ASSERT_OK_AND_ASSIGN(auto config,
                       ParseDeltaLakeConfig(R"({"table_path":"./data/blocks"})"));
  EXPECT_EQ(config.table_path, "./data/blocks");
  EXPECT_TRUE(config.optimize_after_write);
  EXPECT_FALSE(config.vacuum_after_write);
  EXPECT_TRUE(config.merge_schema);
  EXPECT_TRUE(config.schema_evolution);
  EXPECT_TRUE(config.state.enabled);
  EXPECT_EQ(config.retry.max_retries, 5);
  EXPECT_EQ(config.retry.initial_backoff_ms, 2000);
}

TEST(DeltaLakeConfigTest, EveryKeyIsRead) {
  ASSERT_OK_AND_ASSIGN(
      auto config,
      ParseDeltaLakeConfig(
          R"({"table_path":"s3://b/t","storage_options":{"AWS_REGION":"us-east-1"},
        "partition_by":["network"],"optimize_after_write":false,"vacuum_after_write":true,
        "merge_schema":false,"schema_evolution":false,"file_size_hint":1048576,
        "max_rows_per_file":1000,"max_rows_per_group":100,"type_mapping":"deltalake",
        "state":{"enabled":false,"store_batch_id":false},
        "resilience":{"retry":{"max_retries":2,"initial_backoff_ms":10}}})"));
  EXPECT_EQ(config.storage_options.at("AWS_REGION"), "us-east-1");
  EXPECT_EQ(config.partition_by, std::vector<std::string>{"network"});
  EXPECT_FALSE(config.optimize_after_write);
  EXPECT_TRUE(config.vacuum_after_write);
  EXPECT_EQ(config.file_size_hint, std::optional<int64_t>(1048576));
  EXPECT_EQ(config.max_rows_per_group, std::optional<int64_t>(100));
  EXPECT_FALSE(config.memory_budget_mib.has_value());
  ASSERT_OK_AND_ASSIGN(
      auto budget, ParseDeltaLakeConfig(R"({"table_path":"t","memory_budget_mib":64})"));
  EXPECT_EQ(budget.memory_budget_mib, std::optional<int64_t>(64));
  for (const char* bad : {"0", "-1", "\"64\"", "1099511627776"}) {
    EXPECT_FALSE(ParseDeltaLakeConfig(
                     std::string(R"({"table_path":"t","memory_budget_mib":)") + bad + "}")
                     .ok())
        << bad;
  }
  EXPECT_FALSE(config.state.enabled);
  EXPECT_EQ(config.retry.max_retries, 2);
  EXPECT_EQ(config.integer_mapping, delta::IntegerMapping::kSameWidth);
  EXPECT_THAT(ParseDeltaLakeConfig(R"({"table_path":"t","type_mapping":"narrow"})"),
              testing::StatusHasMessage("'type_mapping' must be"));
  EXPECT_FALSE(config.unsigned64.has_value());  // follows type_mapping
  ASSERT_OK_AND_ASSIGN(auto decimal,
                       ParseDeltaLakeConfig(R"({"table_path":"t","uint64":"decimal"})"));
  EXPECT_EQ(decimal.unsigned64, std::optional(delta::Unsigned64::kDecimal));
  EXPECT_THAT(ParseDeltaLakeConfig(R"({"table_path":"t","uint64":"text"})"),
              testing::StatusHasMessage("'uint64' must be \"auto\""));
}

TEST(DeltaLakeConfigTest, UnknownKeysAndWrongTypesAreNamed) {
  EXPECT_THAT(
      ParseDeltaLakeConfig(R"({"table_path":"t","batch_size":10})"),
      testing::StatusHasMessage(
          "Invalid DeltaLakeLoader configuration: unknown key 'batch_size' (batch_size "
          "belongs to load()"));
  EXPECT_THAT(ParseDeltaLakeConfig(R"({"table_path":"t","partition_by":"network"})"),
              testing::StatusHasMessage("'partition_by' must be a list of strings"));
  EXPECT_THAT(ParseDeltaLakeConfig(R"({"table_path":"t","merge_schema":"no"})"),
              testing::StatusHasMessage("'merge_schema' must be a boolean"));
  EXPECT_THAT(ParseDeltaLakeConfig(R"({"partition_by":[]})"),
              testing::StatusHasMessage("'table_path' is required"));
  EXPECT_THAT(ParseDeltaLakeConfig(R"({"table_path":"t","state":{"bogus":1}})"),
              testing::StatusHasMessage("unknown key 'state.bogus'"));
}

TEST(DeltaLakeConfigTest, HostileValuesAreErrorsNotExceptions) {
  const std::pair<const char*, const char*> cases[] = {
      // get<int>() wrapped 2^40 around to 0 retries.
      {R"({"table_path":"t","resilience":{"retry":{"max_retries":1099511627776}}})",
       "'resilience.retry.max_retries' must be"},
      {R"({"table_path":"t","max_rows_per_file":18446744073709551615})",
       "'max_rows_per_file' must be a positive integer, got 18446744073709551615"},
      {R"({"table_path":"t","max_rows_per_file":1e400})", "must be a JSON object"},
      {R"({"table_path":"t","file_size_hint":"10"})",
       "must be a positive integer, got \"10\""},
      {R"({"table_path":"t","merge_schema":[true]})", "must be a boolean, got [true]"},
      {R"({"table_path":""})", "'table_path' must be a non-empty string"},
      // A C API would cut the path at the NUL and write somewhere else.
      {R"({"table_path":"a\u0000b"})", "'table_path' contains a NUL byte"},
      {"", "must be a JSON object"},
      {"{\"table_path\":\"\xff\"}", "must be a JSON object"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_THAT(ParseDeltaLakeConfig(text), testing::StatusHasMessage(message)) << text;
  }
}

TEST(DeltaLakeConfigTest, ConnectionValuesThatAreNotUtf8AreAnErrorNotAnException) {
  Client client("grpc://127.0.0.1:1");
  EXPECT_THAT(
      client.ConfigureConnection("c", "deltalake", {{"table_path", "t\xff"}}),
      testing::StatusHasMessage("the connection configuration is not valid UTF-8 at "
                                "table_path"));
  EXPECT_OK(client.ConfigureConnection("c", "deltalake", {{"table_path", "t"}}));
}

TEST(LoadResultTest, PrintsLikeThePythonSdk) {
  LoadResult ok;
  ok.success = true;
  ok.rows_loaded = 100;
  ok.table_name = "blocks";
  ok.duration = 0.0412;
  EXPECT_EQ(ok.ToString(), "✅ Loaded 100 rows to blocks in 0.04s");
  LoadResult failed;
  failed.table_name = "blocks";
  failed.error = "boom";
  EXPECT_EQ(failed.ToString(), "❌ Failed to load to blocks: boom");
  LoadResult reorg;
  reorg.is_reorg = true;
  reorg.invalidation_ranges.resize(2);
  EXPECT_EQ(reorg.ToString(), "🔄 Reorg detected: 2 ranges invalidated");
}

TEST(DeltaLakeConfigTest, TablePropertiesAreNormalisedAndChecked) {
  ASSERT_OK_AND_ASSIGN(
      auto config,
      ParseDeltaLakeConfig(
          R"({"table_path":"t","table_properties":)"
          R"({"DELTA.enableChangeDataFeed":true,"delta.checkpointInterval":20}})"));
  EXPECT_EQ(config.table_properties,
            (std::map<std::string, std::string>{{"delta.enableChangeDataFeed", "true"},
                                                {"delta.checkpointInterval", "20"}}));
  for (const char* bad :
       {R"({"table_path":"t","table_properties":[1]})",
        R"({"table_path":"t","table_properties":{"delta.appendOnly":{"x":1}}})",
        R"({"table_path":"t","table_properties":{"delta.enableChangeDataFeed":"maybe"}})",
        R"({"table_path":"t","table_properties":{"delta.noSuchThing":"1"}})"}) {
    const auto status = ParseDeltaLakeConfig(bad).status();
    EXPECT_TRUE(IsError(status, ErrorCode::kInvalidInput))
        << bad << ": " << status.ToString();
  }
}

TEST(DeltaLakeConfigTest, ClusteringAndTheCursorInTheLogAreParsed) {
  ASSERT_OK_AND_ASSIGN(auto config, ParseDeltaLakeConfig(R"({"table_path":"t",
      "cluster_by":["block_num"],"state":{"cursor_in_log":true}})"));
  ASSERT_TRUE(config.cluster_by.has_value());
  EXPECT_EQ(*config.cluster_by, std::vector<std::string>{"block_num"});
  EXPECT_TRUE(config.state.cursor_in_log);
  ASSERT_OK_AND_ASSIGN(auto plain, ParseDeltaLakeConfig(R"({"table_path":"t"})"));
  EXPECT_FALSE(plain.cluster_by.has_value());  // the table keeps its own
  EXPECT_FALSE(plain.state.cursor_in_log);
  ASSERT_OK_AND_ASSIGN(auto off,
                       ParseDeltaLakeConfig(R"({"table_path":"t","cluster_by":[]})"));
  EXPECT_TRUE(off.cluster_by.has_value() && off.cluster_by->empty());
  EXPECT_THAT(ParseDeltaLakeConfig(R"({"table_path":"t","cluster_by":"block_num"})"),
              testing::StatusHasMessage("'cluster_by' must be a list of strings"));
  EXPECT_THAT(
      ParseDeltaLakeConfig(R"({"table_path":"t","state":{"cursor_in_log":"yes"}})"),
      testing::StatusHasMessage("state.cursor_in_log"));
}

TEST(LoadModeTest, EveryModeNameParsesBackAndAnUnknownOneNamesTheSupported) {
  for (const LoadMode mode :
       {LoadMode::kAppend, LoadMode::kOverwrite, LoadMode::kMerge, LoadMode::kUpsert,
        LoadMode::kErrorIfExists, LoadMode::kIgnore}) {
    EXPECT_EQ(ParseLoadMode(LoadModeName(mode)).ValueOrDie(), mode) << LoadModeName(mode);
  }
  EXPECT_EQ(ParseLoadMode("errorifexists").ValueOrDie(), LoadMode::kErrorIfExists);
  EXPECT_TRUE(IsMerge(LoadMode::kMerge));
  EXPECT_TRUE(IsMerge(LoadMode::kUpsert));
  EXPECT_FALSE(IsMerge(LoadMode::kOverwrite));
  for (const std::string bad : {"replace", "Append", "", "merge "}) {
    auto parsed = ParseLoadMode(bad);
    EXPECT_THAT(parsed, testing::HasErrorCode(ErrorCode::kInvalidInput)) << bad;
    EXPECT_THAT(parsed,
                testing::StatusHasMessage("Invalid save mode provided: " + bad +
                                          ", only these are supported: ['append', "
                                          "'overwrite', 'merge', 'upsert', 'error', "
                                          "'ignore']"));
  }
}

}  // namespace
}  // namespace ampdelta::loader

#include "ampdelta/devserver/parquet_dataset.h"

#include <cstdlib>
#include <filesystem>

#include <arrow/record_batch.h>
#include <arrow/type.h>

#include "tests/support/test_util.h"

namespace ampdelta::devserver {
namespace {

// The Amp-written fixtures live in ../shared beside the repository. Under CI they must be
// there; elsewhere a missing copy skips with a clear message (fixtures/README.md).
std::string FixtureDir(const std::string& name) {
  return testing::SourceDir() + "/../shared/fixtures/amp-snapshots/" + name;
}

class ParquetDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(FixtureDir("eth_rpc"))) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") {
        FAIL() << "fixture missing under CI: " << FixtureDir("eth_rpc");
      }
      GTEST_SKIP() << "fixtures not found at " << FixtureDir("eth_rpc")
                   << " (../shared beside the repository)";
    }
  }
};

TEST_F(ParquetDatasetTest, IndexesAmpSnapshotWithNozzleRanges) {
  ASSERT_OK_AND_ASSIGN(auto dataset, ParquetDataset::Open("eth_rpc", FixtureDir("eth_rpc")));
  EXPECT_EQ(dataset->network(), "mainnet");
  EXPECT_EQ(dataset->table_names(),
            (std::vector<std::string>{"blocks", "logs", "transactions"}));
  auto synced = dataset->Synced();
  ASSERT_TRUE(synced.has_value());
  EXPECT_EQ(synced->range.start, 15'000'000u);
  EXPECT_EQ(synced->range.end, 15'000'000u);
  EXPECT_EQ(synced->range.hash,
            "0x9a71a95be3fe957457b11817587e5af4c7e24836d5b383c430ff25b9286a457f");
  ASSERT_OK_AND_ASSIGN(auto schema, dataset->TableSchema("blocks"));
  EXPECT_EQ(schema->field(2)->type()->ToString(), "timestamp[ns, tz=+00:00]");
  EXPECT_EQ(schema->GetFieldByName("hash")->type()->id(), arrow::Type::FIXED_SIZE_BINARY);
}

TEST_F(ParquetDatasetTest, ScansEveryRowOfATable) {
  ASSERT_OK_AND_ASSIGN(auto dataset, ParquetDataset::Open("eth_rpc", FixtureDir("eth_rpc")));
  ASSERT_OK_AND_ASSIGN(auto iterator, dataset->Scan("logs", *dataset->Synced()));
  int64_t rows = 0;
  while (true) {
    ASSERT_OK_AND_ASSIGN(auto batch, iterator->Next());
    if (batch == nullptr) break;
    rows += batch->num_rows();
  }
  EXPECT_EQ(rows, 719);
}

TEST_F(ParquetDatasetTest, ServesTheNewestRevision) {
  // eth_firehose holds two revisions of transactions with 333 and 348 rows.
  ASSERT_OK_AND_ASSIGN(auto dataset,
                       ParquetDataset::Open("eth_firehose", FixtureDir("eth_firehose")));
  ASSERT_OK_AND_ASSIGN(auto iterator, dataset->Scan("transactions", *dataset->Synced()));
  int64_t rows = 0;
  while (true) {
    ASSERT_OK_AND_ASSIGN(auto batch, iterator->Next());
    if (batch == nullptr) break;
    rows += batch->num_rows();
  }
  EXPECT_EQ(rows, 348);
}

TEST_F(ParquetDatasetTest, StreamsOneMicrobatchPerFileRange) {
  ASSERT_OK_AND_ASSIGN(auto dataset, ParquetDataset::Open("eth_rpc", FixtureDir("eth_rpc")));
  auto first = dataset->NextMicrobatch(std::nullopt, 1000);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->range.start, 15'000'000u);
  EXPECT_FALSE(
      dataset->NextMicrobatch(ChainPosition{15'000'000, first->range.hash}, 1000).has_value());
}

TEST_F(ParquetDatasetTest, MissingDirectoryIsAClearError) {
  EXPECT_THAT(ParquetDataset::Open("x", "/nonexistent/dir"),
              testing::StatusHasMessage("does not exist"));
}

}  // namespace
}  // namespace ampdelta::devserver

#include "ampdelta/devserver/parquet_dataset.h"

#include <cstdlib>
#include <filesystem>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/io/file.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <parquet/arrow/writer.h>

#include "tests/support/temp_dir.h"
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
  ASSERT_OK_AND_ASSIGN(auto dataset,
                       ParquetDataset::Open("eth_rpc", FixtureDir("eth_rpc")));
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
  ASSERT_OK_AND_ASSIGN(auto dataset,
                       ParquetDataset::Open("eth_rpc", FixtureDir("eth_rpc")));
  ASSERT_OK_AND_ASSIGN(auto iterator, dataset->Scan("logs", *dataset->Synced()));
  int64_t rows = 0;
  while (true) {
    ASSERT_OK_AND_ASSIGN(auto batch, iterator->Next());
    if (batch == nullptr) break;
    rows += batch->num_rows();
  }
  EXPECT_EQ(rows, 719);
}

TEST_F(ParquetDatasetTest, ScanPiecesStartWhereFilesDoAndCoverTheRangeOnce) {
  ASSERT_OK_AND_ASSIGN(auto dataset,
                       ParquetDataset::Open("eth_rpc", FixtureDir("eth_rpc")));
  ScanRange range = *dataset->Synced();
  range.range.start = 14'999'990;
  range.range.end = 15'000'010;
  const auto pieces = dataset->ScanPieces("logs", range, 1);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].range.start, 14'999'990u);
  EXPECT_EQ(pieces[0].range.end, 14'999'999u);
  EXPECT_EQ(pieces[1].range.start, 15'000'000u);
  EXPECT_EQ(pieces[1].range.end, 15'000'010u);
  int64_t rows = 0;
  for (const auto& piece : pieces) {
    ASSERT_OK_AND_ASSIGN(auto iterator, dataset->Scan("logs", piece));
    while (true) {
      ASSERT_OK_AND_ASSIGN(auto batch, iterator->Next());
      if (batch == nullptr) break;
      rows += batch->num_rows();
    }
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
  ASSERT_OK_AND_ASSIGN(auto dataset,
                       ParquetDataset::Open("eth_rpc", FixtureDir("eth_rpc")));
  auto first = dataset->NextMicrobatch(std::nullopt, 1000);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->range.start, 15'000'000u);
  EXPECT_FALSE(dataset->NextMicrobatch(ChainPosition{15'000'000, first->range.hash}, 1000)
                   .has_value());
}

TEST_F(ParquetDatasetTest, MissingDirectoryIsAClearError) {
  EXPECT_THAT(ParquetDataset::Open("x", "/nonexistent/dir"),
              testing::StatusHasMessage("does not exist"));
}

// A dataset directory with one blocks file whose footer carries `nozzle_metadata`.
void WriteDataset(const std::string& dir, const std::string& nozzle_metadata) {
  const auto revision = std::filesystem::path(dir) / "blocks" / "019c2523-356e-7000";
  std::filesystem::create_directories(revision);
  arrow::UInt64Builder numbers;
  ASSERT_OK(numbers.Append(1));
  ASSERT_OK_AND_ASSIGN(auto column, numbers.Finish());
  auto schema = arrow::schema({arrow::field("block_num", arrow::uint64())});
  auto table = arrow::Table::Make(schema, {column});
  ASSERT_OK_AND_ASSIGN(
      auto out, arrow::io::FileOutputStream::Open((revision / "1.parquet").string()));
  ASSERT_OK_AND_ASSIGN(auto writer, parquet::arrow::FileWriter::Open(
                                        *schema, arrow::default_memory_pool(), out));
  ASSERT_OK(writer->WriteTable(*table));
  ASSERT_OK(writer->AddKeyValueMetadata(
      arrow::key_value_metadata({"nozzle_metadata"}, {nozzle_metadata})));
  ASSERT_OK(writer->Close());
  ASSERT_OK(out->Close());
}

TEST(ParquetDatasetMetadataTest, WrongTypedNozzleMetadataIsAnErrorNotAnException) {
  // json::value() and get() threw on each of these, out of ParquetDataset::Open.
  for (const char* metadata :
       {R"({"ranges":[{"network":"n","numbers":{"start":"1","end":2}}]})",
        R"({"ranges":[{"network":5,"numbers":{"start":1,"end":2}}]})",
        R"({"ranges":[{"network":"n","numbers":[1,2]}]})",
        R"({"ranges":[{"network":"n","numbers":{"start":1,"end":-2}}]})",
        R"({"ranges":[{"network":"n","numbers":{"start":1,"end":2},"hash":7}]})",
        R"({"ranges":[1]})", R"({"ranges":{}})", R"([])", "",
        "{\"ranges\":[\"\xff\"]}"}) {
    testing::TempDir dir;
    WriteDataset(dir.path(), metadata);
    EXPECT_THAT(ParquetDataset::Open("d", dir.path()),
                testing::StatusHasMessage("malformed"))
        << metadata;
  }
  testing::TempDir dir;
  WriteDataset(dir.path(), R"({"ranges":[{"network":"n","numbers":{"start":1,"end":1},)"
                           R"("hash":"0x01","prev_hash":"0x00"}]})");
  EXPECT_OK(ParquetDataset::Open("d", dir.path()).status());
}

}  // namespace
}  // namespace ampdelta::devserver

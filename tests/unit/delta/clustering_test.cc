#include "ampdelta/delta/log/clustering.h"

#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

class ClusteringTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Snapshot> Latest() { return *Snapshot::Load(store_); }

  // One commit of rows with block numbers `first..last`.
  void Append(int64_t first, int64_t last,
              std::optional<std::vector<std::string>> cluster_by = std::nullopt) {
    arrow::Int64Builder blocks;
    arrow::StringBuilder names;
    for (int64_t b = first; b <= last; ++b) {
      ASSERT_OK(blocks.Append(b));
      ASSERT_OK(names.Append("n" + std::to_string(b)));
    }
    const int64_t rows = blocks.length();  // before Finish() empties the builder
    auto batch =
        arrow::RecordBatch::Make(schema_, rows, {*blocks.Finish(), *names.Finish()});
    TableWriteOptions options;
    options.cluster_by = std::move(cluster_by);
    ASSERT_OK_AND_ASSIGN(auto writer, TableWriter::Open(store_, schema_, options));
    ASSERT_OK(writer->Write(batch));
    ASSERT_OK(writer->Commit().status());
  }

  std::vector<std::pair<int64_t, int64_t>> FileRanges() {
    std::vector<std::pair<int64_t, int64_t>> out;
    auto snapshot = Latest();
    for (const auto& file : snapshot->files()) {
      auto stats = nlohmann::json::parse(*file.stats);
      out.emplace_back(stats["minValues"]["block_num"].get<int64_t>(),
                       stats["maxValues"]["block_num"].get<int64_t>());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  int64_t Rows() {
    auto scan = *TableScan::Make(Latest(), {});
    return (*scan->ToTable())->num_rows();
  }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
  std::shared_ptr<arrow::Schema> schema_ = arrow::schema(
      {arrow::field("block_num", arrow::int64()), arrow::field("name", arrow::utf8())});
};

TEST_F(ClusteringTest, ATableRecordsItsClusteringColumnsAsSparkDoes) {
  Append(0, 9, std::vector<std::string>{"BLOCK_NUM"});
  auto snapshot = Latest();
  ASSERT_OK_AND_ASSIGN(auto columns, ClusteringColumns(*snapshot));
  EXPECT_EQ(columns, std::vector<std::string>{"block_num"});  // the schema's spelling
  EXPECT_TRUE(HasWriterFeature(snapshot->protocol(), TableFeature::kClustering));
  EXPECT_TRUE(HasWriterFeature(snapshot->protocol(), TableFeature::kDomainMetadata));
  const auto& domain = snapshot->domain_metadata().at(kClusteringDomain);
  EXPECT_EQ(nlohmann::json::parse(domain.configuration)["clusteringColumns"],
            nlohmann::json::parse(R"([["block_num"]])"));
}

TEST_F(ClusteringTest, LaterWritesKeepTheColumnsAndRecordThemOnce) {
  Append(0, 9, std::vector<std::string>{"block_num"});
  Append(10, 19);
  Append(20, 29, std::vector<std::string>{"block_num"});
  auto snapshot = Latest();
  ASSERT_OK_AND_ASSIGN(auto columns, ClusteringColumns(*snapshot));
  EXPECT_EQ(columns, std::vector<std::string>{"block_num"});
  // Every file has statistics for the clustering column.
  EXPECT_EQ(FileRanges().size(), 3u);
}

TEST_F(ClusteringTest, OptimizeSortsOverlappingFilesIntoConsecutiveOnes) {
  Append(0, 599, std::vector<std::string>{"block_num"});
  Append(200, 799);
  Append(100, 299);
  Append(900, 999);  // overlaps nothing: packed with its neighbours, not re-sorted alone
  const int64_t rows = Rows();
  OptimizeOptions options;
  options.target_size = 4000;
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_, options));
  ASSERT_TRUE(result.version.has_value());
  EXPECT_EQ(Rows(), rows);
  const auto ranges = FileRanges();
  ASSERT_GT(ranges.size(), 2u);
  for (size_t i = 1; i < ranges.size(); ++i) {
    EXPECT_LE(ranges[i - 1].second, ranges[i].first) << "files " << i - 1 << " and " << i;
  }
  auto snapshot = Latest();
  for (const auto& file : snapshot->files()) {
    if (file.clustering_provider) {
      EXPECT_EQ(*file.clustering_provider, kLiquidProvider);
    }
  }
}

TEST_F(ClusteringTest, FilesWhoseStatisticsCannotSeparateThemSettleAfterOneRun) {
  // Values longer than the 32 characters statistics keep, all with the same first 32:
  // every file's range overlaps every other's, whatever the rows.
  auto schema = arrow::schema({arrow::field("address", arrow::utf8())});
  TableWriteOptions options;
  options.cluster_by = std::vector<std::string>{"address"};
  for (int part = 0; part < 4; ++part) {
    arrow::StringBuilder addresses;
    for (int i = 0; i < 200; ++i) {
      ASSERT_OK(addresses.Append("0x" + std::string(34, '0') +
                                 std::to_string(1000 + (i * 4 + part))));
    }
    const int64_t rows = addresses.length();
    auto batch = arrow::RecordBatch::Make(schema, rows, {*addresses.Finish()});
    ASSERT_OK_AND_ASSIGN(auto writer, TableWriter::Open(store_, schema, options));
    ASSERT_OK(writer->Write(batch));
    ASSERT_OK(writer->Commit().status());
    options.cluster_by.reset();
  }
  OptimizeOptions optimize;
  optimize.target_size = 3000;
  ASSERT_OK_AND_ASSIGN(auto first, Optimize(store_, optimize));
  ASSERT_TRUE(first.version.has_value());
  EXPECT_EQ(Rows(), 800);
  ASSERT_GT(Latest()->files().size(), 1u);
  // The run's files still overlap as their statistics see them; a second run leaves them.
  ASSERT_OK_AND_ASSIGN(auto second, Optimize(store_, optimize));
  EXPECT_FALSE(second.version.has_value());
}

TEST_F(ClusteringTest, AnotherImplementationsFilesAreLeftToIt) {
  Append(0, 99, std::vector<std::string>{"block_num"});
  Append(0, 99);
  // Mark both files as clustered by another implementation.
  auto snapshot = Latest();
  std::vector<Add> marked;
  for (const auto& file : snapshot->files()) {
    Add copy = file;
    copy.clustering_provider = std::string("other");
    copy.data_change = false;
    marked.push_back(std::move(copy));
  }
  TableWriteOptions options;
  options.read_snapshot = snapshot;
  ASSERT_OK_AND_ASSIGN(auto writer, TableWriter::Open(store_, schema_, options));
  writer->StageAdds(std::move(marked));
  ASSERT_OK(writer->Commit().status());
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_));
  EXPECT_FALSE(result.version.has_value());
}

TEST_F(ClusteringTest, BadClusteringIsRefusedNamingWhatIsWrong) {
  EXPECT_THAT(ResolveClusteringColumns({"nosuch"}, *schema_, {}),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  EXPECT_THAT(ResolveClusteringColumns({"block_num", "Block_Num"}, *schema_, {}),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  EXPECT_THAT(ResolveClusteringColumns({"block_num"}, *schema_, {"name"}),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  auto binary = arrow::schema({arrow::field("b", arrow::binary())});
  EXPECT_THAT(ResolveClusteringColumns({"b"}, *binary, {}),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  ASSERT_OK_AND_ASSIGN(auto none, ResolveClusteringColumns({}, *schema_, {"name"}));
  EXPECT_TRUE(none.empty());
}

TEST_F(ClusteringTest, SparksPathsPlainNamesNestedAndMalformedDomainsAreRead) {
  Append(0, 9);
  const auto with = [&](const std::string& configuration) {
    TableWriteOptions options;
    options.writer_features = {TableFeature::kDomainMetadata, TableFeature::kClustering};
    options.domains = {DomainMetadata{kClusteringDomain, configuration, false}};
    auto writer = *TableWriter::Open(store_, schema_, options);
    EXPECT_OK(writer->Commit().status());
    return ClusteringColumns(*Latest());
  };
  ASSERT_OK_AND_ASSIGN(auto paths, with(R"({"clusteringColumns":[["block_num"]]})"));
  EXPECT_EQ(paths, std::vector<std::string>{"block_num"});
  ASSERT_OK_AND_ASSIGN(auto names, with(R"({"clusteringColumns":["name"]})"));
  EXPECT_EQ(names, std::vector<std::string>{"name"});
  EXPECT_THAT(with(R"({"clusteringColumns":[["a","b"]]})"),
              testing::HasErrorCode(ErrorCode::kUnsupportedFeature));
  EXPECT_THAT(with(R"({"clusteringColumns":7})"),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(with("not json"), testing::HasErrorCode(ErrorCode::kCorruptLog));
  // Optimize refuses rather than guessing.
  EXPECT_THAT(Optimize(store_), testing::HasErrorCode(ErrorCode::kCorruptLog));
}

}  // namespace
}  // namespace ampdelta::delta

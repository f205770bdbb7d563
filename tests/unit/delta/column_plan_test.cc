#include "ampdelta/delta/write/column_plan.h"

#include <random>

#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

// `rows` rows: random 32-byte hashes (binary, as tables store them), a column of 4
// repeating values, a counter.
std::shared_ptr<arrow::RecordBatch> Sample(int64_t rows) {
  std::mt19937_64 random(7);
  arrow::BinaryBuilder hashes;
  arrow::StringBuilder kinds;
  arrow::Int64Builder numbers;
  for (int64_t i = 0; i < rows; ++i) {
    std::string hash(32, '\0');
    for (auto& byte : hash) byte = static_cast<char>(random());
    EXPECT_TRUE(hashes.Append(hash).ok());
    EXPECT_TRUE(kinds.Append("kind-" + std::to_string(i % 4)).ok());
    EXPECT_TRUE(numbers.Append(i).ok());
  }
  auto schema = arrow::schema({arrow::field("hash", arrow::binary()),
                               arrow::field("kind", arrow::utf8()),
                               arrow::field("n", arrow::int64())});
  return arrow::RecordBatch::Make(schema, rows,
                                  {*hashes.Finish(), *kinds.Finish(), *numbers.Finish()});
}

TEST(ColumnPlanTest,
     DistinctRandomBytesGoPlainAndUncompressedRepeatsKeepTheirDictionary) {
  ASSERT_OK_AND_ASSIGN(auto plan, PlanColumns(*Sample(2000), DataFileOptions{}));
  EXPECT_EQ(plan.plain, (std::vector<std::string>{"hash", "n"}));
  EXPECT_EQ(plan.uncompressed, (std::vector<std::string>{"hash"}));
}

TEST(ColumnPlanTest, SmallSamplesAndDictionaryOffPlanNothing) {
  ASSERT_OK_AND_ASSIGN(auto small, PlanColumns(*Sample(100), DataFileOptions{}));
  EXPECT_TRUE(small.empty());
  DataFileOptions no_dictionary;
  no_dictionary.dictionary = false;
  ASSERT_OK_AND_ASSIGN(auto off, PlanColumns(*Sample(2000), no_dictionary));
  EXPECT_TRUE(off.empty());
  DataFileOptions uncompressed;
  uncompressed.codec = Codec::kUncompressed;
  ASSERT_OK_AND_ASSIGN(auto raw, PlanColumns(*Sample(2000), uncompressed));
  EXPECT_EQ(raw.plain, (std::vector<std::string>{"hash", "n"}));
  EXPECT_TRUE(raw.uncompressed.empty());  // nothing to skip
}

TEST(ColumnPlanTest, PropertiesFollowThePlan) {
  const auto sample = Sample(2000);
  ASSERT_OK_AND_ASSIGN(auto plan, PlanColumns(*sample, DataFileOptions{}));
  const auto properties =
      MakeWriterProperties(plan, DataFileOptions{}, *sample->schema());
  const auto hash = parquet::schema::ColumnPath::FromDotString("hash");
  const auto kind = parquet::schema::ColumnPath::FromDotString("kind");
  EXPECT_FALSE(properties->dictionary_enabled(hash));
  EXPECT_TRUE(properties->dictionary_enabled(kind));
  EXPECT_EQ(properties->compression(hash), parquet::Compression::UNCOMPRESSED);
  EXPECT_EQ(properties->compression(kind), parquet::Compression::ZSTD);
  EXPECT_FALSE(properties->statistics_enabled(hash));  // min/max of hashes prune nothing
  EXPECT_TRUE(properties->statistics_enabled(kind));
}

}  // namespace
}  // namespace ampdelta::delta

#include "ampdelta/delta/ops/merge.h"

#include <cmath>
#include <limits>

#include <arrow/builder.h>

#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::BlockNumbers;
using test_tables::Blocks;
using test_tables::Range;
using test_tables::WriteBatches;

class MergeTest : public ::testing::Test {
 protected:
  arrow::Result<MergeResult> Merge(
      std::vector<std::shared_ptr<arrow::RecordBatch>> source,
      std::vector<std::string> keys = {"block_num"}) {
    MergeOptions options;
    options.keys = std::move(keys);
    return MergeRows(store_, source.front()->schema(), source, options);
  }

  // block_num -> network of the latest version.
  std::map<int64_t, std::string> Networks() {
    auto snapshot = *Snapshot::Load(store_);
    auto table = *(*TableScan::Make(snapshot, {{"block_num", "network"}, std::nullopt}))
                      ->ToTable();
    auto batch = *table->CombineChunksToBatch();
    std::map<int64_t, std::string> out;
    const auto& numbers = static_cast<const arrow::Int64Array&>(*batch->column(0));
    const auto& networks = static_cast<const arrow::StringArray&>(*batch->column(1));
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      out[numbers.Value(i)] = networks.IsNull(i) ? "null" : networks.GetString(i);
    }
    return out;
  }

  std::shared_ptr<storage::MemoryStore> inner_ = std::make_shared<storage::MemoryStore>();
  std::shared_ptr<storage::FaultStore> store_ =
      std::make_shared<storage::FaultStore>(inner_);
};

TEST_F(MergeTest, MergeIntoAMissingTableCreatesItWithTheLastRowOfEachKey) {
  ASSERT_OK_AND_ASSIGN(auto merged, Merge({Blocks(0, 10, "a"), Blocks(5, 10, "b")}));
  EXPECT_EQ(merged.source_duplicates, 5);
  EXPECT_EQ(merged.rows_inserted, 10);
  EXPECT_EQ(merged.write.commit.version, 0);
  auto networks = Networks();
  ASSERT_EQ(networks.size(), 10u);
  EXPECT_EQ(networks[4], "a");
  EXPECT_EQ(networks[5], "b");
}

TEST_F(MergeTest, NullKeysNeverMatchAndAreAlwaysInserted) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3, "a")}).status());
  arrow::UInt64Builder numbers;
  arrow::StringBuilder networks;
  ASSERT_OK(numbers.AppendValues({1, 2}));
  ASSERT_OK(networks.AppendNull());
  ASSERT_OK(networks.AppendNull());
  auto batch = arrow::RecordBatch::Make(Blocks(0, 1)->schema(), 2,
                                        {*numbers.Finish(), *networks.Finish()});
  // Keyed on network: the null-keyed rows match nothing, not even each other.
  ASSERT_OK_AND_ASSIGN(auto merged, Merge({batch}, {"network"}));
  EXPECT_EQ(merged.rows_updated, 0);
  EXPECT_EQ(merged.rows_inserted, 2);
  EXPECT_EQ((*Snapshot::Load(store_))->CountLiveRecords(), std::optional<int64_t>(5));
}

TEST_F(MergeTest, AConcurrentAppendMakesTheMergeRunAgainSoNoKeyIsDuplicated) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10, "a")}).status());
  // Just before the merge's commit lands, another writer appends blocks 10-14.
  storage::FaultRule rule;
  rule.op = storage::StoreOp::kPut;
  rule.path_contains = "_delta_log/00000000000000000001.json";
  rule.fail = false;
  rule.before = [this] {
    ASSERT_OK(WriteBatches(inner_, {Blocks(10, 15, "b")}).status());
  };
  store_->AddRule(rule);
  ASSERT_OK_AND_ASSIGN(auto merged, Merge({Blocks(12, 20, "c")}));
  EXPECT_EQ(merged.attempts, 2);
  EXPECT_EQ(merged.write.commit.version, 2);
  EXPECT_EQ(merged.rows_updated, 3);  // 12-14 from the concurrent append
  ASSERT_OK_AND_ASSIGN(auto numbers, BlockNumbers(store_));
  EXPECT_EQ(numbers, Range(0, 20));
  auto networks = Networks();
  EXPECT_EQ(networks[11], "b");
  EXPECT_EQ(networks[12], "c");
}

TEST_F(MergeTest, FloatKeysMatchByValueNegativeZeroAndNaNIncluded) {
  auto batch = [](std::vector<double> keys, const std::string& tag) {
    arrow::DoubleBuilder numbers;
    arrow::StringBuilder tags;
    for (double key : keys) {
      (void)numbers.Append(key);
      (void)tags.Append(tag);
    }
    auto schema = arrow::schema(
        {arrow::field("k", arrow::float64()), arrow::field("tag", arrow::utf8())});
    return arrow::RecordBatch::Make(schema, static_cast<int64_t>(keys.size()),
                                    {*numbers.Finish(), *tags.Finish()});
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_OK_AND_ASSIGN(auto first, Merge({batch({0.0, nan, 1.5}, "old")}, {"k"}));
  EXPECT_EQ(first.rows_inserted, 3);
  ASSERT_OK_AND_ASSIGN(auto second, Merge({batch({-0.0, -nan, 1.5}, "new")}, {"k"}));
  EXPECT_EQ(second.rows_updated, 3);
  EXPECT_EQ(second.rows_inserted, 0);
  EXPECT_EQ((*Snapshot::Load(store_))->CountLiveRecords(), std::optional<int64_t>(3));
}

TEST_F(MergeTest, MissingKeyColumnsAreRefusedAndTheTableIsUnchanged) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}).status());
  EXPECT_THAT(Merge({Blocks(0, 3)}, {}), testing::StatusHasMessage("needs merge_keys"));
  EXPECT_THAT(Merge({Blocks(0, 3)}, {"nope"}),
              testing::StatusHasMessage("merge key column 'nope' not found in the data"));
  EXPECT_EQ((*Snapshot::Load(store_))->version(), 0);
}

}  // namespace
}  // namespace ampdelta::delta

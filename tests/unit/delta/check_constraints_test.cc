#include "ampdelta/delta/write/check_constraints.h"

#include <arrow/json/from_string.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>

#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::BlockNumbers;
using test_tables::Blocks;
using test_tables::WriteBatches;

std::shared_ptr<arrow::RecordBatch> Rows(const std::string& ids,
                                         const std::string& names) {
  auto schema = arrow::schema(
      {arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8())});
  return arrow::RecordBatch::Make(
      schema, 3,
      {*arrow::json::ArrayFromJSONString(arrow::int64(), ids),
       *arrow::json::ArrayFromJSONString(arrow::utf8(), names)});
}

TEST(CheckConstraintsTest, AFalseRowIsNamedWithItsValuesAndANullPasses) {
  auto batch = Rows("[1, null, -4]", R"(["a", "b", "c"])");
  ASSERT_OK_AND_ASSIGN(auto constraints,
                       TableConstraints({{"delta.constraints.id_positive", "id > 0"},
                                         {"delta.constraints.named", "name IS NOT NULL"},
                                         {"delta.appendOnly", "false"}},
                                        batch->schema()));
  ASSERT_EQ(constraints.size(), 2U);
  EXPECT_THAT(
      CheckRows(constraints, *batch),
      testing::StatusHasMessage("CHECK constraint id_positive (id > 0) is violated "
                                "by row 2 of the batch: id=-4"));
  // Unknown (a null id) is no violation, as in SQL.
  EXPECT_OK(CheckRows(constraints, *batch->Slice(0, 2)));
}

TEST(CheckConstraintsTest, AConstraintAmpdeltaCannotEvaluateRefusesTheWriteNamingIt) {
  auto batch = Rows("[1, 2, 3]", R"(["a", "b", "c"])");
  EXPECT_THAT(
      TableConstraints({{"delta.constraints.even", "id % 2 = 0"}}, batch->schema()),
      ::testing::AllOf(testing::HasErrorCode(ErrorCode::kUnsupportedFeature),
                       testing::StatusHasMessage("CHECK constraint even (id % 2 = 0)")));
}

TEST(CheckConstraintsTest, WhereSparkCouldDisagreeTheConstraintIsRefusedAndDecimalsWork) {
  auto schema =
      arrow::schema({arrow::field("ratio", arrow::float32()),
                     arrow::field("at", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
                     arrow::field("sep", arrow::utf8()),
                     arrow::field("amount", arrow::decimal128(10, 2))});
  for (const auto& expression :
       {std::string("ratio <= 0.1"), std::string("at > '2024-01-01'"),
        std::string("sep <> '\\t'"), std::string("sep <> 'it''s'")}) {
    EXPECT_THAT(TableConstraints({{"delta.constraints.c", expression}}, schema),
                testing::HasErrorCode(ErrorCode::kUnsupportedFeature))
        << expression;
  }
  ASSERT_OK_AND_ASSIGN(
      auto amounts, TableConstraints({{"delta.constraints.c", "amount >= 0.5"}}, schema));
  auto batch =
      arrow::RecordBatch::Make(arrow::schema({schema->field(3)}), 2,
                               {*arrow::json::ArrayFromJSONString(
                                   schema->field(3)->type(), R"(["0.50", "0.49"])")});
  EXPECT_THAT(CheckRows(amounts, *batch),
              testing::StatusHasMessage("row 1 of the batch: amount=0.49"));
}

TEST(CheckConstraintsTest, AWriteIntoAConstrainedTableAddsNothingWhenOneRowViolates) {
  auto store = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(WriteBatches(store, {Blocks(0, 5)}).status());
  // The constraint, as Spark's ALTER TABLE … ADD CONSTRAINT records it.
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store));
  Metadata metadata = snapshot->metadata();
  metadata.configuration["delta.constraints.recent"] = "block_num >= 3";
  Transaction txn(store, snapshot);
  txn.SetMetadata(metadata);
  ASSERT_OK(txn.Commit().status());
  EXPECT_THAT(WriteBatches(store, {Blocks(10, 12), Blocks(1, 2)}),
              testing::StatusHasMessage("CHECK constraint recent (block_num >= 3) is "
                                        "violated by row 0 of the batch: block_num=1"));
  ASSERT_OK(WriteBatches(store, {Blocks(10, 12)}).status());
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store));
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 1, 2, 3, 4, 10, 11}));
}

}  // namespace
}  // namespace ampdelta::delta

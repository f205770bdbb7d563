#include "ampdelta/delta/write/generated_columns.h"

#include <arrow/array.h>
#include <arrow/json/from_string.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

std::shared_ptr<arrow::Field> Generated(const std::string& name,
                                        std::shared_ptr<arrow::DataType> type,
                                        const std::string& expression,
                                        bool nullable = true) {
  // As Spark records it: the expression as a JSON string.
  return arrow::field(name, std::move(type), nullable)
      ->WithMetadata(arrow::key_value_metadata(
          {{"delta.generationExpression", "\"" + expression + "\""}}));
}

std::shared_ptr<arrow::Field> At() {
  return arrow::field("at", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"));
}

// Two rows at 2024-03-09 23:30 UTC and null.
std::shared_ptr<arrow::RecordBatch> Times() {
  auto schema = arrow::schema({At()});
  return arrow::RecordBatch::Make(
      schema, 2,
      {*arrow::json::ArrayFromJSONString(schema->field(0)->type(),
                                         "[1710027000000000, null]")});
}

TEST(GeneratedColumnsTest, ColumnsTheDataLacksAreComputedNestedAndQuoted) {
  auto table = arrow::schema(
      {At(), Generated("day", arrow::date32(), "CAST(`at` AS DATE)"),
       Generated("year", arrow::int32(), "year(to_date(at))"),
       Generated("hour", arrow::int32(), "HOUR(at)"),
       Generated("copy", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"), "At")});
  ASSERT_OK_AND_ASSIGN(auto generated,
                       GeneratedColumns::Make(table, *Times()->schema(), false));
  ASSERT_OK_AND_ASSIGN(auto rows, generated->Conform(Times()));
  ASSERT_TRUE(rows->schema()->Equals(*table, /*check_metadata=*/false));
  EXPECT_EQ(
      rows->column(1)->ToString(),
      (*arrow::json::ArrayFromJSONString(arrow::date32(), "[19791, null]"))->ToString());
  EXPECT_EQ(
      rows->column(2)->ToString(),
      (*arrow::json::ArrayFromJSONString(arrow::int32(), "[2024, null]"))->ToString());
  EXPECT_EQ(
      rows->column(3)->ToString(),
      (*arrow::json::ArrayFromJSONString(arrow::int32(), "[23, null]"))->ToString());
  EXPECT_TRUE(rows->column(4)->Equals(*rows->column(0)));
}

TEST(GeneratedColumnsTest, AGivenValueThatIsNotTheExpressionsIsRefusedNamingIt) {
  auto table =
      arrow::schema({At(), Generated("day", arrow::date32(), "CAST(at AS DATE)")});
  auto given = arrow::RecordBatch::Make(
      table, 2,
      {Times()->column(0),
       *arrow::json::ArrayFromJSONString(arrow::date32(), "[19792, null]")});
  ASSERT_OK_AND_ASSIGN(auto generated, GeneratedColumns::Make(table, *table, false));
  EXPECT_THAT(generated->Conform(given),
              ::testing::AllOf(testing::HasErrorCode(ErrorCode::kInvalidInput),
                               testing::StatusHasMessage(
                                   "generated column day (CAST(at AS DATE)) is given "
                                   "2024-03-10 in row 0 of the batch, but the expression "
                                   "gives 2024-03-09")));
  // The right value, and null for a null input (<=>), pass.
  auto right = arrow::RecordBatch::Make(
      table, 2,
      {Times()->column(0),
       *arrow::json::ArrayFromJSONString(arrow::date32(), "[19791, null]")});
  EXPECT_OK(generated->Conform(right).status());
  // A rewrite of the table's rows keeps them as they are.
  ASSERT_OK_AND_ASSIGN(auto rewrite, GeneratedColumns::Make(table, *table, true));
  EXPECT_OK(rewrite->Conform(given).status());
}

TEST(GeneratedColumnsTest, ANotNullColumnComputingToNullIsRefused) {
  auto table = arrow::schema(
      {At(), Generated("day", arrow::date32(), "CAST(at AS DATE)", /*nullable=*/false)});
  ASSERT_OK_AND_ASSIGN(auto generated,
                       GeneratedColumns::Make(table, *Times()->schema(), false));
  EXPECT_THAT(generated->Conform(Times()),
              testing::StatusHasMessage("generated column day (CAST(at AS DATE)) is not "
                                        "nullable but computes to null"));
  EXPECT_OK(generated->Conform(Times()->Slice(0, 1)).status());
}

TEST(GeneratedColumnsTest,
     ExpressionsAmpdeltaCannotEvaluateRefuseTheTableNamingTheColumn) {
  for (const auto& expression :
       {std::string("id + 1"), std::string("CAST(id AS INT)"), std::string("upper(name)"),
        std::string("CAST(name AS DATE)"), std::string("HOUR(CAST(at AS DATE))"),
        std::string("date_format(at, 'yyyy')"), std::string("missing"),
        std::string("CAST(at AS DATE"), std::string("`unclosed")}) {
    auto table = arrow::schema({arrow::field("id", arrow::int64()),
                                arrow::field("name", arrow::utf8()), At(),
                                Generated("g", arrow::int32(), expression)});
    EXPECT_THAT(GeneratedColumns::Make(table, *arrow::schema({}), false),
                ::testing::AllOf(testing::HasErrorCode(ErrorCode::kUnsupportedFeature),
                                 testing::StatusHasMessage("generated column g")))
        << expression;
  }
}

}  // namespace
}  // namespace ampdelta::delta

#include "ampdelta/delta/write/check_constraints.h"

#include <arrow/array.h>
#include <arrow/json/from_string.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>

#include "ampdelta/delta/read/predicate.h"
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

// What each row of `batch` makes of `expression`: "t", "f" or "null".
std::vector<std::string> Outcomes(const std::string& expression,
                                  const std::shared_ptr<arrow::RecordBatch>& batch) {
  auto predicate = Predicate::Parse(expression, batch->schema());
  EXPECT_TRUE(predicate.ok()) << expression << ": " << predicate.status().ToString();
  if (!predicate.ok()) return {};
  auto result = predicate->EvaluateKleene(*batch);
  EXPECT_TRUE(result.ok()) << expression << ": " << result.status().ToString();
  if (!result.ok()) return {};
  const auto& values = static_cast<const arrow::BooleanArray&>(**result);
  std::vector<std::string> out;
  for (int64_t i = 0; i < values.length(); ++i) {
    out.push_back(values.IsNull(i) ? "null" : values.Value(i) ? "t" : "f");
  }
  return out;
}

TEST(CheckConstraintsTest, ConstraintsAsSparkPrintsThemEvaluateAsSparkDoes) {
  // Spark stores a CHECK constraint's text as its tokens joined by spaces: a negative
  // number is `- 887272`, parentheses stand apart.
  const auto schema = arrow::schema(
      {arrow::field("tick", arrow::int32()), arrow::field("n", arrow::int16()),
       arrow::field("b", arrow::int8()), arrow::field("x", arrow::int64()),
       arrow::field("name", arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(
      schema, 4,
      {*arrow::json::ArrayFromJSONString(arrow::int32(), "[-887272, -887273, 0, null]"),
       *arrow::json::ArrayFromJSONString(arrow::int16(), "[32767, -32768, 0, null]"),
       *arrow::json::ArrayFromJSONString(arrow::int8(), "[-128, 127, 0, null]"),
       *arrow::json::ArrayFromJSONString(arrow::int64(), "[-5, 6, 3, null]"),
       *arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["a", "c", "b", null])")});
  using V = std::vector<std::string>;
  EXPECT_EQ(Outcomes("tick >= - 887272", batch), (V{"t", "f", "t", "null"}));
  EXPECT_EQ(Outcomes("tick >= - 887272 AND tick <= 887272", batch),
            (V{"t", "f", "t", "null"}));
  // Literals wider than the column: Spark compares in the wider type.
  EXPECT_EQ(Outcomes("n < 40000", batch), (V{"t", "t", "t", "null"}));
  EXPECT_EQ(Outcomes("n < 40000.5", batch), (V{"t", "t", "t", "null"}));
  EXPECT_EQ(Outcomes("n > - 40000", batch), (V{"t", "t", "t", "null"}));
  EXPECT_EQ(Outcomes("b > - 129", batch), (V{"t", "t", "t", "null"}));
  EXPECT_EQ(Outcomes("( x BETWEEN - 5 AND 5 ) OR x IS NULL", batch),
            (V{"t", "f", "t", "t"}));
  EXPECT_EQ(Outcomes("x NOT BETWEEN - 5 AND 5", batch), (V{"f", "t", "f", "null"}));
  EXPECT_EQ(Outcomes("name IN ( 'a' , 'b' )", batch), (V{"t", "f", "t", "null"}));
  EXPECT_EQ(Outcomes("name NOT IN ( 'a' , 'b' )", batch), (V{"f", "t", "f", "null"}));
  EXPECT_EQ(Outcomes("NOT ( x = 3 )", batch), (V{"t", "t", "f", "null"}));
  EXPECT_EQ(Outcomes("x <> - 1", batch), (V{"t", "t", "t", "null"}));
  EXPECT_EQ(Outcomes("0 < x", batch), (V{"f", "t", "t", "null"}));
}

TEST(CheckConstraintsTest, AMinusThatIsNoSignAndUnbalancedParenthesesAreNamed) {
  const auto schema = arrow::schema({arrow::field("x", arrow::int64())});
  EXPECT_THAT(Predicate::Parse("x > - y", schema),
              testing::StatusHasMessage("a '-' must be a number's sign"));
  EXPECT_THAT(Predicate::Parse("( x > 1", schema),
              testing::StatusHasMessage("missing ')'"));
  EXPECT_THAT(Predicate::Parse("x > 1 )", schema),
              testing::StatusHasMessage("unexpected ')'"));
}

TEST(CheckConstraintsTest, AnOrBesideTheComparisonsNeverClassifiesAFileAsAllMatching) {
  const auto schema = arrow::schema({arrow::field("x", arrow::int64())});
  Add file;
  file.path = "f.parquet";
  file.stats =
      R"({"numRecords":2,"minValues":{"x":10},"maxValues":{"x":20},"nullCount":{"x":0}})";
  ASSERT_OK_AND_ASSIGN(auto plain, Predicate::Parse("x >= 10", schema));
  EXPECT_EQ(plain.Classify(file, {}), FileMatch::kAll);
  ASSERT_OK_AND_ASSIGN(auto with_or,
                       Predicate::Parse("x >= 10 AND ( x = 1 OR x = 2 )", schema));
  EXPECT_EQ(with_or.Classify(file, {}), FileMatch::kSome);
  // A comparison beside it still excludes a file.
  ASSERT_OK_AND_ASSIGN(auto excluded,
                       Predicate::Parse("x > 30 AND ( x = 1 OR x = 2 )", schema));
  EXPECT_EQ(excluded.Classify(file, {}), FileMatch::kNone);
}

TEST(CheckConstraintsTest, AFileWhoseStatisticsAreBrokenIsReadNeverSkipped) {
  const auto schema = arrow::schema({arrow::field("x", arrow::int64())});
  ASSERT_OK_AND_ASSIGN(auto predicate, Predicate::Parse("x = 15", schema));
  const std::string bounds = R"("minValues":{"x":10},"maxValues":{"x":20})";
  const std::vector<std::string> broken = {
      R"({"numRecords":-1,"nullCount":{"x":-1},)" + bounds + "}",
      R"({"numRecords":1.5,)" + bounds + "}",
      R"({"numRecords":2,"minValues":{"x":"ten"},"maxValues":{"x":20}})",
      R"({"numRecords":2,"nullCount":{"x":18446744073709551615},)" + bounds + "}",
      R"({"numRecords":2,"minValues":)" + std::string(2000, '[')};
  Add file;
  file.path = "f.parquet";
  for (const std::string& stats : broken) {
    file.stats = stats;
    EXPECT_EQ(predicate.Classify(file, {}), FileMatch::kSome) << stats;
  }
  file.stats = "{\"numRecords\":2," + bounds + "}";
  EXPECT_EQ(predicate.Classify(file, {}), FileMatch::kSome);
  file.stats = "{\"numRecords\":2,\"minValues\":{\"x\":16},\"maxValues\":{\"x\":20}}";
  EXPECT_EQ(predicate.Classify(file, {}), FileMatch::kNone);
}

TEST(CheckConstraintsTest, HostileConditionsAreRefusedOrEvaluatedNeverACrash) {
  const auto schema = arrow::schema({arrow::field("x", arrow::int64())});
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "NOT ";
  EXPECT_THAT(Predicate::Parse(deep + "x > 1", schema),
              testing::StatusHasMessage("nested more than 100 levels"));
  std::string parens = std::string(5000, '(') + "x > 1" + std::string(5000, ')');
  EXPECT_THAT(Predicate::Parse(parens, schema),
              testing::StatusHasMessage("nested more than 100 levels"));
  std::string many = "x = 0";
  for (int i = 1; i < 2000; ++i) many += " OR x = " + std::to_string(i);
  EXPECT_THAT(Predicate::Parse(many, schema),
              testing::StatusHasMessage("more than 1000"));
  // '' is no number: it would match nothing in silence.
  EXPECT_THAT(Predicate::Parse("x = ''", schema), testing::StatusHasMessage("'' is not"));
  // A long IN list is one set lookup.
  std::string in = "x IN (";
  for (int i = 0; i < 20000; ++i) in += (i ? ", " : "") + std::to_string(i * 2);
  in += ")";
  auto batch = arrow::RecordBatch::Make(
      schema, 4,
      {*arrow::json::ArrayFromJSONString(arrow::int64(), "[4, 5, null, 39998]")});
  EXPECT_EQ(Outcomes(in, batch), (std::vector<std::string>{"t", "f", "null", "t"}));
  EXPECT_EQ(Outcomes("x NOT IN (4, 99999999999999999999)", batch),
            (std::vector<std::string>{"f", "t", "null", "t"}));
  // A value the column's type cannot hold matches nothing (never a wrapped one), and a
  // whole decimal matches its integer.
  const auto narrow = arrow::schema({arrow::field("n", arrow::int16())});
  auto shorts = arrow::RecordBatch::Make(
      narrow, 3, {*arrow::json::ArrayFromJSONString(arrow::int16(), "[0, -32768, 5]")});
  EXPECT_EQ(Outcomes("n IN (65536, 32768)", shorts),
            (std::vector<std::string>{"f", "f", "f"}));
  EXPECT_EQ(Outcomes("n NOT IN (32768)", shorts),
            (std::vector<std::string>{"t", "t", "t"}));
  EXPECT_EQ(Outcomes("n IN (5.0, 0.5)", shorts),
            (std::vector<std::string>{"f", "f", "t"}));
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

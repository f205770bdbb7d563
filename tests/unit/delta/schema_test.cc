#include "ampdelta/delta/log/schema.h"

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/decimal.h>

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

TEST(SchemaTest, DeltaJsonRoundTripsNestedTypesAndMetadata) {
  const std::string json =
      R"j({"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}},)j"
      R"j({"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"decimal(38,0)","nullable":true,"metadata":{"comment":"c"}}]},"nullable":true,"metadata":{}},)j"
      R"j({"name":"l","type":{"type":"array","elementType":"binary","containsNull":false},"nullable":true,"metadata":{}},)j"
      R"j({"name":"m","type":{"type":"map","keyType":"string","valueType":"timestamp","valueContainsNull":true},"nullable":true,"metadata":{}},)j"
      R"j({"name":"n","type":"timestamp_ntz","nullable":true,"metadata":{"delta.columnMapping.id":3}}]})j";
  ASSERT_OK_AND_ASSIGN(auto schema, SchemaFromJson(json));
  EXPECT_TRUE(schema->field(0)->type()->Equals(arrow::int64()));
  EXPECT_FALSE(schema->field(0)->nullable());
  EXPECT_TRUE(schema->field(4)->type()->Equals(arrow::timestamp(arrow::TimeUnit::MICRO)));
  EXPECT_TRUE(NeedsTimestampNtz(*schema));
  ASSERT_OK_AND_ASSIGN(std::string back, SchemaToJson(*schema));
  EXPECT_EQ(back, json);
}

TEST(SchemaTest, AmpTypesMapToDeltaTypes) {
  auto source = arrow::schema({
      arrow::field("u64", arrow::uint64()),
      arrow::field("u8", arrow::uint8()),
      arrow::field("u16", arrow::uint16()),
      arrow::field("u32", arrow::uint32()),
      arrow::field("ts", arrow::timestamp(arrow::TimeUnit::NANO, "+00:00")),
      arrow::field("naive", arrow::timestamp(arrow::TimeUnit::MILLI)),
      arrow::field("hash", arrow::fixed_size_binary(32)),
      arrow::field("big", arrow::large_utf8()),
      arrow::field("dict", arrow::dictionary(arrow::int32(), arrow::utf8())),
      arrow::field("fsl", arrow::fixed_size_list(arrow::uint32(), 2)),
      arrow::field("wei", arrow::decimal128(38, 0)),
  });
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*source));
  const std::vector<std::string> expected = {
      "long",   "short",  "integer", "long",  "timestamp",    "timestamp_ntz",
      "binary", "string", "string",  "array", "decimal(38,0)"};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(DeltaTypeName(*table->field(static_cast<int>(i))->type()), expected[i])
        << i;
  }
}

TEST(SchemaTest, TheSameWidthMappingMakesTheSdksIntegerColumns) {
  auto source = arrow::schema({
      arrow::field("u8", arrow::uint8()),
      arrow::field("u16", arrow::uint16()),
      arrow::field("tx_index", arrow::uint32()),
      arrow::field("u64", arrow::uint64()),
      arrow::field("l", arrow::list(arrow::uint32())),
  });
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*source, IntegerMapping::kSameWidth));
  const std::vector<std::string> expected = {"byte", "short", "integer", "long", "array"};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(DeltaTypeName(*table->field(static_cast<int>(i))->type()), expected[i])
        << i;
  }
  EXPECT_TRUE(table->field(4)->type()->field(0)->type()->Equals(arrow::int32()));
}

TEST(SchemaTest, ValuesGoIntoANarrowerTableColumnWhenTheyFitAndTheFirstMisfitIsNamed) {
  // An SDK table stores tx_index (uint32) as integer; ampdelta's data is long.
  arrow::UInt32Builder fits;
  ASSERT_OK(fits.AppendValues({0, 7, 2'147'483'647U}));
  ASSERT_OK_AND_ASSIGN(auto small, fits.Finish());
  auto source = arrow::schema({arrow::field("tx_index", arrow::uint32())});
  auto table = arrow::schema({arrow::field("tx_index", arrow::int32())});
  ASSERT_OK_AND_ASSIGN(auto conformed,
                       ConformBatch(arrow::RecordBatch::Make(source, 3, {small}), table));
  EXPECT_TRUE(conformed->column(0)->type()->Equals(arrow::int32()));
  EXPECT_EQ(static_cast<const arrow::Int32Array&>(*conformed->column(0)).Value(2),
            2'147'483'647);
  arrow::UInt32Builder misfit;
  ASSERT_OK(misfit.AppendValues({1, 2'147'483'648U, 4'000'000'000U}));
  ASSERT_OK_AND_ASSIGN(auto big, misfit.Finish());
  EXPECT_THAT(ConformBatch(arrow::RecordBatch::Make(source, 3, {big}), table),
              testing::StatusHasMessage("column 'tx_index' has value 2147483648 (row 1"));
  // A narrower decimal takes values that fit its precision; a smaller scale is refused.
  arrow::Decimal128Builder wei(arrow::decimal128(38, 0));
  ASSERT_OK(wei.Append(arrow::Decimal128(12345)));
  ASSERT_OK(wei.Append(arrow::Decimal128("100000000000000000000000")));
  ASSERT_OK_AND_ASSIGN(auto values, wei.Finish());
  auto wei_source = arrow::schema({arrow::field("value", arrow::decimal128(38, 0))});
  auto narrow = arrow::schema({arrow::field("value", arrow::decimal128(20, 0))});
  EXPECT_OK(ConformBatch(arrow::RecordBatch::Make(wei_source, 1, {values->Slice(0, 1)}),
                         narrow));
  EXPECT_THAT(ConformBatch(arrow::RecordBatch::Make(wei_source, 2, {values}), narrow),
              testing::StatusHasMessage("has value 100000000000000000000000 (row 1"));
  EXPECT_FALSE(CanWriteInto(*arrow::decimal128(10, 2), *arrow::decimal128(10, 1)));
}

TEST(SchemaTest, UnsupportedTypesAndDuplicateNamesNameTheColumn) {
  EXPECT_THAT(ToTableSchema(*arrow::schema({arrow::field("x", arrow::float16())})),
              testing::StatusHasMessage("column 'x'"));
  EXPECT_THAT(ToTableSchema(*arrow::schema(
                  {arrow::field("t", arrow::time64(arrow::TimeUnit::NANO))})),
              testing::StatusHasMessage("cannot store"));
  EXPECT_THAT(ToTableSchema(*arrow::schema({arrow::field("A", arrow::int32()),
                                            arrow::field("a", arrow::int32())})),
              testing::StatusHasMessage("duplicate column name 'a'"));
}

// Amp's Decimal256(76, 0) (uint160, uint128 … of decoded events), inside a struct and a
// list as evm_decode_log and evm_decode_params return them.
std::shared_ptr<arrow::RecordBatch> WideIntegerBatch(const std::string& big) {
  auto wide = arrow::decimal256(76, 0);
  arrow::Decimal256Builder top(wide);
  EXPECT_TRUE(top.Append(arrow::Decimal256("-12")).ok());
  EXPECT_TRUE(top.Append(*arrow::Decimal256::FromString(big)).ok());
  auto top_values = *top.Finish();
  arrow::Decimal256Builder inner(wide);
  EXPECT_TRUE(inner.Append(*arrow::Decimal256::FromString(big)).ok());
  EXPECT_TRUE(inner.AppendNull().ok());
  auto inner_values = *inner.Finish();
  auto record = *arrow::StructArray::Make({inner_values}, {"liquidity"});
  arrow::Decimal256Builder items(wide);
  for (const auto& item : {arrow::Decimal256(1), arrow::Decimal256(2),
                           *arrow::Decimal256::FromString(big)}) {
    EXPECT_TRUE(items.Append(item).ok());
  }
  auto item_values = *items.Finish();
  arrow::Int32Builder offset_builder;
  EXPECT_TRUE(offset_builder.AppendValues({0, 1, 3}).ok());
  auto list = *arrow::ListArray::FromArrays(**offset_builder.Finish(), *item_values);
  auto schema =
      arrow::schema({arrow::field("amount", wide), arrow::field("swap", record->type()),
                     arrow::field("amounts", list->type())});
  return arrow::RecordBatch::Make(schema, 2, {top_values, record, list});
}

TEST(SchemaTest, WideIntegersBecomeTheirDecimalTextByDefaultAtAnyDepth) {
  const std::string big = "1461501637330902918203684832716283019655932542975";  // 2^160-1
  auto batch = WideIntegerBatch(big);
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*batch->schema()));
  EXPECT_EQ(table->field(0)->type()->id(), arrow::Type::STRING);
  EXPECT_EQ(table->field(1)->type()->field(0)->type()->id(), arrow::Type::STRING);
  EXPECT_EQ(table->field(2)->type()->field(0)->type()->id(), arrow::Type::STRING);
  ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(batch, table));
  ASSERT_OK(conformed->ValidateFull());
  const auto& amount = static_cast<const arrow::StringArray&>(*conformed->column(0));
  EXPECT_EQ(amount.GetString(0), "-12");
  EXPECT_EQ(amount.GetString(1), big);
  const auto& swap = static_cast<const arrow::StructArray&>(*conformed->column(1));
  EXPECT_EQ(static_cast<const arrow::StringArray&>(*swap.field(0)).GetString(0), big);
  EXPECT_TRUE(swap.field(0)->IsNull(1));
  const auto& amounts = static_cast<const arrow::ListArray&>(*conformed->column(2));
  EXPECT_EQ(static_cast<const arrow::StringArray&>(*amounts.values()).GetString(2), big);
}

TEST(SchemaTest, WideIntegersAsDecimalFailNamingTheValueThatDoesNotFit) {
  const TypeMapping decimal(IntegerMapping::kLossless, WideIntegers::kDecimal);
  auto fits = WideIntegerBatch("99999999999999999999999999999999999999");  // 38 digits
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*fits->schema(), decimal));
  EXPECT_TRUE(table->field(0)->type()->Equals(*arrow::decimal128(38, 0)));
  EXPECT_TRUE(
      table->field(1)->type()->field(0)->type()->Equals(*arrow::decimal128(38, 0)));
  ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(fits, table));
  ASSERT_OK(conformed->ValidateFull());
  EXPECT_EQ(conformed->column(0)->GetScalar(0).ValueOrDie()->ToString(), "-12");
  auto too_big =
      WideIntegerBatch("100000000000000000000000000000000000000");  // 39 digits
  EXPECT_THAT(
      ConformBatch(too_big, table),
      testing::StatusHasMessage("column 'amount' has value "
                                "100000000000000000000000000000000000000 (row 1"));
  auto nested = WideIntegerBatch("99999999999999999999999999999999999999");
  // The struct's value alone too large: the message names the field.
  arrow::Decimal256Builder inner(arrow::decimal256(76, 0));
  ASSERT_OK(inner.Append(*arrow::Decimal256::FromString("1" + std::string(40, '0'))));
  ASSERT_OK(inner.AppendNull());
  ASSERT_OK_AND_ASSIGN(auto inner_values, inner.Finish());
  ASSERT_OK_AND_ASSIGN(auto record,
                       arrow::StructArray::Make({inner_values}, {"liquidity"}));
  auto bad = arrow::RecordBatch::Make(nested->schema(), 2,
                                      {nested->column(0), record, nested->column(2)});
  EXPECT_THAT(ConformBatch(bad, table),
              testing::StatusHasMessage("column 'swap.liquidity' has value 1" +
                                        std::string(40, '0') + " (row 0 of the batch)"));
}

TEST(SchemaTest, WideIntegersGoIntoAnExistingColumnsTypeWhateverThePolicy) {
  auto batch = WideIntegerBatch("12345");
  // A table made with "decimal" keeps decimal(38, 0) for a later "string" load, and the
  // other way round: the table's type decides.
  ASSERT_OK_AND_ASSIGN(
      auto decimal_table,
      ToTableSchema(*batch->schema(),
                    TypeMapping(IntegerMapping::kLossless, WideIntegers::kDecimal)));
  ASSERT_OK_AND_ASSIGN(auto as_decimal, ConformBatch(batch, decimal_table));
  EXPECT_TRUE(as_decimal->schema()->Equals(*decimal_table));
  ASSERT_OK_AND_ASSIGN(auto string_table, ToTableSchema(*batch->schema()));
  ASSERT_OK_AND_ASSIGN(auto as_text, ConformBatch(batch, string_table));
  EXPECT_TRUE(as_text->schema()->Equals(*string_table));
  // A long column cannot hold them: refused, naming the types.
  auto long_table = arrow::schema({arrow::field("amount", arrow::int64()),
                                   string_table->field(1), string_table->field(2)});
  EXPECT_THAT(ConformBatch(batch, long_table),
              testing::StatusHasMessage("column 'amount'"));
}

TEST(SchemaTest, ALaterLoadKeepsTheTablesRepresentationWhateverItsPolicy) {
  auto batch = WideIntegerBatch("12345");
  const TypeMapping text;
  const TypeMapping decimal(IntegerMapping::kLossless, WideIntegers::kDecimal);
  ASSERT_OK_AND_ASSIGN(auto text_table, ToTableSchema(*batch->schema(), text));
  ASSERT_OK_AND_ASSIGN(auto decimal_table, ToTableSchema(*batch->schema(), decimal));
  // A "decimal" load into a text table goes in as text, and the other way round.
  ASSERT_OK_AND_ASSIGN(auto into_text,
                       ToTableSchemaInto(*batch->schema(), decimal, *text_table));
  EXPECT_TRUE(into_text->Equals(*text_table)) << into_text->ToString();
  ASSERT_OK_AND_ASSIGN(auto into_decimal,
                       ToTableSchemaInto(*batch->schema(), text, *decimal_table));
  EXPECT_TRUE(into_decimal->Equals(*decimal_table)) << into_decimal->ToString();
  // A new column follows the policy.
  auto other = arrow::schema({arrow::field("other", arrow::int64())});
  ASSERT_OK_AND_ASSIGN(auto fresh, ToTableSchemaInto(*batch->schema(), decimal, *other));
  EXPECT_TRUE(fresh->Equals(*decimal_table));
}

TEST(SchemaTest, WideIntegerTextIsPlainWhateverTheScaleAndStructFieldsMatchByAnyCase) {
  arrow::Decimal256Builder scaled(arrow::decimal256(76, 40));
  ASSERT_OK(scaled.Append(arrow::Decimal256(0)));
  ASSERT_OK(scaled.Append(arrow::Decimal256(-15)));
  ASSERT_OK_AND_ASSIGN(auto scaled_values, scaled.Finish());
  arrow::Decimal256Builder negative(arrow::decimal256(40, -5));
  ASSERT_OK(negative.Append(arrow::Decimal256(1)));
  ASSERT_OK(negative.Append(arrow::Decimal256(0)));
  ASSERT_OK_AND_ASSIGN(auto negative_values, negative.Finish());
  ASSERT_OK_AND_ASSIGN(auto record,
                       arrow::StructArray::Make({negative_values}, {"Value"}));
  auto source = arrow::schema(
      {arrow::field("s", scaled_values->type()), arrow::field("d", record->type())});
  auto batch = arrow::RecordBatch::Make(source, 2, {scaled_values, record});
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*source));
  ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(batch, table));
  const auto& s = static_cast<const arrow::StringArray&>(*conformed->column(0));
  EXPECT_EQ(s.GetString(0), "0." + std::string(40, '0'));
  EXPECT_EQ(s.GetString(1), "-0." + std::string(38, '0') + "15");
  const auto& d = static_cast<const arrow::StructArray&>(*conformed->column(1));
  EXPECT_EQ(static_cast<const arrow::StringArray&>(*d.field(0)).GetString(0), "100000");
  EXPECT_EQ(static_cast<const arrow::StringArray&>(*d.field(0)).GetString(1), "0");
  // A table whose field is spelled `value` takes the data's `Value` (decimal policy too).
  auto lower = arrow::schema(
      {table->field(0), arrow::field("d", arrow::struct_({arrow::field(
                                              "value", arrow::decimal128(38, 0))}))});
  arrow::Decimal256Builder plain(arrow::decimal256(76, 0));
  ASSERT_OK(plain.Append(arrow::Decimal256(7)));
  ASSERT_OK(plain.Append(arrow::Decimal256(8)));
  ASSERT_OK_AND_ASSIGN(auto plain_values, plain.Finish());
  ASSERT_OK_AND_ASSIGN(auto upper, arrow::StructArray::Make({plain_values}, {"Value"}));
  auto upper_batch =
      arrow::RecordBatch::Make(arrow::schema({arrow::field("s", scaled_values->type()),
                                              arrow::field("d", upper->type())}),
                               2, {scaled_values, upper});
  ASSERT_OK_AND_ASSIGN(auto into_lower, ConformBatch(upper_batch, lower));
  ASSERT_OK(into_lower->ValidateFull());
  // A struct without fields (an empty Solidity tuple) is refused, naming the column.
  EXPECT_THAT(ToTableSchema(*arrow::schema({arrow::field("e", arrow::struct_({}))})),
              testing::StatusHasMessage("column 'e'"));
}

TEST(SchemaTest, ConformingNamesOverflowingUint64Values) {
  arrow::UInt64Builder builder;
  ASSERT_OK(builder.AppendValues({1, 18446744073709551615ULL}));
  ASSERT_OK_AND_ASSIGN(auto array, builder.Finish());
  auto source = arrow::schema({arrow::field("gas_used", arrow::uint64())});
  auto batch = arrow::RecordBatch::Make(source, 2, {array});
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*source));
  EXPECT_THAT(ConformBatch(batch, table),
              testing::StatusHasMessage(
                  "column 'gas_used' (uint64) has value 18446744073709551615"));
}

TEST(SchemaTest, ConformingTruncatesNanosecondsAndFillsMissingColumns) {
  arrow::TimestampBuilder builder(arrow::timestamp(arrow::TimeUnit::NANO, "+00:00"),
                                  arrow::default_memory_pool());
  ASSERT_OK(builder.Append(1'500'001'999));
  ASSERT_OK_AND_ASSIGN(auto array, builder.Finish());
  auto source = arrow::schema({arrow::field("ts", array->type())});
  auto batch = arrow::RecordBatch::Make(source, 1, {array});
  auto table =
      arrow::schema({arrow::field("ts", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
                     arrow::field("extra", arrow::int64())});
  ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(batch, table));
  EXPECT_EQ(static_cast<const arrow::TimestampArray&>(*conformed->column(0)).Value(0),
            1'500'001);
  EXPECT_EQ(conformed->column(1)->null_count(), 1);
}

}  // namespace
}  // namespace ampdelta::delta

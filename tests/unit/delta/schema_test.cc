#include "ampdelta/delta/log/schema.h"

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/json/from_string.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/decimal.h>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/schema_json.h"
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

std::shared_ptr<arrow::RecordBatch> Uint64Batch(const std::string& name) {
  arrow::UInt64Builder values;
  EXPECT_OK(values.AppendValues({1, 18446744073709551615ULL}));
  auto array = values.Finish().ValueOrDie();
  auto record = arrow::StructArray::Make({array}, {"value"}).ValueOrDie();
  return arrow::RecordBatch::Make(arrow::schema({arrow::field(name, arrow::uint64()),
                                                 arrow::field("t", record->type())}),
                                  2, {array, record});
}

TEST(SchemaTest, Uint64FieldsAreDecimal20AndColumnsLongByDefault) {
  auto batch = Uint64Batch("gas_used");
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*batch->schema()));
  EXPECT_EQ(DeltaTypeName(*table->field(0)->type()), "long");  // the seed's i64
  EXPECT_EQ(DeltaTypeName(*table->field(1)->type()->field(0)->type()), "decimal(20,0)");
  // The field keeps 2^64-1; the column names it, with the way to keep it.
  EXPECT_THAT(ConformBatch(batch, table),
              testing::StatusHasMessage(
                  "column 'gas_used' has value 18446744073709551615 (row 1 of the "
                  "batch), which does not fit the table's type long (a new table stores "
                  "every uint64 as decimal(20,0) with \"uint64\": \"decimal\")"));
  auto fields_only = arrow::RecordBatch::Make(arrow::schema({batch->schema()->field(1)}),
                                              2, {batch->column(1)});
  ASSERT_OK_AND_ASSIGN(auto conformed,
                       ConformBatch(fields_only, arrow::schema({table->field(1)})));
  ASSERT_OK(conformed->ValidateFull());
  const auto& t = static_cast<const arrow::StructArray&>(*conformed->column(0));
  EXPECT_EQ(t.field(0)->GetScalar(1).ValueOrDie()->ToString(), "18446744073709551615");
  // Values that fit go into a long column as the same buffer viewed as long.
  ASSERT_OK_AND_ASSIGN(auto fits, ConformBatch(batch->Slice(0, 1), table));
  ASSERT_OK(fits->ValidateFull());
  EXPECT_EQ(fits->column(0)->data()->buffers[1], batch->column(0)->data()->buffers[1]);
}

TEST(SchemaTest, Uint64DecimalKeepsEveryColumnButBlockNumbers) {
  TypeMapping decimal;
  decimal.unsigned64 = Unsigned64::kDecimal;
  decimal.block_columns.push_back("height");
  for (const std::string name : {"Block_Num", "_block_num", "height"}) {
    auto blocks = Uint64Batch(name);
    ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*blocks->schema(), decimal));
    EXPECT_EQ(DeltaTypeName(*table->field(0)->type()), "long") << name;
  }
  auto batch = Uint64Batch("nonce");
  ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*batch->schema(), decimal));
  EXPECT_EQ(DeltaTypeName(*table->field(0)->type()), "decimal(20,0)");
  ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(batch, table));
  ASSERT_OK(conformed->ValidateFull());
  EXPECT_EQ(conformed->column(0)->GetScalar(1).ValueOrDie()->ToString(),
            "18446744073709551615");
}

TEST(SchemaTest, TheSdksLongFieldsAndNarrowerColumnsNameTheUint64ThatDoesNotFit) {
  auto batch = Uint64Batch("gas_used");
  ASSERT_OK_AND_ASSIGN(auto sdk,
                       ToTableSchema(*batch->schema(), IntegerMapping::kSameWidth));
  EXPECT_EQ(DeltaTypeName(*sdk->field(1)->type()->field(0)->type()), "long");
  auto fields_only = arrow::RecordBatch::Make(arrow::schema({batch->schema()->field(1)}),
                                              2, {batch->column(1)});
  EXPECT_THAT(
      ConformBatch(fields_only, arrow::schema({sdk->field(1)})),
      testing::StatusHasMessage("column 't.value' has value 18446744073709551615"));
  // A Spark table's int column takes them when they fit, checked, at any depth.
  auto int_table = arrow::schema(
      {arrow::field("gas_used", arrow::int32()),
       arrow::field("t", arrow::struct_({arrow::field("value", arrow::int16())}))});
  ASSERT_OK_AND_ASSIGN(auto narrow, ConformBatch(batch->Slice(0, 1), int_table));
  ASSERT_OK(narrow->ValidateFull());
  EXPECT_THAT(ConformBatch(batch, int_table),
              testing::StatusHasMessage("which does not fit the table's type integer"));
}

TEST(SchemaTest, ALaterLoadOfUint64KeepsTheTablesLongOrDecimal) {
  auto batch = Uint64Batch("gas_used");
  TypeMapping decimal;
  decimal.unsigned64 = Unsigned64::kDecimal;
  ASSERT_OK_AND_ASSIGN(auto decimal_table, ToTableSchema(*batch->schema(), decimal));
  ASSERT_OK_AND_ASSIGN(auto long_table,
                       ToTableSchema(*batch->schema(), IntegerMapping::kSameWidth));
  ASSERT_OK_AND_ASSIGN(auto into_long,
                       ToTableSchemaInto(*batch->schema(), decimal, *long_table));
  EXPECT_TRUE(into_long->Equals(*long_table)) << into_long->ToString();
  ASSERT_OK_AND_ASSIGN(
      auto into_decimal,
      ToTableSchemaInto(*batch->schema(), IntegerMapping::kSameWidth, *decimal_table));
  EXPECT_TRUE(into_decimal->Equals(*decimal_table)) << into_decimal->ToString();
  ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(batch, decimal_table));
  EXPECT_EQ(conformed->column(0)->GetScalar(1).ValueOrDie()->ToString(),
            "18446744073709551615");
  // A Spark-made decimal(38,0) column takes them too.
  auto wide = arrow::schema(
      {arrow::field("gas_used", arrow::decimal128(38, 0)), decimal_table->field(1)});
  ASSERT_OK_AND_ASSIGN(auto into_wide, ConformBatch(batch, wide));
  EXPECT_EQ(into_wide->column(0)->GetScalar(1).ValueOrDie()->ToString(),
            "18446744073709551615");
}

TEST(SchemaTest, Uint64InMapsDictionariesSlicedListsAndNonNullableFieldsConform) {
  // map<string, uint64> into the SDK's map<string, long>, and into decimal(20,0).
  auto map_type = arrow::map(arrow::utf8(), arrow::uint64());
  auto map_values =
      *arrow::json::ArrayFromJSONString(map_type, R"([[["a", 1]], null, [["b", 2]]])");
  auto maps = arrow::RecordBatch::Make(arrow::schema({arrow::field("m", map_type)}), 3,
                                       {map_values});
  for (const auto& mapping : {TypeMapping(IntegerMapping::kSameWidth), TypeMapping()}) {
    ASSERT_OK_AND_ASSIGN(auto table, ToTableSchema(*maps->schema(), mapping));
    ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(maps->Slice(1, 2), table));
    ASSERT_OK(conformed->ValidateFull());
    EXPECT_TRUE(conformed->column(0)->IsNull(0));
    const auto& map = static_cast<const arrow::MapArray&>(*conformed->column(0));
    EXPECT_EQ(map.items()->length(), 1);  // the slice's entry only
    EXPECT_EQ(map.items()->GetScalar(0).ValueOrDie()->ToString(), "2");
  }
  // A dictionary of uint64 is a uint64 column: long by default, block numbers always.
  auto dictionary = arrow::schema(
      {arrow::field("block_num", arrow::dictionary(arrow::int32(), arrow::uint64()))});
  TypeMapping decimal;
  decimal.unsigned64 = Unsigned64::kDecimal;
  ASSERT_OK_AND_ASSIGN(auto blocks, ToTableSchema(*dictionary, decimal));
  EXPECT_EQ(DeltaTypeName(*blocks->field(0)->type()), "long");
  // A non-nullable uint64 field under a null struct: the struct's null is no value.
  auto record_type = arrow::struct_({arrow::field("v", arrow::uint64(), false)});
  auto records = *arrow::json::ArrayFromJSONString(record_type, R"([{"v": 1}, null])");
  auto batch = arrow::RecordBatch::Make(arrow::schema({arrow::field("t", record_type)}),
                                        2, {records});
  ASSERT_OK_AND_ASSIGN(auto struct_table, ToTableSchema(*batch->schema()));
  ASSERT_OK_AND_ASSIGN(auto conformed, ConformBatch(batch, struct_table));
  ASSERT_OK(conformed->ValidateFull());
  EXPECT_TRUE(conformed->column(0)->IsNull(1));
  // A slice of a list batch converts only its own lists: the other rows' 2^64-1 into a
  // long list is no error of this slice.
  auto list_type = arrow::list(arrow::uint64());
  auto lists =
      *arrow::json::ArrayFromJSONString(list_type, "[[1, 2], [18446744073709551615]]");
  auto list_batch =
      arrow::RecordBatch::Make(arrow::schema({arrow::field("l", list_type)}), 2, {lists});
  ASSERT_OK_AND_ASSIGN(auto long_lists,
                       ToTableSchema(*list_batch->schema(), IntegerMapping::kSameWidth));
  ASSERT_OK_AND_ASSIGN(auto first, ConformBatch(list_batch->Slice(0, 1), long_lists));
  ASSERT_OK(first->ValidateFull());
  EXPECT_TRUE(first->column(0)->type()->Equals(*long_lists->field(0)->type()));
  const auto& items = static_cast<const arrow::ListArray&>(*first->column(0));
  EXPECT_EQ(items.value_length(0), 2);
  EXPECT_THAT(ConformBatch(list_batch->Slice(1, 1), long_lists),
              testing::StatusHasMessage("column 'l.element' has value "
                                        "18446744073709551615 (item 0 of a list)"));
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

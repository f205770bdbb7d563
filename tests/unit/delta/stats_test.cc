#include "ampdelta/delta/write/stats.h"

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/decimal.h>
#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;

std::shared_ptr<arrow::Array> Int64s(std::vector<std::optional<int64_t>> values) {
  arrow::Int64Builder builder;
  for (auto v : values) {
    if (v) {
      (void)builder.Append(*v);
    } else {
      (void)builder.AppendNull();
    }
  }
  return *builder.Finish();
}

std::shared_ptr<arrow::Array> Strings(std::vector<std::string> values) {
  arrow::StringBuilder builder;
  for (const auto& v : values) (void)builder.Append(v);
  return *builder.Finish();
}

TEST(StatsTest, NumbersAndNullCountsAcrossBatches) {
  auto schema = arrow::schema({arrow::field("n", arrow::int64())});
  StatsCollector stats(schema, {});
  ASSERT_OK(
      stats.Update(*arrow::RecordBatch::Make(schema, 3, {Int64s({5, std::nullopt, 7})})));
  ASSERT_OK(stats.Update(*arrow::RecordBatch::Make(schema, 2, {Int64s({-2, 9})})));
  const json out = json::parse(stats.ToJson());
  EXPECT_EQ(out["numRecords"], 5);
  EXPECT_EQ(out["minValues"]["n"], -2);
  EXPECT_EQ(out["maxValues"]["n"], 9);
  EXPECT_EQ(out["nullCount"]["n"], 1);
}

TEST(StatsTest, StringsAreTruncatedAndMaxStaysAnUpperBound) {
  auto schema = arrow::schema({arrow::field("s", arrow::utf8())});
  StatsCollector stats(schema, {});
  const std::string long_value = std::string(40, 'b');
  ASSERT_OK(stats.Update(*arrow::RecordBatch::Make(
      schema, 2, {Strings({std::string(40, 'a'), long_value})})));
  const json out = json::parse(stats.ToJson());
  EXPECT_EQ(out["minValues"]["s"], std::string(32, 'a'));
  const std::string max = out["maxValues"]["s"];
  EXPECT_EQ(max, std::string(32, 'b') + "\x7f");
  EXPECT_GT(max, long_value);
}

TEST(StatsTest, TimestampsKeepMillisecondsAndIndexedColumnsAreLimited) {
  arrow::TimestampBuilder ts(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                             arrow::default_memory_pool());
  ASSERT_OK(ts.AppendValues({1'000'123'456, 2'000'999'999}));
  auto schema =
      arrow::schema({arrow::field("t", ts.type()), arrow::field("n", arrow::int64()),
                     arrow::field("b", arrow::boolean())});
  arrow::BooleanBuilder b;
  ASSERT_OK(b.AppendValues(std::vector<bool>{true, false}));
  StatsOptions options;
  options.num_indexed_cols = 2;
  StatsCollector stats(schema, options);
  ASSERT_OK(stats.Update(
      *arrow::RecordBatch::Make(schema, 2, {*ts.Finish(), Int64s({1, 2}), *b.Finish()})));
  const json out = json::parse(stats.ToJson());
  EXPECT_EQ(out["minValues"]["t"], "1970-01-01T00:16:40.123Z");
  EXPECT_EQ(out["maxValues"]["t"], "1970-01-01T00:33:20.999Z");
  EXPECT_FALSE(out["nullCount"].contains("b"));
}

TEST(StatsTest, NestedLeavesGetNullCountsAndNaNSkipsMinMax) {
  auto inner = arrow::struct_({arrow::field("x", arrow::int64())});
  auto schema =
      arrow::schema({arrow::field("s", inner), arrow::field("f", arrow::float64())});
  auto s = std::make_shared<arrow::StructArray>(
      inner, 2, arrow::ArrayVector{Int64s({1, std::nullopt})});
  arrow::DoubleBuilder f;
  ASSERT_OK(f.AppendValues({1.0, std::nan("")}));
  StatsCollector stats(schema, {});
  ASSERT_OK(stats.Update(*arrow::RecordBatch::Make(schema, 2, {s, *f.Finish()})));
  const json out = json::parse(stats.ToJson());
  EXPECT_EQ(out["nullCount"]["s"]["x"], 1);
  EXPECT_EQ(out["minValues"]["s"]["x"], 1);
  EXPECT_FALSE(out["minValues"].contains("f"));
  EXPECT_EQ(out["nullCount"]["f"], 0);
}

}  // namespace
}  // namespace ampdelta::delta

namespace ampdelta::delta {
namespace {

TEST(StatsDecimalTest, DecimalBoundsAreExactEvenBeyondDoublePrecision) {
  arrow::Decimal128Builder builder(arrow::decimal128(38, 2));
  ASSERT_OK(builder.Append(arrow::Decimal128("123456789012345678901234567890123456")));
  ASSERT_OK(builder.Append(arrow::Decimal128("-105")));
  auto schema = arrow::schema({arrow::field("d", builder.type())});
  StatsCollector stats(schema, {});
  ASSERT_OK(stats.Update(*arrow::RecordBatch::Make(schema, 2, {*builder.Finish()})));
  const std::string text = stats.ToJson();
  EXPECT_NE(text.find(R"("minValues":{"d":-1.05})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("maxValues":{"d":1234567890123456789012345678901234.56})"),
            std::string::npos)
      << text;
  EXPECT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded());
}

// Arrow strings need not be UTF-8 and JSON strings must be: ToJson runs on writer
// threads, where nlohmann's exception for such a string was std::terminate.
TEST(StatsUtf8Test, MinOfBadBytesIsItsValidPrefixAndMaxIsLeftOut) {
  auto schema = arrow::schema({arrow::field("s", arrow::utf8())});
  StatsCollector stats(schema, {});
  ASSERT_OK(stats.Update(*arrow::RecordBatch::Make(
      schema, 2, {Strings({std::string("ab\xff\xfe"), std::string("zz\xc3")})})));
  const std::string text = stats.ToJson();
  const auto out = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << text;
  // A prefix sorts before the value, so it is still a lower bound.
  EXPECT_EQ(out["minValues"]["s"], "ab");
  // No well-formed string is an upper bound of "zz\xc3" cut to its valid prefix.
  EXPECT_FALSE(out["maxValues"].contains("s")) << text;
  EXPECT_EQ(out["nullCount"]["s"], 0);
}

TEST(StatsUtf8Test, BadBytesBeyondTheTruncationStillGiveAnUpperBound) {
  auto schema = arrow::schema({arrow::field("s", arrow::utf8())});
  StatsCollector stats(schema, {});
  const std::string max = std::string(40, 'm') + "\xff";
  ASSERT_OK(
      stats.Update(*arrow::RecordBatch::Make(schema, 2, {Strings({"aaa\xc0", max})})));
  const auto out = nlohmann::json::parse(stats.ToJson());
  EXPECT_EQ(out["minValues"]["s"], "aaa");
  const std::string bound = out["maxValues"]["s"];
  EXPECT_EQ(bound, std::string(32, 'm') + "\x7f");
  EXPECT_GT(bound, max);
}

TEST(StatsUtf8Test, ColumnNameThatIsNotUtf8GetsNoStatsInsteadOfAnException) {
  auto schema = arrow::schema(
      {arrow::field("bad\xff", arrow::int64()), arrow::field("good", arrow::int64())});
  StatsCollector stats(schema, {});
  ASSERT_OK(
      stats.Update(*arrow::RecordBatch::Make(schema, 1, {Int64s({1}), Int64s({2})})));
  const auto out = nlohmann::json::parse(stats.ToJson());
  EXPECT_EQ(out["minValues"].size(), 1u);
  EXPECT_EQ(out["minValues"]["good"], 2);
}

TEST(StatsUtf8Test, EmptyAndMaximalStrings) {
  auto schema = arrow::schema({arrow::field("s", arrow::utf8())});
  StatsCollector stats(schema, {});
  // U+10FFFF after the kept prefix has nothing above it: max is left out, min kept.
  std::string top;
  for (int i = 0; i < 33; ++i) top += "\xf4\x8f\xbf\xbf";
  ASSERT_OK(stats.Update(*arrow::RecordBatch::Make(schema, 2, {Strings({"", top})})));
  const auto out = nlohmann::json::parse(stats.ToJson());
  EXPECT_EQ(out["minValues"]["s"], "");
  EXPECT_FALSE(out["maxValues"].contains("s"));
}

std::shared_ptr<arrow::Schema> MergedSchema() {
  return arrow::schema(
      {arrow::field("block_num", arrow::int64()), arrow::field("name", arrow::utf8()),
       arrow::field("at", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("amount", arrow::decimal128(38, 0)),
       arrow::field("s", arrow::struct_({arrow::field("x", arrow::float64())}))});
}

TEST(MergeStatsTest, BoundsAreTheLeastAndGreatestOfThePartsAndNullCountsAdd) {
  const std::string a =
      R"({"numRecords":3,"minValues":{"block_num":10,"name":"b","at":"2020-01-02T00:00:00.000Z","amount":5,"s":{"x":1.5}},)"
      R"("maxValues":{"block_num":19,"name":"k","at":"2020-01-03T00:00:00.000Z","amount":9,"s":{"x":2.5}},)"
      R"("nullCount":{"block_num":0,"name":1,"at":0,"amount":0,"s":{"x":0}}})";
  const std::string b =
      R"({"numRecords":2,"minValues":{"block_num":3,"name":"c","at":"2020-01-01T00:00:00.000Z","amount":1,"s":{"x":-4.0}},)"
      R"("maxValues":{"block_num":7,"name":"z","at":"2020-01-01T12:00:00.000Z","amount":99,"s":{"x":0.5}},)"
      R"("nullCount":{"block_num":0,"name":0,"at":1,"amount":0,"s":{"x":0}}})";
  const json merged = json::parse(MergeStats({a, b}, *MergedSchema(), 5));
  EXPECT_EQ(merged["numRecords"], 5);
  EXPECT_EQ(merged["minValues"]["block_num"], 3);
  EXPECT_EQ(merged["maxValues"]["block_num"], 19);
  EXPECT_EQ(merged["minValues"]["name"], "b");
  EXPECT_EQ(merged["maxValues"]["name"], "z");
  EXPECT_EQ(merged["minValues"]["at"], "2020-01-01T00:00:00.000Z");
  EXPECT_EQ(merged["maxValues"]["at"], "2020-01-03T00:00:00.000Z");
  EXPECT_EQ(merged["minValues"]["s"]["x"], -4.0);
  EXPECT_EQ(merged["maxValues"]["s"]["x"], 2.5);
  EXPECT_EQ(merged["nullCount"]["name"], 1);
  EXPECT_EQ(merged["nullCount"]["at"], 1);
  // Decimals' digits would round through the JSON library's doubles: no bounds.
  EXPECT_FALSE(merged["minValues"].contains("amount"));
  EXPECT_EQ(merged["nullCount"]["amount"], 0);
}

TEST(MergeStatsTest, ColumnLosesBoundsWhenAPartWithValuesHasNone) {
  // b has values in `name` but no bound for it (not collected): no bound is safe.
  const std::string a =
      R"({"numRecords":2,"minValues":{"block_num":1,"name":"a"},"maxValues":{"block_num":2,"name":"b"},"nullCount":{"block_num":0,"name":0}})";
  const std::string b =
      R"({"numRecords":2,"minValues":{"block_num":5},"maxValues":{"block_num":6},"nullCount":{"block_num":0,"name":0}})";
  const json merged = json::parse(MergeStats({a, b}, *MergedSchema(), 4));
  EXPECT_FALSE(merged["minValues"].contains("name"));
  EXPECT_FALSE(merged["maxValues"].contains("name"));
  EXPECT_EQ(merged["maxValues"]["block_num"], 6);
}

TEST(MergeStatsTest, PartWithOnlyNullsAddsNoBound) {
  const std::string a =
      R"({"numRecords":2,"minValues":{"name":"m"},"maxValues":{"name":"n"},"nullCount":{"name":0}})";
  const std::string b =
      R"({"numRecords":3,"minValues":{},"maxValues":{},"nullCount":{"name":3}})";
  const json merged = json::parse(MergeStats({a, b}, *MergedSchema(), 5));
  EXPECT_EQ(merged["minValues"]["name"], "m");
  EXPECT_EQ(merged["maxValues"]["name"], "n");
  EXPECT_EQ(merged["nullCount"]["name"], 3);
}

TEST(MergeStatsTest, PartWithoutStatisticsLeavesOnlyTheRowCount) {
  const std::string a =
      R"({"numRecords":2,"minValues":{"block_num":1},"maxValues":{"block_num":2},"nullCount":{"block_num":0}})";
  const json missing = json::parse(MergeStats({a, std::nullopt}, *MergedSchema(), 7));
  EXPECT_EQ(missing, json::parse(R"({"numRecords":7})"));
  const json garbage =
      json::parse(MergeStats({a, std::string("{not json")}, *MergedSchema(), 7));
  EXPECT_EQ(garbage, json::parse(R"({"numRecords":7})"));
}

TEST(MergeStatsTest, DatesBeforeYearOneLoseTheirBounds) {
  // Byte order reverses for negative years: -0999 sorts after -0100.
  const std::string a =
      R"({"numRecords":1,"minValues":{"at":"-999-01-01T00:00:00.000Z"},"maxValues":{"at":"-999-01-01T00:00:00.000Z"},"nullCount":{"at":0}})";
  const std::string b =
      R"({"numRecords":1,"minValues":{"at":"-100-01-01T00:00:00.000Z"},"maxValues":{"at":"-100-01-01T00:00:00.000Z"},"nullCount":{"at":0}})";
  const json merged = json::parse(MergeStats({a, b}, *MergedSchema(), 2));
  EXPECT_FALSE(merged["minValues"].contains("at"));
  EXPECT_FALSE(merged["maxValues"].contains("at"));
}

std::string OneBound(const std::string& column, const std::string& bound) {
  return R"({"numRecords":1,"minValues":{")" + column + R"(":")" + bound +
         R"("},"maxValues":{")" + column + R"(":")" + bound + R"("},"nullCount":{")" +
         column + R"(":0}})";
}

TEST(MergeStatsTest, ZonedTimestampsMergeAsInstantsWhateverTheirOffset) {
  // Spark writes bounds in its session's zone: 01:00+01:00 is midnight UTC, 19:10-05:00
  // is 00:10 UTC the next day; byte order would pick the wrong ones.
  const std::string a = OneBound("at", "2020-01-01T00:30:00.000Z");
  const std::string b = OneBound("at", "2020-01-01T01:00:00.000+01:00");
  const std::string c = OneBound("at", "2020-01-01T19:10:00.000-05:00");
  const json merged = json::parse(MergeStats({a, b, c}, *MergedSchema(), 3));
  EXPECT_EQ(merged["minValues"]["at"], "2020-01-01T01:00:00.000+01:00");
  EXPECT_EQ(merged["maxValues"]["at"], "2020-01-01T19:10:00.000-05:00");
}

TEST(MergeStatsTest, DatesAndNtzTimestampsMergeWhateverTheirLastDigit) {
  const auto schema =
      arrow::schema({arrow::field("day", arrow::date32()),
                     arrow::field("local", arrow::timestamp(arrow::TimeUnit::MICRO))});
  const std::string a =
      R"({"numRecords":1,"minValues":{"day":"2020-01-09","local":"2020-01-09T23:59:59.999"},)"
      R"("maxValues":{"day":"2020-01-09","local":"2020-01-09T23:59:59.999"},)"
      R"("nullCount":{"day":0,"local":0}})";
  const std::string b =
      R"({"numRecords":1,"minValues":{"day":"2020-01-10","local":"2020-01-10T00:00:00.000"},)"
      R"("maxValues":{"day":"2021-03-12","local":"2020-01-10T08:00:00.120"},)"
      R"("nullCount":{"day":0,"local":0}})";
  const json merged = json::parse(MergeStats({a, b}, *schema, 2));
  EXPECT_EQ(merged["minValues"]["day"], "2020-01-09");
  EXPECT_EQ(merged["maxValues"]["day"], "2021-03-12");
  EXPECT_EQ(merged["minValues"]["local"], "2020-01-09T23:59:59.999");
  EXPECT_EQ(merged["maxValues"]["local"], "2020-01-10T08:00:00.120");
}

TEST(MergeStatsTest, ATimestampBoundThatIsNotOneLosesTheBounds) {
  const std::string a = OneBound("at", "2020-01-01T00:00:00.000Z");
  const std::string b = OneBound("at", "yesterday");
  const json merged = json::parse(MergeStats({a, b}, *MergedSchema(), 2));
  EXPECT_FALSE(merged["minValues"].contains("at"));
  EXPECT_FALSE(merged["maxValues"].contains("at"));
}

}  // namespace
}  // namespace ampdelta::delta

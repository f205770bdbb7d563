#include "ampdelta/delta/log/partitioning.h"

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/snapshot.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

TEST(PartitioningTest, FoldersUseSparkEscapingAndHiveNull) {
  EXPECT_EQ(EscapePartitionPathValue("2021-09-08 11:11:11"), "2021-09-08 11%3A11%3A11");
  EXPECT_EQ(EscapePartitionPathValue("bar+%21"), "bar+%2521");
  EXPECT_EQ(EscapePartitionPathValue("A/A"), "A%2FA");
  EXPECT_EQ(PartitionFolder({"a", "b"}, {{"a", "x=y"}, {"b", std::nullopt}}),
            "a=x%3Dy/b=__HIVE_DEFAULT_PARTITION__");
  // The log path encodes the folder's % again.
  EXPECT_EQ(EncodeLogPath("x=A%2FA/part 1.parquet"), "x=A%252FA/part%201.parquet");
  EXPECT_EQ(DecodeLogPath("x=A%252FA/part%201.parquet"), "x=A%2FA/part 1.parquet");
}

TEST(PartitioningTest, ValuesSerialiseAsTheSpecSays) {
  arrow::TimestampBuilder ts(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                             arrow::default_memory_pool());
  ASSERT_OK(ts.Append(1'704'103'200'000'123));
  ASSERT_OK(ts.AppendNull());
  ASSERT_OK_AND_ASSIGN(auto tss, ts.Finish());
  ASSERT_OK_AND_ASSIGN(auto value, SerializePartitionValue(*tss, 0));
  EXPECT_EQ(*value, "2024-01-01T10:00:00.000123Z");
  ASSERT_OK_AND_ASSIGN(auto null_value, SerializePartitionValue(*tss, 1));
  EXPECT_FALSE(null_value.has_value());
  arrow::Date32Builder date;
  ASSERT_OK(date.Append(18878));
  ASSERT_OK_AND_ASSIGN(auto dates, date.Finish());
  ASSERT_OK_AND_ASSIGN(auto day, SerializePartitionValue(*dates, 0));
  EXPECT_EQ(*day, "2021-09-08");
  ASSERT_OK_AND_ASSIGN(
      auto parsed,
      ParsePartitionValue(std::string("2024-01-01T10:00:00.000123Z"), tss->type()));
  EXPECT_EQ(static_cast<const arrow::TimestampScalar&>(*parsed).value,
            1'704'103'200'000'123);
  ASSERT_OK_AND_ASSIGN(
      auto old_style,
      ParsePartitionValue(std::string("2021-09-08 11:11:11"), tss->type()));
  EXPECT_TRUE(old_style->is_valid);
}

TEST(PartitioningTest, StringValueThatIsNotUtf8IsAnErrorBeforeAnythingIsWritten) {
  arrow::StringBuilder builder;
  ASSERT_OK(builder.Append(std::string("caf\xc3")));
  ASSERT_OK(builder.Append(std::string("caf\xc3\xa9")));
  ASSERT_OK_AND_ASSIGN(auto strings, builder.Finish());
  EXPECT_THAT(SerializePartitionValue(*strings, 0),
              testing::StatusHasMessage("partition value 'caf\\xC3' is not valid UTF-8"));
  EXPECT_THAT(SerializePartitionValue(*strings, 0),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  ASSERT_OK_AND_ASSIGN(auto fine, SerializePartitionValue(*strings, 1));
  EXPECT_EQ(*fine, "caf\xc3\xa9");
}

TEST(PartitioningTest, DatesBeforeYearOneThousandRoundTrip) {
  // Found by the partition_path fuzzer: the year lost its leading zero and the value
  // written could not be read back.
  for (const auto& type :
       {arrow::date32(), arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
        arrow::timestamp(arrow::TimeUnit::MICRO)}) {
    ASSERT_OK_AND_ASSIGN(auto parsed,
                         ParsePartitionValue(std::string("0111-09-08"), type));
    ASSERT_OK_AND_ASSIGN(auto array, arrow::MakeArrayFromScalar(*parsed, 1));
    ASSERT_OK_AND_ASSIGN(auto text, SerializePartitionValue(*array, 0));
    EXPECT_EQ(text->substr(0, 10), "0111-09-08") << type->ToString();
    ASSERT_OK_AND_ASSIGN(auto again, ParsePartitionValue(text, type));
    EXPECT_TRUE(again->Equals(*parsed)) << *text;
  }
}

TEST(PartitioningTest, DecimalValuesParseExactlyAtTheColumnsScale) {
  ASSERT_OK_AND_ASSIGN(
      auto parsed, ParsePartitionValue(std::string("-1.5"), arrow::decimal128(10, 2)));
  EXPECT_EQ(parsed->ToString(), "-1.50");
  // Digits the scale cannot hold are an error, never a rounded value.
  EXPECT_THAT(ParsePartitionValue(std::string("1.555"), arrow::decimal128(10, 2)),
              testing::HasErrorCode(ErrorCode::kCorruptLog));
  // An exponent far past 38 digits (found by the fuzzer: it crashed Arrow's Rescale) is
  // exact only for zero.
  ASSERT_OK_AND_ASSIGN(auto zero, ParsePartitionValue(std::string("+0e-20180512"),
                                                      arrow::decimal128(10, 2)));
  EXPECT_EQ(zero->ToString(), "0.00");
  for (const char* text : {"1e-20180512", "1e20180512", "1e-41", "1E41"}) {
    EXPECT_THAT(ParsePartitionValue(std::string(text), arrow::decimal128(38, 18)),
                testing::HasErrorCode(ErrorCode::kCorruptLog))
        << text;
  }
}

TEST(PartitioningTest, HostileValuesFromTheLogAreErrorsNotExceptions) {
  const std::pair<std::string, std::shared_ptr<arrow::DataType>> cases[] = {
      {"99999999999999999999", arrow::int64()},
      {"128", arrow::int8()},
      {"1e400", arrow::int64()},
      {"abc", arrow::int32()},
      {"2021-13-45", arrow::date32()},
      {"maybe", arrow::boolean()},
      {"99999-01-01 00:00:00", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")},
      {"Z", arrow::timestamp(arrow::TimeUnit::MICRO)},
      {"1" + std::string(50, '0'), arrow::decimal128(10, 2)},
      {"1.2.3", arrow::decimal128(10, 2)},
  };
  for (const auto& [text, type] : cases) {
    EXPECT_THAT(ParsePartitionValue(text, type),
                testing::HasErrorCode(ErrorCode::kCorruptLog))
        << text << " as " << type->ToString();
  }
  // Empty text is null for every type but string, where it is the empty string.
  ASSERT_OK_AND_ASSIGN(auto empty_long,
                       ParsePartitionValue(std::string(), arrow::int64()));
  EXPECT_FALSE(empty_long->is_valid);
  ASSERT_OK_AND_ASSIGN(auto empty_string,
                       ParsePartitionValue(std::string(), arrow::utf8()));
  EXPECT_TRUE(empty_string->is_valid);
}

}  // namespace
}  // namespace ampdelta::delta

// A data file's statistics as any writer leaves them: absent, partial, not JSON, hostile.
// Each such case says nothing (so a reader reads the file), never errs or crashes.

#include "ampdelta/delta/log/file_stats.h"

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

FileStats Parse(const std::string& text) { return FileStats(std::optional(text)); }

TEST(FileStatsTest, StatisticsThatAreAbsentOrNotAnObjectSayNothing) {
  for (const std::optional<std::string>& text :
       {std::optional<std::string>(), std::optional<std::string>(""),
        std::optional<std::string>("not json"), std::optional<std::string>("[1,2]"),
        std::optional<std::string>("42"),
        std::optional<std::string>("{\"numRecords\":")}) {
    const FileStats stats(text);
    EXPECT_FALSE(stats.known()) << text.value_or("(absent)");
    EXPECT_EQ(stats.num_records(), std::nullopt);
    EXPECT_EQ(stats.Find(StatsSection::kMinValues, {"a"}), nullptr);
    EXPECT_EQ(stats.NullCount({"a"}), std::nullopt);
  }
}

TEST(FileStatsTest, StatisticsNestedPastTheJsonDepthLimitSayNothing) {
  std::string deep = "{\"numRecords\":3,\"minValues\":";
  for (int i = 0; i < 100'000; ++i) deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 100'000; ++i) deep += "}";
  deep += "}";
  const FileStats stats = Parse(deep);
  EXPECT_FALSE(stats.known());
  EXPECT_EQ(stats.num_records(), std::nullopt);
}

TEST(FileStatsTest, RowCountsThatAreNegativeOrOutsideInt64AreUnknown) {
  EXPECT_EQ(Parse(R"({"numRecords":18446744073709551615})").num_records(), std::nullopt);
  EXPECT_EQ(Parse(R"({"numRecords":1.5})").num_records(), std::nullopt);
  EXPECT_EQ(Parse(R"({"numRecords":"7"})").num_records(), std::nullopt);
  EXPECT_EQ(Parse(R"({"numRecords":7})").num_records(), 7);
  // A negative count would make a predicate's "every row is null" true of any file.
  EXPECT_EQ(Parse(R"({"numRecords":-1,"nullCount":{"a":-1}})").num_records(),
            std::nullopt);
  EXPECT_EQ(Parse(R"({"numRecords":-1,"nullCount":{"a":-1}})").NullCount({"a"}),
            std::nullopt);
  Add add;
  add.stats = R"({"numRecords":9,"nullCount":{"a":-1}})";
  EXPECT_EQ(StatsNumRecords(add), 9);
  EXPECT_EQ(StatsNumRecords(Add{}), std::nullopt);
}

TEST(FileStatsTest, NestedColumnsAreFoundByTheirPath) {
  const FileStats stats = Parse(
      R"({"numRecords":4,"minValues":{"s":{"x":1,"y":"b"}},"maxValues":{"s":{"x":9}},
          "nullCount":{"s":{"x":0,"y":18446744073709551615}}})");
  ASSERT_NE(stats.Find(StatsSection::kMinValues, {"s", "x"}), nullptr);
  EXPECT_EQ(*stats.Find(StatsSection::kMinValues, {"s", "x"}), 1);
  EXPECT_EQ(*stats.Find(StatsSection::kMinValues, {"s", "y"}), "b");
  EXPECT_EQ(stats.Find(StatsSection::kMaxValues, {"s", "y"}), nullptr);
  EXPECT_EQ(stats.Find(StatsSection::kMinValues, {"s", "x", "deeper"}), nullptr);
  EXPECT_EQ(stats.Find(StatsSection::kMinValues, {"S", "x"}), nullptr);
  EXPECT_EQ(stats.NullCount({"s", "x"}), 0);
  EXPECT_EQ(stats.NullCount({"s", "y"}), std::nullopt);  // above INT64_MAX
  EXPECT_EQ(stats.NullCount({"s"}), std::nullopt);       // an object, not a count
}

TEST(FileStatsTest, ATopLevelColumnIsFoundInAnyCaseAndANullBoundIsAbsent) {
  const FileStats stats =
      Parse(R"({"numRecords":2,"minValues":{"Block_Num":5,"gone":null},"maxValues":{}})");
  ASSERT_NE(stats.FindIgnoringCase(StatsSection::kMinValues, "block_num"), nullptr);
  EXPECT_EQ(*stats.FindIgnoringCase(StatsSection::kMinValues, "BLOCK_NUM"), 5);
  EXPECT_EQ(stats.FindIgnoringCase(StatsSection::kMinValues, "gone"), nullptr);
  EXPECT_EQ(stats.FindIgnoringCase(StatsSection::kMaxValues, "block_num"), nullptr);
  EXPECT_EQ(stats.FindIgnoringCase(StatsSection::kNullCount, "block_num"), nullptr);
}

TEST(FileStatsTest, LooseBoundsKeepEveryOtherKeyInItsOrder) {
  EXPECT_EQ(Parse(R"({"numRecords":3,"minValues":{"a":1},"tightBounds":true,"x":[1]})")
                .WithLooseBounds(5),
            R"({"numRecords":5,"minValues":{"a":1},"tightBounds":false,"x":[1]})");
  EXPECT_EQ(FileStats().WithLooseBounds(2), R"({"numRecords":2,"tightBounds":false})");
  EXPECT_EQ(Parse("garbage").WithLooseBounds(2),
            R"({"numRecords":2,"tightBounds":false})");
}

}  // namespace
}  // namespace ampdelta::delta

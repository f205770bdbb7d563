// Hostile table properties (metaData.configuration): values that do not parse, or would
// overflow, are ignored and the defaults kept.

#include "ampdelta/delta/log/table_properties.h"

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

TEST(TablePropertiesTest, HugeAndNegativeIntervalsAreIgnored) {
  const TableProperties defaults = ParseTableProperties({});
  for (const std::string value :
       {"interval 9223372036854775807 weeks", "interval 99999999999999999999 days",
        "interval -1 days", "interval -9223372036854775807 weeks", "interval 1e9 days",
        "interval", "", "interval 5", "interval 5 fortnights"}) {
    const TableProperties props =
        ParseTableProperties({{"delta.logRetentionDuration", value},
                              {"delta.deletedFileRetentionDuration", value}});
    EXPECT_EQ(props.log_retention_ms, defaults.log_retention_ms) << value;
    EXPECT_EQ(props.deleted_file_retention_ms, defaults.deleted_file_retention_ms)
        << value;
  }
  EXPECT_THAT(ParseIntervalMs("interval 9223372036854775807 weeks"),
              testing::StatusHasMessage("is negative or too long"));
  ASSERT_OK_AND_ASSIGN(auto week, ParseIntervalMs("interval 1 week"));
  EXPECT_EQ(week, 604'800'000);
  ASSERT_OK_AND_ASSIGN(auto zero, ParseIntervalMs("0 hours"));
  EXPECT_EQ(zero, 0);
}

TEST(TablePropertiesTest, IntegersOutOfRangeOrWithTrailingTextAreIgnored) {
  const TableProperties defaults = ParseTableProperties({});
  for (const std::string value :
       {"99999999999999999999", "10x", "", "-", "1.5", "0x10"}) {
    const TableProperties props = ParseTableProperties(
        {{"delta.checkpointInterval", value}, {"delta.targetFileSize", value}});
    EXPECT_EQ(props.checkpoint_interval, defaults.checkpoint_interval) << value;
    EXPECT_EQ(props.target_file_size, defaults.target_file_size) << value;
  }
  // As std::stoll read them: leading blanks and a plus sign are fine.
  EXPECT_EQ(
      ParseTableProperties({{"delta.checkpointInterval", " +7"}}).checkpoint_interval, 7);
  EXPECT_EQ(ParseTableProperties({{"delta.checkpointInterval", "9223372036854775807"}})
                .checkpoint_interval,
            INT64_MAX);
}

}  // namespace
}  // namespace ampdelta::delta

#include "ampdelta/delta/log/log_path.h"

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

TEST(LogPathTest, ParsesEveryLogFileKind) {
  auto commit = ParseLogPath("_delta_log/00000000000000000012.json");
  ASSERT_TRUE(commit);
  EXPECT_EQ(commit->type, LogFileType::kCommit);
  EXPECT_EQ(commit->version, 12);
  EXPECT_EQ(ParseLogPath("_delta_log/00000000000000000010.checkpoint.parquet")->type,
            LogFileType::kCheckpoint);
  auto part = ParseLogPath(
      "_delta_log/00000000000000000010.checkpoint.0000000002.0000000003.parquet");
  ASSERT_TRUE(part);
  EXPECT_EQ(part->type, LogFileType::kMultiPartCheckpoint);
  EXPECT_EQ(part->part, 2);
  EXPECT_EQ(part->parts, 3);
  EXPECT_EQ(
      ParseLogPath(
          "_delta_log/"
          "00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json")
          ->type,
      LogFileType::kUuidCheckpointJson);
  EXPECT_EQ(
      ParseLogPath(
          "_delta_log/"
          "00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet")
          ->type,
      LogFileType::kUuidCheckpointParquet);
  EXPECT_EQ(ParseLogPath("_delta_log/00000000000000000003.crc")->type,
            LogFileType::kChecksum);
  auto compacted =
      ParseLogPath("_delta_log/00000000000000000001.00000000000000000004.compacted.json");
  ASSERT_TRUE(compacted);
  EXPECT_EQ(compacted->end_version, 4);
  EXPECT_EQ(ParseLogPath("_delta_log/_last_checkpoint")->type,
            LogFileType::kLastCheckpoint);
}

TEST(LogPathTest, IgnoresWhatIsNotALogEntry) {
  for (const char* key :
       {"_delta_log/.00000000000000000000.json.crc", "_delta_log/_commit_x.json.tmp",
        "_delta_log/_sidecars/a.parquet", "part-0.parquet",
        "_delta_log/0000000000000000001.json", "_delta_log/00000000000000000001.txt",
        "_delta_log/00000000000000000010.checkpoint.0000000004.0000000003.parquet"}) {
    EXPECT_FALSE(ParseLogPath(key).has_value()) << key;
  }
}

TEST(LogPathTest, HugeNumbersInNamesAreNotLogEntries) {
  // 4294967297 parts would wrap to 1 as an int32 and make part 1 look complete.
  EXPECT_FALSE(ParseLogPath(
      "_delta_log/00000000000000000010.checkpoint.0000000001.4294967297.parquet"));
  EXPECT_FALSE(ParseLogPath(
      "_delta_log/00000000000000000010.checkpoint.0000000001.9999999999.parquet"));
  auto largest = ParseLogPath(
      "_delta_log/00000000000000000010.checkpoint.0000000001.2147483647.parquet");
  ASSERT_TRUE(largest);
  EXPECT_EQ(largest->parts, 2147483647);
  // Beyond int64 and at INT64_MAX (whose next version would overflow).
  EXPECT_FALSE(ParseLogPath("_delta_log/99999999999999999999.json"));
  EXPECT_FALSE(ParseLogPath("_delta_log/09223372036854775807.json"));
  EXPECT_EQ(ParseLogPath("_delta_log/09223372036854775806.json")->version, INT64_MAX - 1);
  EXPECT_FALSE(ParseLogPath(
      "_delta_log/00000000000000000001.09223372036854775807.compacted.json"));
}

TEST(LogPathTest, EmptyAndTruncatedNamesAreNotLogEntries) {
  const std::string name =
      "_delta_log/00000000000000000010.checkpoint.0000000001.0000000002.parquet";
  ASSERT_TRUE(ParseLogPath(name));
  for (size_t length = 0; length < name.size(); ++length) {
    EXPECT_FALSE(ParseLogPath(name.substr(0, length))) << length;
  }
  EXPECT_FALSE(ParseLogPath(""));
  EXPECT_FALSE(ParseLogPath("_delta_log/"));
  EXPECT_FALSE(ParseLogPath("_delta_log/.json"));
}

TEST(LogPathTest, FormatsTwentyDigitVersions) {
  EXPECT_EQ(CommitPath(7), "_delta_log/00000000000000000007.json");
  EXPECT_EQ(CheckpointPath(10), "_delta_log/00000000000000000010.checkpoint.parquet");
}

}  // namespace
}  // namespace ampdelta::delta

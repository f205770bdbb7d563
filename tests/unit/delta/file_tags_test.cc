#include "ampdelta/delta/write/file_tags.h"

#include <gtest/gtest.h>

namespace ampdelta::delta {
namespace {

Add Tagged(NullableStringMap tags) {
  Add add;
  add.tags = std::move(tags);
  return add;
}

TEST(FileTagsTest, SetValuedTagsAreUnionedAndOthersKeptOnlyWhenAllAgree) {
  const Add a =
      Tagged({{"ranges", R"([{"start":1},{"start":2}])"}, {"owner", "x"}, {"note", "a"}});
  const Add b =
      Tagged({{"ranges", R"([{"start":2},{"start":3}])"}, {"owner", "x"}, {"note", "b"}});
  auto merged = MergeFileTags({&a, &b});
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->at("ranges"), R"([{"start":1},{"start":2},{"start":3}])");
  EXPECT_EQ(merged->at("owner"), "x");
  EXPECT_EQ(merged->count("note"), 0u);
}

TEST(FileTagsTest, ASetValuedTagMissingFromSomeFilesStillSurvives) {
  const Add a = Tagged({{"ranges", R"([1])"}});
  const Add plain;
  auto merged = MergeFileTags({&a, &plain});
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->at("ranges"), "[1]");
  EXPECT_FALSE(MergeFileTags({&plain, &plain}).has_value());
}

}  // namespace
}  // namespace ampdelta::delta

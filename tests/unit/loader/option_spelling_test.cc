#include "ampdelta/loader/common/option_spelling.h"

#include <gtest/gtest.h>

namespace ampdelta::loader {
namespace {

TEST(OptionSpellingTest, TheCliNamesAFlagWithItsValue) {
  EXPECT_EQ(SpellOption(OptionSpelling::kCli, "block_column"), "--block-column");
  EXPECT_EQ(SpellOption(OptionSpelling::kCli, "takeover",
                        {"from-block:N", "('from-block', N)"}),
            "--takeover from-block:N");
}

TEST(OptionSpellingTest, PythonNamesAKeywordWithItsValue) {
  EXPECT_EQ(SpellOption(OptionSpelling::kPython, "block_column"), "block_column=");
  EXPECT_EQ(SpellOption(OptionSpelling::kPython, "takeover",
                        {"after-table-max", "'after-table-max'"}),
            "takeover='after-table-max'");
}

}  // namespace
}  // namespace ampdelta::loader

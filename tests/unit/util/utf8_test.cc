#include "ampdelta/util/utf8.h"

#include <string>

#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

TEST(Utf8Test, WellFormedTextIsValidWhole) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii \x7f"));
  EXPECT_TRUE(IsValidUtf8("\xc2\x80 \xdf\xbf"));  // U+0080, U+07FF
  EXPECT_TRUE(
      IsValidUtf8("\xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80"));  // U+0800, U+D7FF, U+E000
  EXPECT_TRUE(IsValidUtf8("\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf"));  // U+10000, U+10FFFF
  EXPECT_TRUE(IsValidUtf8(std::string("nul \0 inside", 12)));
}

TEST(Utf8Test, IllFormedSequencesAreRefused) {
  for (const std::string bad :
       {"\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80",
        "\xed\xbf\xbf", "\xf0\x80\x80\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
        "\xff", "\xfe", "\xc2", "\xe2\x82", "\xf0\x9f\x98", "\xc2\x41"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << EscapeNonUtf8(bad);
  }
}

TEST(Utf8Test, ValidPrefixEndsBeforeTheFirstBadByte) {
  EXPECT_EQ(ValidUtf8PrefixLength("abc\xff"
                                  "def"),
            3u);
  EXPECT_EQ(ValidUtf8PrefixLength("ab\xe2\x82\xac\xe2\x82"),
            5u);  // a truncated euro sign
  EXPECT_EQ(ValidUtf8PrefixLength("\xff"), 0u);
  EXPECT_EQ(ValidUtf8PrefixLength("caf\xc3\xa9"), 5u);
}

TEST(Utf8Test, EscapeShowsBadBytesAndKeepsGoodText) {
  EXPECT_EQ(EscapeNonUtf8("ok"), "ok");
  EXPECT_EQ(EscapeNonUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(EscapeNonUtf8("a\xff"
                          "b\xc3"),
            "a\\xFFb\\xC3");
  EXPECT_TRUE(IsValidUtf8(EscapeNonUtf8("\xed\xa0\x80\xf8")));
}

TEST(Utf8Test, ReplaceTurnsEachBadByteIntoTheReplacementCharacter) {
  EXPECT_EQ(ReplaceNonUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(ReplaceNonUtf8("a\xff"
                           "b\xc3"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_TRUE(IsValidUtf8(ReplaceNonUtf8("\xed\xa0\x80\xf8")));
}

}  // namespace
}  // namespace ampdelta

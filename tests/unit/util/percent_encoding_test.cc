#include "ampdelta/util/percent_encoding.h"

#include <gtest/gtest.h>

#include "ampdelta/util/ascii.h"

namespace ampdelta {
namespace {

TEST(PercentEncodingTest, EachEscapeSetEscapesWhatItsUserNeeds) {
  const std::string text = "a b/c=d:é%~";
  EXPECT_EQ(PercentEncode(text, PercentEscape::kAllButUnreserved),
            "a%20b%2Fc%3Dd%3A%C3%A9%25~");
  EXPECT_EQ(PercentEncode(text, PercentEscape::kAllButUnreservedAndSlash),
            "a%20b/c%3Dd%3A%C3%A9%25~");
  EXPECT_EQ(PercentEncode(text, PercentEscape::kLogPath), "a%20b/c=d:%C3%A9%25~");
  // Hive keeps spaces and non-ASCII bytes in partition folders as they are.
  EXPECT_EQ(PercentEncode(text, PercentEscape::kPartitionFolder), "a b%2Fc%3Dd%3Aé%25~");
  EXPECT_EQ(PercentEncode(std::string("\x01\x7f", 2), PercentEscape::kPartitionFolder),
            "%01%7F");
}

TEST(PercentEncodingTest, DecodingUndoesEveryEncodingOnce) {
  const std::string text = "x=1/%41 é\t{}";
  for (auto escape :
       {PercentEscape::kAllButUnreserved, PercentEscape::kAllButUnreservedAndSlash,
        PercentEscape::kLogPath, PercentEscape::kPartitionFolder}) {
    EXPECT_EQ(PercentDecode(PercentEncode(text, escape)), text);
  }
  EXPECT_EQ(PercentDecode("%2541"), "%41");  // once, not twice
}

TEST(PercentEncodingTest, AMalformedEscapeStaysAsWritten) {
  EXPECT_EQ(PercentDecode("100%"), "100%");
  EXPECT_EQ(PercentDecode("%4"), "%4");
  EXPECT_EQ(PercentDecode("%zz%4g"), "%zz%4g");
  EXPECT_EQ(PercentDecode("%e9%E9"), "\xe9\xe9");
}

TEST(AsciiTest, CaseFoldingTouchesOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("Block_NUM É"), "block_num É");
  EXPECT_EQ(AsciiUpper("select é"), "SELECT é");
  EXPECT_TRUE(EqualsIgnoreAsciiCase("Network", "NETWORK"));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("é", "É"));
}

}  // namespace
}  // namespace ampdelta

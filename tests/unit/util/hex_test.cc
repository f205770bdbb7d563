#include "ampdelta/util/hex.h"

#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

TEST(HexTest, RoundTripsBytesWithPrefix) {
  const std::string bytes("\x00\x01\xab\xff", 4);
  EXPECT_EQ(ToHex0x(bytes), "0x0001abff");
  ASSERT_OK_AND_ASSIGN(std::string decoded, FromHex("0x0001ABff"));
  EXPECT_EQ(decoded, bytes);
}

TEST(HexTest, DecodesWithoutPrefix) {
  ASSERT_OK_AND_ASSIGN(std::string decoded, FromHex("0a0b"));
  EXPECT_EQ(decoded, std::string("\x0a\x0b", 2));
}

TEST(HexTest, RejectsOddLengthAndBadDigits) {
  EXPECT_THAT(FromHex("0xabc"), testing::StatusHasMessage("odd number"));
  EXPECT_THAT(FromHex("0xzz"), testing::StatusHasMessage("invalid hex digit"));
}

TEST(HexTest, RecognisesOnlyCanonicalHashes) {
  EXPECT_TRUE(IsHash32Hex("0x" + std::string(64, 'a')));
  EXPECT_FALSE(IsHash32Hex("0x" + std::string(64, 'A')));
  EXPECT_FALSE(IsHash32Hex("0x" + std::string(63, 'a')));
  EXPECT_FALSE(IsHash32Hex(std::string(66, 'a')));
}

}  // namespace
}  // namespace ampdelta

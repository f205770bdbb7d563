#include "ampdelta/util/numbers.h"

#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

TEST(NumbersTest, WholeTextMustBeANumberInRange) {
  EXPECT_EQ(ParseInt64("-42"), std::optional<int64_t>(-42));
  EXPECT_EQ(ParseInt64("9223372036854775807"), std::optional<int64_t>(INT64_MAX));
  EXPECT_EQ(ParseInt64("-9223372036854775808"), std::optional<int64_t>(INT64_MIN));
  for (const char* bad :
       {"", "-", "9223372036854775808", "1x", " 1", "+1", "1.0", "0x10"}) {
    EXPECT_EQ(ParseInt64(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseUint64("18446744073709551615"), std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(ParseUint64("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseUint64("-1"), std::nullopt);
  EXPECT_EQ(ParseDouble("1.5"), std::optional<double>(1.5));
  EXPECT_EQ(ParseDouble("-2e3"), std::optional<double>(-2000));
  EXPECT_EQ(ParseDouble("1" + std::string(400, '0') + ".5"), std::nullopt);
  EXPECT_EQ(ParseDouble("1.2.3"), std::nullopt);
  EXPECT_EQ(ParseDouble(""), std::nullopt);
}

}  // namespace
}  // namespace ampdelta

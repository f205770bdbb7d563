#include "ampdelta/util/time_format.h"

#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

TEST(TimeFormatTest, YearsBeforeOneThousandKeepFourDigits) {
  // 0111-09-08, found by the partition_path fuzzer: "%Y" wrote "111-09-08", which neither
  // ampdelta nor Spark parses back, so such a partition value or statistic was
  // unreadable.
  constexpr int64_t kDay = -678'736;  // days from 1970-01-01 to 0111-09-08
  EXPECT_EQ(FormatCivil(kDay * 86400, CivilFormat::kDate), "0111-09-08");
  EXPECT_EQ(FormatCivil(kDay * 86400 + 3661, CivilFormat::kDateTime),
            "0111-09-08 01:01:01");
  EXPECT_EQ(FormatCivil(kDay * 86400, CivilFormat::kIsoDateTime), "0111-09-08T00:00:00");
  EXPECT_EQ(FormatCivil(-62'167'219'200, CivilFormat::kDate), "0000-01-01");
  EXPECT_EQ(FormatCivil(1'765'585'559, CivilFormat::kIsoDateTime), "2025-12-13T00:25:59");
  EXPECT_EQ(FormatCivil(253'402'300'799, CivilFormat::kDateTime), "9999-12-31 23:59:59");
}

}  // namespace
}  // namespace ampdelta

#include "ampdelta/amp/flight_sql_command.h"

#include "tests/support/test_util.h"

namespace ampdelta::amp {
namespace {

TEST(FlightSqlCommandTest, EncodesAnyPackedStatementQueryGoldenBytes) {
  // Bytes as protobuf itself serialises Any{type_url,
  // value=CommandStatementQuery{query}}: 0x0A <len> type_url 0x12 <len> (0x0A <len> sql).
  const std::string sql = "SELECT 1";
  std::string expected;
  expected += '\x0a';
  expected += static_cast<char>(kStatementQueryTypeUrl.size());
  expected += std::string(kStatementQueryTypeUrl);
  expected += '\x12';
  expected += static_cast<char>(sql.size() + 2);
  expected += '\x0a';
  expected += static_cast<char>(sql.size());
  expected += sql;
  EXPECT_EQ(EncodeStatementQueryCommand(sql), expected);
}

TEST(FlightSqlCommandTest, LongQueriesUseMultiByteVarints) {
  const std::string sql(300, 'x');
  const std::string encoded = EncodeStatementQueryCommand(sql);
  // Inner length 300 = 0xAC 0x02; outer value length 303 = 0xAF 0x02.
  const size_t value_tag = 2 + kStatementQueryTypeUrl.size();
  EXPECT_EQ(encoded[value_tag], '\x12');
  EXPECT_EQ(static_cast<uint8_t>(encoded[value_tag + 1]), 0xAF);
  EXPECT_EQ(static_cast<uint8_t>(encoded[value_tag + 2]), 0x02);
  EXPECT_EQ(encoded[value_tag + 3], '\x0a');
  EXPECT_EQ(static_cast<uint8_t>(encoded[value_tag + 4]), 0xAC);
  EXPECT_EQ(static_cast<uint8_t>(encoded[value_tag + 5]), 0x02);
  EXPECT_EQ(encoded.substr(value_tag + 6), sql);
}

}  // namespace
}  // namespace ampdelta::amp

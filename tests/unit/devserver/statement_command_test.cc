#include "ampdelta/devserver/statement_command.h"

#include "tests/support/test_util.h"

namespace ampdelta::devserver {
namespace {

std::string Field(char tag, const std::string& value) {
  // Short fields only: one-byte length.
  return std::string(1, tag) + static_cast<char>(value.size()) + value;
}

TEST(StatementCommandTest, DecodesGoldenAnyBytes) {
  const std::string sql = "SELECT * FROM d.t";
  const std::string bytes =
      Field('\x0a', std::string(kCommandStatementQueryTypeUrl)) +
      Field('\x12', Field('\x0a', sql));
  ASSERT_OK_AND_ASSIGN(std::string decoded, DecodeStatementQueryCommand(bytes));
  EXPECT_EQ(decoded, sql);
}

TEST(StatementCommandTest, SkipsUnknownFieldsSuchAsTransactionId) {
  const std::string sql = "SELECT 1";
  // transaction_id (field 2, bytes) and an unknown varint field 7.
  const std::string statement = Field('\x0a', sql) + Field('\x12', "tx") + "\x38\x01";
  const std::string bytes =
      Field('\x0a', std::string(kCommandStatementQueryTypeUrl)) + Field('\x12', statement);
  ASSERT_OK_AND_ASSIGN(std::string decoded, DecodeStatementQueryCommand(bytes));
  EXPECT_EQ(decoded, sql);
}

TEST(StatementCommandTest, RejectsOtherCommandTypes) {
  const std::string bytes =
      Field('\x0a', "type.googleapis.com/arrow.flight.protocol.sql.CommandGetTables");
  EXPECT_THAT(DecodeStatementQueryCommand(bytes),
              testing::StatusHasMessage("unsupported flight descriptor command: "
                                        "type.googleapis.com/arrow.flight.protocol.sql."
                                        "CommandGetTables"));
}

TEST(StatementCommandTest, RawSqlIsNotACommand) {
  // Amp's own docs show raw SQL as the command; the server rejects it.
  EXPECT_EQ(DecodeStatementQueryCommand("SELECT * FROM d.t").status().code(),
            arrow::StatusCode::Invalid);
}

TEST(StatementCommandTest, TruncatedBytesAreADecodeError) {
  EXPECT_THAT(DecodeStatementQueryCommand("\x0a\x50short"),
              testing::StatusHasMessage("protobuf decode error"));
}

}  // namespace
}  // namespace ampdelta::devserver

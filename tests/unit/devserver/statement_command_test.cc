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
  const std::string bytes = Field('\x0a', std::string(kCommandStatementQueryTypeUrl)) +
                            Field('\x12', Field('\x0a', sql));
  ASSERT_OK_AND_ASSIGN(std::string decoded, DecodeStatementQueryCommand(bytes));
  EXPECT_EQ(decoded, sql);
}

TEST(StatementCommandTest, SkipsUnknownFieldsSuchAsTransactionId) {
  const std::string sql = "SELECT 1";
  // transaction_id (field 2, bytes) and an unknown varint field 7.
  const std::string statement = Field('\x0a', sql) + Field('\x12', "tx") + "\x38\x01";
  const std::string bytes = Field('\x0a', std::string(kCommandStatementQueryTypeUrl)) +
                            Field('\x12', statement);
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
              testing::StatusHasMessage("ProtocolBuffers decoding error"));
}

TEST(StatementCommandTest, QueryThatIsNotUtf8IsADecodeError) {
  // A proto3 string; the text also travels on in the JSON ticket.
  const std::string bytes = Field('\x0a', std::string(kCommandStatementQueryTypeUrl)) +
                            Field('\x12', Field('\x0a', "SELECT '\xff'"));
  EXPECT_THAT(DecodeStatementQueryCommand(bytes),
              testing::StatusHasMessage(
                  "ProtocolBuffers decoding error: the query is not valid UTF-8"));
}

TEST(StatementCommandTest, TruncatedAndHugeLengthsAreDecodeErrors) {
  const std::string bytes = Field('\x0a', std::string(kCommandStatementQueryTypeUrl)) +
                            Field('\x12', Field('\x0a', "SELECT * FROM d.t"));
  for (size_t length = 0; length < bytes.size(); ++length) {
    // Cut at a field boundary, the message is well-formed but lacks the query.
    auto decoded = DecodeStatementQueryCommand(bytes.substr(0, length));
    EXPECT_TRUE(!decoded.ok() || decoded->empty()) << length;
  }
  // A length of 2^63 and a varint of eleven bytes.
  EXPECT_THAT(DecodeStatementQueryCommand("\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"),
              testing::StatusHasMessage("truncated length-delimited field"));
  EXPECT_THAT(DecodeStatementQueryCommand(std::string(11, '\xff')),
              testing::StatusHasMessage("ProtocolBuffers decoding error"));
}

}  // namespace
}  // namespace ampdelta::devserver

#include "ampdelta/devserver/ticket.h"

#include <string>

#include "tests/support/test_util.h"

namespace ampdelta::devserver {
namespace {

TEST(TicketTest, RoundTripsQueryStreamingAndCursor) {
  Ticket ticket;
  ticket.query = "SELECT * FROM \"acme/eth_mainnet\".blocks";
  ticket.streaming = true;
  ticket.cursor = R"({"mainnet":{"hash":"0xab","number":5}})";
  ASSERT_OK_AND_ASSIGN(auto bytes, EncodeTicket(ticket));
  ASSERT_OK_AND_ASSIGN(auto decoded, DecodeTicket(bytes));
  EXPECT_EQ(decoded, ticket);
  ASSERT_OK_AND_ASSIGN(auto plain, DecodeTicket(R"({"query":"SELECT 1"})"));
  EXPECT_FALSE(plain.streaming);
  EXPECT_TRUE(plain.cursor.empty());
}

// A client may send any bytes as a ticket: json::value() on them used to throw, which
// kills the server.
TEST(TicketTest, WrongTypedFieldIsAnErrorNotAnException) {
  for (const std::string bytes :
       {R"({"query":"q","stream":"yes"})", R"({"query":"q","stream":1})",
        R"({"query":"q","cursor":[]})", R"({"query":"q","cursor":"c"})", R"({"query":5})",
        R"({"stream":true})", R"([])", R"("q")", "", "{", "\xff",
        R"({"query":"\ud800"})"}) {
    EXPECT_THAT(DecodeTicket(bytes), testing::StatusHasMessage("ticket decoding error"))
        << bytes;
  }
  ASSERT_OK_AND_ASSIGN(auto nulls,
                       DecodeTicket(R"({"query":"q","stream":null,"cursor":null})"));
  EXPECT_FALSE(nulls.streaming);
}

TEST(TicketTest, EncodingAQueryThatIsNotUtf8IsAnError) {
  Ticket ticket;
  ticket.query = "SELECT '\xff'";
  EXPECT_THAT(EncodeTicket(ticket),
              testing::StatusHasMessage("is not valid UTF-8 at query"));
  ticket.query = "SELECT 1";
  ticket.cursor = "[1]";
  EXPECT_THAT(EncodeTicket(ticket), testing::StatusHasMessage("not a JSON object"));
}

}  // namespace
}  // namespace ampdelta::devserver

// DecodeLogs: evm_decode_log over a batch of logs, with Amp's rules for null topics, data
// that is not the event's encoding, indexed reference types and events without
// parameters.

#include "ampdelta/evm/event_decoder.h"

#include <optional>
#include <string>

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "ampdelta/util/hex.h"

namespace ampdelta::evm {
namespace {

std::string Word(std::string_view hex_tail) {
  return *FromHex(std::string(64 - hex_tail.size(), '0') + std::string(hex_tail));
}

struct Log {
  std::optional<std::string> topic1, topic2, topic3, data;
};

std::shared_ptr<arrow::Array> Topics(const std::vector<Log>& logs, int which) {
  arrow::FixedSizeBinaryBuilder builder(arrow::fixed_size_binary(32));
  for (const auto& log : logs) {
    const auto& topic = which == 1 ? log.topic1 : which == 2 ? log.topic2 : log.topic3;
    if (topic) {
      EXPECT_TRUE(builder.Append(*topic).ok());
    } else {
      EXPECT_TRUE(builder.AppendNull().ok());
    }
  }
  return *builder.Finish();
}

std::shared_ptr<arrow::Array> Data(const std::vector<Log>& logs) {
  arrow::BinaryBuilder builder;
  for (const auto& log : logs) {
    if (log.data) {
      EXPECT_TRUE(builder.Append(*log.data).ok());
    } else {
      EXPECT_TRUE(builder.AppendNull().ok());
    }
  }
  return *builder.Finish();
}

arrow::Result<std::shared_ptr<arrow::Array>> Decode(std::string_view signature,
                                                    const std::vector<Log>& logs) {
  ARROW_ASSIGN_OR_RAISE(auto event, ParseEventSignature(signature));
  return DecodeLogs(event, *Topics(logs, 1), *Topics(logs, 2), *Topics(logs, 3),
                    *Data(logs), arrow::default_memory_pool());
}

constexpr std::string_view kTransfer =
    "Transfer(address indexed from, address indexed to, uint256 value)";

TEST(EventDecoderTest, ATransferDecodesIntoNamedFieldsIndexedFirst) {
  auto decoded =
      Decode("Transfer(address indexed from, uint256 value, address indexed to)",
             {{Word("aa"), Word("bb"), std::nullopt, Word("64")}});
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(
      (*decoded)->type()->ToString(),
      "struct<from: fixed_size_binary[20], to: fixed_size_binary[20], value: string>");
  EXPECT_EQ((*decoded)->null_count(), 0);
  const auto& row = static_cast<const arrow::StructArray&>(**decoded);
  EXPECT_EQ(row.GetFieldByName("value")->GetScalar(0).ValueOrDie()->ToString(), "100");
  EXPECT_EQ(static_cast<const arrow::FixedSizeBinaryArray&>(*row.GetFieldByName("to"))
                .GetString(0),
            std::string(19, '\0') + "\xbb");
}

TEST(EventDecoderTest, DataThatIsNotTheEventsEncodingNullsTheBodyNotTheQuery) {
  // ERC-721's Transfer shares ERC-20's topic0 with the id in topic3 and no data.
  auto decoded = Decode(kTransfer, {{Word("aa"), Word("bb"), Word("7"), std::string()},
                                    {Word("aa"), Word("bb"), std::nullopt, std::nullopt},
                                    {Word("aa"), Word("bb"), std::nullopt, Word("5")}});
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const auto& rows = static_cast<const arrow::StructArray&>(**decoded);
  EXPECT_EQ(rows.null_count(), 0);
  const auto& value = *rows.GetFieldByName("value");
  EXPECT_TRUE(value.IsNull(0));
  EXPECT_TRUE(value.IsNull(1));
  EXPECT_EQ(value.GetScalar(2).ValueOrDie()->ToString(), "5");
  EXPECT_FALSE(rows.GetFieldByName("from")->IsNull(0));
}

TEST(EventDecoderTest, ANullTopicNullsItsParameterOnly) {
  auto decoded = Decode(kTransfer, {{std::nullopt, Word("bb"), std::nullopt, Word("1")}});
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const auto& rows = static_cast<const arrow::StructArray&>(**decoded);
  EXPECT_TRUE(rows.GetFieldByName("from")->IsNull(0));
  EXPECT_FALSE(rows.GetFieldByName("to")->IsNull(0));
}

TEST(EventDecoderTest, IndexedReferenceTypesKeepTheTopicWord) {
  const std::string hash = Word("1234");
  auto decoded = Decode("Named(string indexed name, uint160 indexed price)",
                        {{hash, Word("fffd8963efd1fc6a506488495d951d5263988d25"),
                          std::nullopt, std::string()}});
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const auto& rows = static_cast<const arrow::StructArray&>(**decoded);
  EXPECT_EQ(rows.type()->ToString(),
            "struct<name: fixed_size_binary[32], price: decimal256(76, 0)>");
  EXPECT_EQ(static_cast<const arrow::FixedSizeBinaryArray&>(*rows.field(0)).GetString(0),
            hash);
  EXPECT_EQ(rows.field(1)->GetScalar(0).ValueOrDie()->ToString(),
            "1461446703485210103287273052203988822378723970341");
}

TEST(EventDecoderTest, AnEventWithoutParametersDecodesToNulls) {
  auto decoded =
      Decode("Paused()", {{std::nullopt, std::nullopt, std::nullopt, std::string()},
                          {std::nullopt, std::nullopt, std::nullopt, std::nullopt}});
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->type_id(), arrow::Type::NA);
  EXPECT_EQ((*decoded)->length(), 2);
}

TEST(EventDecoderTest, ColumnsOfTheWrongTypeAreErrors) {
  auto event = *ParseEventSignature(kTransfer);
  auto topics = Topics({{Word("1"), Word("2"), Word("3"), Word("4")}}, 1);
  auto data = Data({{Word("1"), Word("2"), Word("3"), Word("4")}});
  EXPECT_TRUE(
      DecodeLogs(event, *data, *topics, *topics, *data, arrow::default_memory_pool())
          .status()
          .IsTypeError());
  EXPECT_TRUE(
      DecodeLogs(event, *topics, *topics, *topics, *topics, arrow::default_memory_pool())
          .status()
          .IsTypeError());
}

}  // namespace
}  // namespace ampdelta::evm

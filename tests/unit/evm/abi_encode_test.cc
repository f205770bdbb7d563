// Encoding Arrow values as Solidity ABI (evm_encode_type, evm_encode_params) with Amp's
// conversion rules; the expected bytes are those of Amp's own SQL tests
// (tests/specs/sql-tests.yaml in edgeandnode/amp) and of `cast abi-encode`.

#include "ampdelta/evm/abi_encode.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "ampdelta/evm/call_decoder.h"
#include "ampdelta/util/hex.h"
#include "tests/support/test_util.h"

namespace ampdelta::evm {
namespace {

std::string Word(std::string_view hex_tail) {
  return std::string(64 - hex_tail.size(), '0') + std::string(hex_tail);
}

arrow::Result<std::string> EncodeOne(std::string_view type_text,
                                     const std::shared_ptr<arrow::Array>& value) {
  ARROW_ASSIGN_OR_RAISE(auto type, ParseSolType(type_text));
  ARROW_ASSIGN_OR_RAISE(auto encoded,
                        EncodeValues(type, *value, arrow::default_memory_pool()));
  return ToHex(static_cast<const arrow::BinaryArray&>(*encoded).GetView(0));
}

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> One(std::shared_ptr<arrow::DataType> type, T value) {
  Builder builder(std::move(type), arrow::default_memory_pool());
  EXPECT_TRUE(builder.Append(value).ok());
  return *builder.Finish();
}

std::shared_ptr<arrow::Array> Int64s(const std::vector<int64_t>& values) {
  arrow::Int64Builder builder;
  EXPECT_TRUE(builder.AppendValues(values).ok());
  return *builder.Finish();
}

TEST(AbiEncodeTest, ValuesEncodeAsAmpsSqlTestsExpect) {
  // uint256 635 from a DECIMAL(39, 0), int256 -635 from an Int64.
  auto decimal =
      One<arrow::Decimal256Builder>(arrow::decimal256(39, 0), arrow::Decimal256(635));
  EXPECT_EQ(*EncodeOne("uint256", decimal), Word("27b"));
  EXPECT_EQ(*EncodeOne("int256", Int64s({-635})), std::string(60, 'f') + "fd85");
  // A string: its offset, its length, its bytes padded to a word.
  auto text = One<arrow::StringBuilder>(arrow::utf8(), "hello world");
  EXPECT_EQ(*EncodeOne("string", text),
            Word("20") + Word("b") + "68656c6c6f20776f726c64" + std::string(42, '0'));
  // int256[] from a list; int256[3] from a fixed-size list has no offset or length.
  arrow::ListBuilder list(arrow::default_memory_pool(),
                          std::make_shared<arrow::Int64Builder>());
  ASSERT_OK(list.Append());
  ASSERT_OK(
      static_cast<arrow::Int64Builder*>(list.value_builder())->AppendValues({1, 2, 3}));
  ASSERT_OK_AND_ASSIGN(auto items, list.Finish());
  EXPECT_EQ(*EncodeOne("int256[]", items),
            Word("20") + Word("3") + Word("1") + Word("2") + Word("3"));
  ASSERT_OK_AND_ASSIGN(auto fixed,
                       arrow::FixedSizeListArray::FromArrays(Int64s({1, 2, 3}), 3));
  EXPECT_EQ(*EncodeOne("int256[3]", fixed), Word("1") + Word("2") + Word("3"));
  // A struct as a tuple with a dynamic member.
  ASSERT_OK_AND_ASSIGN(auto record, arrow::StructArray::Make(
                                        {Int64s({1}), Int64s({2}),
                                         One<arrow::StringBuilder>(arrow::utf8(), "str")},
                                        std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(*EncodeOne("(int256,int256,string)", record),
            Word("20") + Word("1") + Word("2") + Word("60") + Word("3") + "737472" +
                std::string(58, '0'));
}

TEST(AbiEncodeTest, EachArrowTypeStandsForItsOwnSolidityTypesOnly) {
  // A SQL integer literal is Int64: Amp refuses it for uintN, and unsigned for intN.
  EXPECT_THAT(EncodeOne("uint256", Int64s({1})),
              testing::StatusHasMessage("expected int type, got uint256"));
  auto small = One<arrow::UInt8Builder>(arrow::uint8(), uint8_t{2});
  EXPECT_THAT(EncodeOne("int8", small),
              testing::StatusHasMessage("expected uint type, got int8"));
  EXPECT_THAT(EncodeOne("int8", Int64s({128})),
              testing::StatusHasMessage(
                  "cannot convert int to solidity int8: 128 not in [-128, 127]"));
  auto scaled =
      One<arrow::Decimal128Builder>(arrow::decimal128(38, 1), arrow::Decimal128(15));
  EXPECT_THAT(EncodeOne("uint128", scaled),
              testing::StatusHasMessage(
                  "Unsupported type Decimal128(38, 1) for Solidity type uint128"));
  auto negative =
      One<arrow::Decimal128Builder>(arrow::decimal128(38, 0), arrow::Decimal128(-1));
  EXPECT_THAT(EncodeOne("uint64", negative), testing::StatusHasMessage("out of range"));
  EXPECT_THAT(
      EncodeOne("uint256", One<arrow::StringBuilder>(arrow::utf8(), "str")),
      testing::StatusHasMessage("cannot convert string to solidity type uint256"));
  auto address = One<arrow::FixedSizeBinaryBuilder>(arrow::fixed_size_binary(20),
                                                    std::string(20, '\x11'));
  EXPECT_EQ(*EncodeOne("address", address), std::string(24, '0') + std::string(40, '1'));
  EXPECT_THAT(EncodeOne("bytes32", address),
              testing::StatusHasMessage("fixed size binary of size 20"));
}

TEST(AbiEncodeTest, CallsStartWithTheSelectorAndDecodeBack) {
  ASSERT_OK_AND_ASSIGN(auto empty, ParseFunctionSignature("function f()"));
  ASSERT_OK_AND_ASSIGN(auto none,
                       EncodeCalls(empty, {}, 3, arrow::default_memory_pool()));
  ASSERT_EQ(none->length(), 3);  // one per row, even without arguments
  EXPECT_EQ(ToHex(static_cast<const arrow::BinaryArray&>(*none).GetView(2)), "26121ff0");

  ASSERT_OK_AND_ASSIGN(auto transfer,
                       ParseFunctionSignature("function transfer(address to, uint256 "
                                              "value) public returns (bool success)"));
  arrow::FixedSizeBinaryBuilder to(arrow::fixed_size_binary(20));
  ASSERT_OK(to.Append(std::string(20, '\xab')));
  ASSERT_OK(to.Append(std::string(20, '\xcd')));
  arrow::Decimal256Builder value(arrow::decimal256(76, 0));
  ASSERT_OK(value.Append(arrow::Decimal256(100)));
  // The largest a Decimal256(76, 0) holds (2^256 - 1 has 78 digits).
  ASSERT_OK(value.Append(*arrow::Decimal256::FromString(std::string(76, '9'))));
  ASSERT_OK_AND_ASSIGN(auto calls, EncodeCalls(transfer, {*to.Finish(), *value.Finish()},
                                               2, arrow::default_memory_pool()));
  const auto& binary = static_cast<const arrow::BinaryArray&>(*calls);
  EXPECT_EQ(ToHex(binary.GetView(0)).substr(0, 8),
            "a9059cbb");  // transfer(address,uint256)
  ASSERT_OK_AND_ASSIGN(auto decoded,
                       DecodeCalls(transfer, *calls, arrow::default_memory_pool()));
  const auto& record = static_cast<const arrow::StructArray&>(*decoded);
  EXPECT_EQ(static_cast<const arrow::StringArray&>(*record.field(1)).GetString(1),
            std::string(76, '9'));
  EXPECT_EQ(
      static_cast<const arrow::FixedSizeBinaryArray&>(*record.field(0)).GetString(0),
      std::string(20, '\xab'));
  ASSERT_OK_AND_ASSIGN(auto wrong_count,
                       ParseFunctionSignature("function g(uint8 a, uint8 b)"));
  EXPECT_THAT(EncodeCalls(wrong_count, {Int64s({1})}, 1, arrow::default_memory_pool()),
              testing::StatusHasMessage("expected 2 arguments"));
}

TEST(CallDecoderTest, AnotherFunctionsSelectorShortOrNullDataGiveNullRows) {
  ASSERT_OK_AND_ASSIGN(auto approve,
                       ParseFunctionSignature("approve(address spender, uint256 value)"));
  arrow::BinaryBuilder data;
  const std::string args = std::string(64, '\0');
  ASSERT_OK(data.Append(*FromHex("095ea7b3") + args));  // approve's selector
  ASSERT_OK(data.Append(*FromHex("a9059cbb") + args));  // transfer's
  ASSERT_OK(data.Append(*FromHex("095ea7")));           // shorter than a selector
  ASSERT_OK(data.AppendNull());
  ASSERT_OK(data.Append(*FromHex("095ea7b3") + std::string(31, '\0')));  // truncated
  ASSERT_OK_AND_ASSIGN(auto array, data.Finish());
  ASSERT_OK_AND_ASSIGN(auto decoded,
                       DecodeCalls(approve, *array, arrow::default_memory_pool()));
  ASSERT_OK(decoded->ValidateFull());
  EXPECT_TRUE(decoded->IsValid(0));
  for (int64_t row = 1; row < 5; ++row) EXPECT_TRUE(decoded->IsNull(row)) << row;
  ASSERT_OK_AND_ASSIGN(auto unnamed, ParseFunctionSignature("f(uint8)"));
  EXPECT_THAT(FunctionParamsType(unnamed),
              testing::StatusHasMessage("function f has unnamed input parameter"));
}

TEST(CallDecoderTest, DecodeValuesReadsAbiEncodeOfOneValueAndNullsTheRest) {
  ASSERT_OK_AND_ASSIGN(auto type, ParseSolType("(int256, int8, string[])"));
  arrow::BinaryBuilder data;
  // abi.encode((-1, 100, ["a"])) as `cast abi-encode "f((int256,int8,string[]))"` writes
  // it.
  ASSERT_OK(data.Append(*FromHex(Word("20") + std::string(64, 'f') + Word("64") +
                                 Word("60") + Word("1") + Word("20") + Word("1") + "61" +
                                 std::string(62, '0'))));
  ASSERT_OK(data.Append(std::string(10, '\0')));
  ASSERT_OK(data.AppendNull());
  ASSERT_OK_AND_ASSIGN(auto array, data.Finish());
  ASSERT_OK_AND_ASSIGN(auto decoded,
                       DecodeValues(type, *array, arrow::default_memory_pool()));
  ASSERT_OK(decoded->ValidateFull());
  const auto& record = static_cast<const arrow::StructArray&>(*decoded);
  EXPECT_EQ(record.type()->field(0)->name(), "c0");
  EXPECT_EQ(static_cast<const arrow::StringArray&>(*record.field(0)).GetString(0), "-1");
  EXPECT_EQ(static_cast<const arrow::Int8Array&>(*record.field(1)).Value(0), 100);
  EXPECT_EQ(record.field(2)->ToString().find("\"a\"") != std::string::npos, true);
  EXPECT_TRUE(decoded->IsNull(1));
  EXPECT_TRUE(decoded->IsNull(2));
}

}  // namespace
}  // namespace ampdelta::evm

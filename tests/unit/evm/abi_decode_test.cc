// DecodeSequence and AppendValue: ABI encodings made by an independent encoder (Python's
// eth_abi 5, the hex below), decoded into the Arrow values Amp's functions return.

#include "ampdelta/evm/abi_decode.h"

#include <cstdio>
#include <string>

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "ampdelta/util/hex.h"

namespace ampdelta::evm {
namespace {

std::string Bytes(std::string_view hex) { return *FromHex(hex); }

std::string Word(std::string_view hex_tail) {
  return Bytes(std::string(64 - hex_tail.size(), '0') + std::string(hex_tail));
}

// Decode `data` as the types and return each value converted, printed by Arrow.
std::vector<std::string> Decoded(const std::vector<std::string>& type_texts,
                                 const std::string& data) {
  std::vector<SolType> types;
  for (const auto& text : type_texts) types.push_back(*ParseSolType(text));
  std::vector<const SolType*> pointers;
  for (const auto& type : types) pointers.push_back(&type);
  auto values = DecodeSequence(pointers, data);
  if (!values.ok()) return {"error: " + values.status().message()};
  std::vector<std::string> out;
  for (size_t i = 0; i < types.size(); ++i) {
    std::unique_ptr<arrow::ArrayBuilder> builder;
    EXPECT_TRUE(
        arrow::MakeBuilder(arrow::default_memory_pool(), *ArrowTypeOf(types[i]), &builder)
            .ok());
    EXPECT_TRUE(AppendValue(types[i], (*values)[i], builder.get()).ok());
    auto array = *builder->Finish();
    out.push_back((*array->GetScalar(0))->ToString());
  }
  return out;
}

TEST(AbiDecodeTest, UniswapV3SwapBodyWithNegativeAmountsAndWidePrices) {
  const std::string body = Bytes(
      "fffffffffffffffffffffffffffffffffffffffffffffffff21f494c589c0000"
      "000000000000000000000000000000000000000000000000000000009502f900"
      "000000000000000000000000fffd8963efd1fc6a506488495d951d5263988d25"
      "00000000000000000000000000000000ffffffffffffffffffffffffffffffff"
      "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffff27618");
  EXPECT_EQ(
      Decoded({"int256", "int256", "uint160", "uint128", "int24"}, body),
      (std::vector<std::string>{"-1000000000000000000", "2500000000",
                                "1461446703485210103287273052203988822378723970341",
                                "340282366920938463463374607431768211455", "-887272"}));
}

TEST(AbiDecodeTest, AnUnlimitedAllowanceIsTheFullUint256) {
  EXPECT_EQ(Decoded({"uint256"}, Bytes(std::string(64, 'f'))),
            (std::vector<std::string>{
                "115792089237316195423570985008687907853269984665640564039"
                "457584007913129639935"}));
  EXPECT_EQ(
      Decoded({"int256"}, Bytes("8" + std::string(63, '0'))),
      (std::vector<std::string>{"-5789604461865809771178549250434395392663499233282028201"
                                "9728792003956564819968"}));
  EXPECT_EQ(Decoded({"uint256"}, Word("0")), (std::vector<std::string>{"0"}));
  EXPECT_EQ(Decoded({"uint256"}, Word("8ac7230489e80000")),  // 10^19: a zero-padded chunk
            (std::vector<std::string>{"10000000000000000000"}));
}

TEST(AbiDecodeTest, DynamicValuesBehindOffsets) {
  const std::string data = Bytes(
      "00000000000000000000000000000000000000000000000000000000000000c0"
      "0000000000000000000000000000000000000000000000000000000000000100"
      "0000000000000000000000000000000000000000000000000000000000000180"
      "6162630000000000000000000000000000000000000000000000000000000000"
      "00000000000000000000000000000000000000000000000000000000000000ff"
      "0000000000000000000000000000000000000000000000000000000000000001"
      "000000000000000000000000000000000000000000000000000000000000000b"
      "68656c6c6f20776f726c64000000000000000000000000000000000000000000"
      "0000000000000000000000000000000000000000000000000000000000000003"
      "0000000000000000000000000000000000000000000000000000000000000001"
      "0000000000000000000000000000000000000000000000000000000000000002"
      "0000000000000000000000000000000000000000000000000000000000000003"
      "0000000000000000000000000000000000000000000000000000000000000002"
      "0102000000000000000000000000000000000000000000000000000000000000");
  EXPECT_EQ(
      Decoded({"string", "uint8[]", "bytes", "bytes3", "address", "bool"}, data),
      (std::vector<std::string>{"hello world", "list<item: uint8>[1, 2, 3]", "\x01\x02",
                                "abc", std::string(19, '\0') + "\xff", "true"}));
}

TEST(AbiDecodeTest, ATupleIsAStructOfC0C1) {
  const std::string data = Bytes(
      "0000000000000000000000000000000000000000000000000000000000000020"
      "0000000000000000000000000000000000000000000000000000000000000001"
      "0000000000000000000000000000000000000000000000000000000000000002"
      "0000000000000000000000000000000000000000000000000000000000000060"
      "0000000000000000000000000000000000000000000000000000000000000003"
      "7374720000000000000000000000000000000000000000000000000000000000");
  EXPECT_EQ(Decoded({"(int256,int64,string)"}, data),
            (std::vector<std::string>{"{c0:string = 1, c1:int64 = 2, c2:string = str}"}));
}

TEST(AbiDecodeTest, EncodingsThatPointOutsideTheDataAreErrors) {
  // Too short, an offset past the end, a length past the end, a huge length.
  EXPECT_EQ(Decoded({"uint256"}, Bytes("00ff")).size(), 1U);
  EXPECT_EQ(Decoded({"uint256"}, Bytes("00ff"))[0].rfind("error:", 0), 0U);
  EXPECT_EQ(Decoded({"string"}, Word("40"))[0].rfind("error:", 0), 0U);
  EXPECT_EQ(
      Decoded({"string"}, Word("20") + Word("21") + Word("61"))[0].rfind("error:", 0),
      0U);
  EXPECT_EQ(
      Decoded({"bytes"}, Word("20") + Bytes(std::string(64, 'f')))[0].rfind("error:", 0),
      0U);
  EXPECT_EQ(Decoded({"uint8[]"}, Word("20") + Word("7fffffff"))[0].rfind("error:", 0),
            0U);
}

TEST(AbiDecodeTest, OffsetsAliasingOneRegionCannotMultiplyIt) {
  // uint8[][] whose n items all point at one inner array of m items: n * m values from
  // n + m words. Real encodings never alias; a hostile one is refused, not expanded.
  auto hex = [](size_t value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%zx", value);
    return std::string(text);
  };
  auto aliased = [&](size_t n, size_t m) {
    std::string data = Word("20") + Word(hex(n));
    for (size_t i = 0; i < n; ++i) data += Word(hex(32 * n));
    data += Word(hex(m));
    for (size_t i = 0; i < m; ++i) data += Word("1");
    return data;
  };
  EXPECT_EQ(
      Decoded({"uint8[][]"}, aliased(3, 2)),
      (std::vector<std::string>{"list<item: list<item: uint8>>[list<item: uint8>[1, 1], "
                                "list<item: uint8>[1, 1], list<item: uint8>[1, 1]]"}));
  EXPECT_EQ(Decoded({"uint8[][]"}, aliased(300, 300))[0].rfind("error:", 0), 0U);
  // bytes[] whose items all point at one large blob: copying it once per item would grow
  // the decode quadratically, so the bytes copied count against the budget too.
  std::string blob = Word(hex(128 * 1024)) + std::string(2 * 128 * 1024, '0');
  std::string many = Word("20") + Word(hex(4000));
  for (size_t i = 0; i < 4000; ++i) many += Word(hex(32 * 4000));
  EXPECT_EQ(Decoded({"bytes[]"}, many + blob)[0].rfind("error:", 0), 0U);
  // An array claiming more items than the data has words is refused before any is read.
  EXPECT_EQ(
      Decoded({"uint8[]"}, Word("20") + Word("3") + Word("1"))[0].rfind("error:", 0), 0U);
}

TEST(AbiDecodeTest, InvalidUtf8InAStringBecomesReplacementCharacters) {
  const std::string data =
      Word("20") + Word("3") + Bytes("61ff62" + std::string(58, '0'));
  EXPECT_EQ(Decoded({"string"}, data), (std::vector<std::string>{"a\xEF\xBF\xBD"
                                                                 "b"}));
}

TEST(AbiDecodeTest, NarrowIntegersTakeTheirLowBytesAsAmpsVectorizedDecoderDoes) {
  EXPECT_EQ(Decoded({"uint8"}, Word("1ff")), (std::vector<std::string>{"255"}));
  EXPECT_EQ(Decoded({"int8"}, Bytes(std::string(64, 'f'))),
            (std::vector<std::string>{"-1"}));
  EXPECT_EQ(Decoded({"bool"}, Word("100")), (std::vector<std::string>{"false"}));
}

TEST(AbiDecodeTest, DirtyHighBitsOfWideIntegersAreCutSoEveryDecimalFitsItsPrecision) {
  // A uint160 word of all ones is 2^160 - 1, not a 78-digit number Decimal256(76) cannot
  // hold.
  EXPECT_EQ(
      Decoded({"uint160"}, Bytes(std::string(64, 'f'))),
      (std::vector<std::string>{"1461501637330902918203684832716283019655932542975"}));
  EXPECT_EQ(Decoded({"int120"}, Bytes("7f" + std::string(62, 'f'))),
            (std::vector<std::string>{"-1"}));
  EXPECT_EQ(Decoded({"uint72"}, Bytes(std::string(46, 'f') + "0100000000000000ff")),
            (std::vector<std::string>{"18446744073709551871"}));
  EXPECT_EQ(Decoded({"int24"}, Word("ff800000")), (std::vector<std::string>{"-8388608"}));
}

}  // namespace
}  // namespace ampdelta::evm

// ParseSolType and ArrowTypeOf: Solidity types as Amp's EVM functions read and convert
// them (crates/core/common/src/udfs/evm_common.rs, sol_to_arrow_type).

#include "ampdelta/evm/sol_type.h"

#include <string>

#include <arrow/type.h>
#include <gtest/gtest.h>

#include "ampdelta/evm/signature.h"
#include "tests/support/test_util.h"

namespace ampdelta::evm {
namespace {

std::string ArrowOf(std::string_view text) {
  auto type = ParseSolType(text);
  if (!type.ok()) return "parse error: " + type.status().message();
  auto arrow_type = ArrowTypeOf(*type);
  if (!arrow_type.ok()) return "arrow error: " + arrow_type.status().message();
  return (*arrow_type)->ToString();
}

TEST(SolTypeTest, CanonicalTextDropsSpacesNamesAndSpellsOutUint) {
  EXPECT_EQ(ParseSolType("uint")->Canonical(), "uint256");
  EXPECT_EQ(ParseSolType("int")->Canonical(), "int256");
  EXPECT_EQ(ParseSolType(" ( uint256 amount , address[] to ) [2] ")->Canonical(),
            "(uint256,address[])[2]");
  EXPECT_EQ(ParseSolType("tuple(bool,bytes32)[]")->Canonical(), "(bool,bytes32)[]");
}

TEST(SolTypeTest, IntegersMapByWidthAsAmpMapsThem) {
  EXPECT_EQ(ArrowOf("uint8"), "uint8");
  EXPECT_EQ(ArrowOf("int16"), "int16");
  EXPECT_EQ(ArrowOf("int24"), "int32");
  EXPECT_EQ(ArrowOf("uint64"), "uint64");
  EXPECT_EQ(ArrowOf("uint72"), "decimal128(38, 0)");
  EXPECT_EQ(ArrowOf("int120"), "decimal128(38, 0)");
  // 128 bits need more than Decimal128's 125: uint128 and uint160 are Decimal256.
  EXPECT_EQ(ArrowOf("uint128"), "decimal256(76, 0)");
  EXPECT_EQ(ArrowOf("uint160"), "decimal256(76, 0)");
  EXPECT_EQ(ArrowOf("int248"), "decimal256(76, 0)");
  EXPECT_EQ(ArrowOf("uint256"), "string");
  EXPECT_EQ(ArrowOf("int"), "string");
}

TEST(SolTypeTest, OtherTypesMapToBinaryStringsListsAndStructs) {
  EXPECT_EQ(ArrowOf("address"), "fixed_size_binary[20]");
  EXPECT_EQ(ArrowOf("bytes4"), "fixed_size_binary[4]");
  EXPECT_EQ(ArrowOf("bytes"), "binary");
  EXPECT_EQ(ArrowOf("string"), "string");
  EXPECT_EQ(ArrowOf("bool"), "bool");
  EXPECT_EQ(ArrowOf("uint32[]"), "list<item: uint32>");
  EXPECT_EQ(ArrowOf("int64[3]"), "fixed_size_list<item: int64>[3]");
  EXPECT_EQ(ArrowOf("(uint256 a, string b)"), "struct<c0: string, c1: string>");
  EXPECT_EQ(ArrowOf("function"),
            "arrow error: cannot convert solidity type function to arrow data type");
}

TEST(SolTypeTest, IndexedReferenceTypesAreTheirTopicWord) {
  for (const char* text :
       {"string", "bytes", "uint256[]", "address[2]", "(uint8,bool)"}) {
    EXPECT_EQ((*IndexedArrowTypeOf(*ParseSolType(text)))->ToString(),
              "fixed_size_binary[32]")
        << text;
  }
  EXPECT_EQ((*IndexedArrowTypeOf(*ParseSolType("uint160")))->ToString(),
            "decimal256(76, 0)");
}

TEST(SolTypeTest, MalformedTypesAreErrorsNamingWhatIsWrong) {
  for (const char* text : {"", "uint7", "uint264", "int0", "bytes33", "bytes0", "uint08",
                           "foo", "uint256[", "uint256[x]", "uint256[0]", "(uint256",
                           "(uint256,)", "uint256 extra", "uint256[][99999999]"}) {
    auto type = ParseSolType(text);
    EXPECT_FALSE(type.ok()) << "'" << text << "' parsed as " << type->Canonical();
  }
  EXPECT_NE(ParseSolType("uint7").status().message().find("invalid integer size 7"),
            std::string::npos);
}

TEST(SolTypeTest, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = std::string(10000, '(') + "uint8" + std::string(10000, ')');
  EXPECT_FALSE(ParseSolType(deep).ok());
  const std::string arrays = "uint8" + std::string(50, '[');
  EXPECT_FALSE(ParseSolType(arrays).ok());
  // Array dimensions count as nesting: 8000 of them would overflow the stack downstream.
  std::string dimensions = "uint8";
  for (int i = 0; i < 8000; ++i) dimensions += "[]";
  EXPECT_THAT(ParseSolType(dimensions), testing::StatusHasMessage("nested too deeply"));
  std::string thirty = "uint8";
  for (int i = 0; i < 30; ++i) thirty += "[]";
  EXPECT_TRUE(ParseSolType(thirty).ok());
}

TEST(SolTypeTest, FixedArraysHoldingTooManyValuesInPlaceAreRefused) {
  // A value that does not decode is filled with nulls in place: 2^48 of them for this.
  EXPECT_THAT(ParseSolType("uint8[65536][65536][65536]"),
              testing::StatusHasMessage("holds more than 65536 values"));
  EXPECT_THAT(ParseSolType("(uint8[300],uint8[300])[200]"),
              testing::StatusHasMessage("holds more than 65536 values"));
  EXPECT_TRUE(ParseSolType("uint8[65535]").ok());
  EXPECT_TRUE(ParseSolType("uint8[100][100]").ok());
  // Dynamic arrays hold their items behind an offset: bounded by the data instead.
  EXPECT_TRUE(ParseSolType("uint8[60000][]").ok());
  EXPECT_THAT(ParseEventSignature("E(uint8 indexed indexed a)"),
              testing::StatusHasMessage("'indexed' twice"));
}

TEST(SolTypeTest, DynamicTypesAreThoseBehindAnOffset) {
  EXPECT_FALSE(ParseSolType("(uint256,address)[2]")->IsDynamic());
  EXPECT_EQ(ParseSolType("(uint256,address)[2]")->HeadSize(), 128U);
  EXPECT_TRUE(ParseSolType("string[2]")->IsDynamic());
  EXPECT_TRUE(ParseSolType("(uint8,bytes)")->IsDynamic());
  EXPECT_EQ(ParseSolType("(uint8,bytes)")->HeadSize(), 32U);
}

}  // namespace
}  // namespace ampdelta::evm

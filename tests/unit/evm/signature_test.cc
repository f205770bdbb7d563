// ParseEventSignature / ParseFunctionSignature: the signatures Amp's evm_decode_log,
// evm_topic and evm_decode_params take, and the hashes that identify them on chain.

#include "ampdelta/evm/signature.h"

#include <string>

#include <gtest/gtest.h>

#include "ampdelta/util/hex.h"

namespace ampdelta::evm {
namespace {

template <size_t N>
std::string Hex(const std::array<uint8_t, N>& bytes) {
  return ToHex(std::string_view(reinterpret_cast<const char*>(bytes.data()), N));
}

TEST(EventSignatureTest, TopicZeroIsTheKeccakOfTheCanonicalSignature) {
  auto transfer = ParseEventSignature(
      "Transfer(address indexed from, address indexed to, uint256 value)");
  ASSERT_TRUE(transfer.ok()) << transfer.status();
  EXPECT_EQ(transfer->Canonical(), "Transfer(address,address,uint256)");
  EXPECT_EQ(Hex(transfer->Topic0()),
            "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
  auto swap = ParseEventSignature(
      "event Swap(address indexed sender, address indexed recipient, int256 amount0, "
      "int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)");
  ASSERT_TRUE(swap.ok()) << swap.status();
  EXPECT_EQ(Hex(swap->Topic0()),
            "c42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67");
}

TEST(EventSignatureTest, ParametersKeepNamesOrderAndWhetherIndexed) {
  auto event =
      ParseEventSignature("Mixed(uint a, string indexed b, bytes, bool indexed)");
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_EQ(event->params.size(), 4U);
  EXPECT_EQ(event->params[0].name, "a");
  EXPECT_FALSE(event->params[0].indexed);
  EXPECT_TRUE(event->params[1].indexed);
  EXPECT_EQ(event->params[2].name, "");
  EXPECT_EQ(event->params[3].name, "");
  EXPECT_TRUE(event->params[3].indexed);
  EXPECT_EQ(event->Canonical(), "Mixed(uint256,string,bytes,bool)");
  EXPECT_EQ(event->Indexed().size(), 2U);
  EXPECT_EQ(event->Body().size(), 2U);
  EXPECT_TRUE(ParseEventSignature("Log(uint256) anonymous")->anonymous);
}

TEST(EventSignatureTest, MoreThanThreeIndexedParametersAreRefusedAsAmpRefusesThem) {
  auto event = ParseEventSignature(
      "E(uint8 indexed a, uint8 indexed b, uint8 indexed c, uint8 indexed d)");
  ASSERT_FALSE(event.ok());
  EXPECT_EQ(event.status().message(),
            "event can only have 3 indexed parameters but has 4");
}

TEST(EventSignatureTest, MalformedSignaturesAreErrors) {
  for (const char* text :
       {"", "Transfer", "Transfer(", "(uint256)", "Transfer(uint7)",
        "Transfer(address) extra", "Transfer(address indexed indexed x y)"}) {
    EXPECT_FALSE(ParseEventSignature(text).ok()) << text;
  }
}

TEST(FunctionSignatureTest, SelectorsAndModifiersAsSolidityWritesThem) {
  auto approve =
      ParseFunctionSignature("function approve(address _spender, uint256 _value)");
  ASSERT_TRUE(approve.ok()) << approve.status();
  EXPECT_EQ(Hex(approve->Selector()), "095ea7b3");
  auto transfer = ParseFunctionSignature(
      "function transfer(address _to, uint256 _value) public returns (bool success)");
  ASSERT_TRUE(transfer.ok()) << transfer.status();
  EXPECT_EQ(Hex(transfer->Selector()), "a9059cbb");
  ASSERT_EQ(transfer->outputs.size(), 1U);
  EXPECT_EQ(Hex(ParseFunctionSignature("f()")->Selector()), "26121ff0");
  auto memory =
      ParseFunctionSignature("g(string memory s, bytes calldata b) external view");
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->inputs[0].name, "s");
  EXPECT_EQ(memory->Canonical(), "g(string,bytes)");
  EXPECT_FALSE(ParseFunctionSignature("f(uint256 indexed x)").ok());
  EXPECT_FALSE(ParseFunctionSignature("f() sideways").ok());
}

}  // namespace
}  // namespace ampdelta::evm

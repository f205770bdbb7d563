// Keccak256: Ethereum's Keccak-256 (not SHA3-256), checked against well-known topics and
// against pycryptodome's Crypto.Hash.keccak around the 136-byte rate.

#include "ampdelta/util/keccak.h"

#include <string>

#include <gtest/gtest.h>

#include "ampdelta/util/hex.h"

namespace ampdelta {
namespace {

std::string KeccakHex(std::string_view data) {
  const auto digest = Keccak256(data);
  return ToHex(
      std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

TEST(KeccakTest, TheEmptyInputHasEthereumsEmptyHashNotSha3s) {
  EXPECT_EQ(KeccakHex(""),
            "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
}

TEST(KeccakTest, EventSignaturesHashToTheirWellKnownTopics) {
  EXPECT_EQ(KeccakHex("Transfer(address,address,uint256)"),
            "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
  EXPECT_EQ(KeccakHex("Swap(address,address,int256,int256,uint160,uint128,int24)"),
            "c42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67");
  EXPECT_EQ(KeccakHex("transfer(address,uint256)").substr(0, 8), "a9059cbb");
}

TEST(KeccakTest, InputsAroundTheRateBoundaryPadCorrectly) {
  // 135, 136 and 137 bytes: the padding shares the last byte, fills a block, or spills.
  EXPECT_EQ(KeccakHex(std::string(135, 'a')),
            "34367dc248bbd832f4e3e69dfaac2f92638bd0bbd18f2912ba4ef454919cf446");
  EXPECT_EQ(KeccakHex(std::string(136, 'a')),
            "a6c4d403279fe3e0af03729caada8374b5ca54d8065329a3ebcaeb4b60aa386e");
  EXPECT_EQ(KeccakHex(std::string(137, 'a')),
            "d869f639c7046b4929fc92a4d988a8b22c55fbadb802c0c66ebcd484f1915f39");
  EXPECT_EQ(KeccakHex(std::string(272, 'a')),  // two whole blocks, then padding alone
            "cf7fcd4f705ee749930d19ca84561a9bf62516bd90a471545fa2f49fdc7e63c8");
}

}  // namespace
}  // namespace ampdelta

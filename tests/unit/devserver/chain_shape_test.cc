#include "ampdelta/devserver/chain_shape.h"

#include <array>
#include <cstring>
#include <map>

#include <gtest/gtest.h>

namespace ampdelta::devserver {
namespace {

TEST(ChainShapeTest, LogUniformStaysWithinItsBoundsAndSpreadsOverMagnitudes) {
  ChainRng rng(7);
  std::map<int, int> by_digits;
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t v = rng.LogUniform(1, 1'000'000);
    ASSERT_GE(v, 1u);
    ASSERT_LE(v, 1'000'000u);
    ++by_digits[static_cast<int>(std::to_string(v).size())];
  }
  // Each of the six orders of magnitude gets roughly a sixth of the draws.
  for (int digits = 1; digits <= 6; ++digits) {
    EXPECT_GT(by_digits[digits], 100'000 / 6 / 2) << digits;
    EXPECT_LT(by_digits[digits], 100'000 / 6 * 2) << digits;
  }
  EXPECT_EQ(rng.LogUniform(5, 5), 5u);
  EXPECT_EQ(rng.LogUniform(9, 3), 9u);
}

TEST(ChainShapeTest, PopularRanksAreHeadHeavy) {
  ChainRng rng(11);
  std::array<int, 1000> hits{};
  for (int i = 0; i < 100'000; ++i) ++hits.at(rng.PopularRank(1000));
  // Rank 0 takes about a tenth of all draws (log 2 / log 1001), rank 999 almost none.
  EXPECT_GT(hits[0], 8'000);
  EXPECT_LT(hits[0], 12'000);
  EXPECT_GT(hits[0], hits[10] * 5);
  EXPECT_LT(hits[999], 100);
}

TEST(ChainShapeTest, PoolValuesAreFixedPerRankAndTransferIsTheFirstEvent) {
  uint8_t a[20];
  uint8_t b[20];
  PoolAddress(ChainPool::kTokens, 3, a);
  PoolAddress(ChainPool::kTokens, 3, b);
  EXPECT_EQ(std::memcmp(a, b, sizeof(a)), 0);
  PoolAddress(ChainPool::kHolders, 3, b);
  EXPECT_NE(std::memcmp(a, b, sizeof(a)), 0);
  uint8_t topic[32];
  PoolEventSignature(0, topic);
  EXPECT_EQ(topic[0], 0xdd);
  EXPECT_EQ(topic[31], 0xef);
}

TEST(ChainShapeTest, AbiWordsAreMostlyZeroBytesLikeRealCalldata) {
  ChainRng rng(3);
  uint8_t word[32];
  int zeros = 0;
  constexpr int kWords = 20'000;
  for (int i = 0; i < kWords; ++i) {
    DrawAbiWord(&rng, word);
    for (uint8_t byte : word) zeros += byte == 0;
  }
  // Mainnet calldata words are about three quarters zero bytes.
  const double share = static_cast<double>(zeros) / (32.0 * kWords);
  EXPECT_GT(share, 0.6);
  EXPECT_LT(share, 0.9);
}

TEST(ChainShapeTest, CalldataStartsWithASelectorAndHoldsWholeWords) {
  ChainRng rng(5);
  std::array<uint8_t, 4 + 32 * 10> input{};
  for (int i = 0; i < 1000; ++i) {
    const size_t size = DrawCalldata(&rng, 10, input.data());
    ASSERT_GE(size, 4u + 32u);
    ASSERT_LE(size, input.size());
    EXPECT_EQ((size - 4) % 32, 0u);
  }
}

}  // namespace
}  // namespace ampdelta::devserver

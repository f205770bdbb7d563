#include "ampdelta/devserver/chain_shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ampdelta::devserver {
namespace {

constexpr int64_t kGwei = 1'000'000'000;
constexpr uint64_t kPopularAmounts = 100;
constexpr uint64_t kPopularCalls = 101;

// keccak256("Transfer(address,address,uint256)"): the most common event on every EVM
// chain.
constexpr uint8_t kTransferTopic[32] = {0xdd, 0xf2, 0x52, 0xad, 0x1b, 0xe2, 0xc8, 0x9b,
                                        0x69, 0xc2, 0xb0, 0x68, 0xfc, 0x37, 0x8d, 0xaa,
                                        0x95, 0x2b, 0xa7, 0xf1, 0x63, 0xc4, 0xa1, 0x16,
                                        0x28, 0xf5, 0x5a, 0x4d, 0xf5, 0x23, 0xb3, 0xef};

void PoolBytes(uint64_t pool, uint64_t rank, uint8_t* out, size_t size) {
  ChainRng(ChainRng::Mix(pool * ChainRng::kGolden) ^ ChainRng::Mix(rank + 1))
      .Fill(out, size);
}

}  // namespace

uint64_t ChainRng::Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t ChainRng::Next() {
  state_ += ChainRng::kGolden;
  return Mix(state_);
}

void ChainRng::Fill(uint8_t* out, size_t size) {
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t word = Next();
    std::memcpy(out + i, &word, std::min<size_t>(8, size - i));
  }
}

uint64_t ChainRng::LogUniform(uint64_t low, uint64_t high) {
  if (high <= low) return low;
  const double u = static_cast<double>(Next() >> 11) * 0x1.0p-53;
  const double span = std::log(static_cast<double>(high - low + 1));
  const auto offset = static_cast<uint64_t>(std::exp(u * span)) - 1;
  return low + std::min(offset, high - low);
}

uint64_t ChainRng::PopularRank(uint64_t n) { return LogUniform(0, n - 1); }

void PoolAddress(ChainPool pool, uint64_t rank, uint8_t* out) {
  PoolBytes(static_cast<uint64_t>(pool), rank, out, 20);
}

void PoolSelector(uint64_t rank, uint8_t* out) {
  PoolBytes(static_cast<uint64_t>(ChainPool::kSelectors), rank, out, 4);
}

void PoolEventSignature(uint64_t rank, uint8_t* out) {
  if (rank == 0) {
    std::memcpy(out, kTransferTopic, sizeof(kTransferTopic));
    return;
  }
  PoolBytes(static_cast<uint64_t>(ChainPool::kEvents), rank, out, 32);
}

int EventTopicCount(uint64_t rank, ChainRng* rng) {
  if (rank == 0) return 3;  // Transfer(from indexed, to indexed, value)
  const uint64_t pick = rng->Below(10);
  return pick < 1 ? 1 : (pick < 3 ? 2 : (pick < 6 ? 3 : 4));
}

void DrawAddress(ChainRng* rng, ChainPool pool, uint64_t pool_size,
                 uint64_t popular_per_mille, uint8_t* out) {
  if (rng->Chance(popular_per_mille)) {
    PoolAddress(pool, rng->PopularRank(pool_size), out);
  } else {
    rng->Fill(out, 20);
  }
}

void DrawAmountWord(ChainRng* rng, uint8_t* out) {
  std::memset(out, 0, 32);
  if (rng->Chance(300)) {
    PoolBytes(kPopularAmounts, rng->PopularRank(64), out + 24, 8);
    return;
  }
  const size_t significant = static_cast<size_t>(rng->LogUniform(1, 10));
  rng->Fill(out + 32 - significant, significant);
}

void DrawAbiWord(ChainRng* rng, uint8_t* out) {
  const uint64_t pick = rng->Below(100);
  if (pick < 32) {
    std::memset(out, 0, 12);
    DrawAddress(rng, ChainPool::kHolders, 2'000, 750, out + 12);
  } else if (pick < 72) {
    DrawAmountWord(rng, out);
  } else if (pick < 97) {
    std::memset(out, 0, 32);
    if (rng->Below(2) == 0) out[31] = static_cast<uint8_t>(rng->Below(256));
  } else {
    rng->Fill(out, 32);
  }
}

uint32_t DrawWordCount(ChainRng* rng, uint32_t max_words) {
  const uint64_t pick = rng->Below(100);
  uint64_t words;
  if (pick < 12) {
    words = 1;
  } else if (pick < 55) {
    words = 2;
  } else if (pick < 68) {
    words = 3;
  } else {
    words = rng->LogUniform(4, max_words);
  }
  return static_cast<uint32_t>(std::min<uint64_t>(words, max_words));
}

size_t DrawCalldata(ChainRng* rng, uint32_t max_words, uint8_t* out) {
  if (max_words >= 2 && rng->Chance(200)) {
    const uint64_t call = rng->PopularRank(100);
    ChainRng repeat(ChainRng::Mix(kPopularCalls * ChainRng::kGolden) ^
                    ChainRng::Mix(call + 1));
    PoolSelector(call % 8, out);
    DrawAbiWord(&repeat, out + 4);
    DrawAbiWord(&repeat, out + 36);
    return 68;
  }
  PoolSelector(rng->PopularRank(500), out);
  const uint32_t words = DrawWordCount(rng, max_words);
  for (uint32_t w = 0; w < words; ++w) DrawAbiWord(rng, out + 4 + 32 * w);
  return 4 + 32 * static_cast<size_t>(words);
}

std::string DrawWeiValue(ChainRng* rng) {
  if (rng->Below(2) == 0) {
    // A round figure: one to three significant digits, 10^12 to 10^19 wei. The others are
    // 10^12 plus a heavy-tailed offset: mostly 13 digits, some up to 20.
    std::string value = std::to_string(1 + rng->Below(rng->Chance(500) ? 9 : 999));
    value.append(12 + rng->Below(6), '0');
    return value;
  }
  return std::to_string(
      rng->LogUniform(1'000'000'000'000ULL, 10'000'000'000'000'000'000ULL));
}

int64_t DrawFee(ChainRng* rng, int64_t gwei_low, int64_t gwei_high,
                uint64_t round_per_mille) {
  const int64_t span = std::max<int64_t>(gwei_high - gwei_low, 1);
  if (rng->Chance(round_per_mille)) {
    // Wallet defaults: whole or half gwei.
    return gwei_low * kGwei +
           static_cast<int64_t>(rng->Below(static_cast<uint64_t>(span) * 2)) *
               (kGwei / 2);
  }
  return gwei_low * kGwei +
         static_cast<int64_t>(rng->Below(static_cast<uint64_t>(span * kGwei)));
}

}  // namespace ampdelta::devserver

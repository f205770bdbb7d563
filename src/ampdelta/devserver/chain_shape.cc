#include "ampdelta/devserver/chain_shape.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "ampdelta/evm/signature.h"

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

// Ranks of the catalogued events (ChainEvents()).
enum EventRank : uint64_t {
  kErc20Transfer = 0,
  kApproval = 1,
  kSync = 2,
  kSwapV2 = 3,
  kSwapV3 = 4,
  kDeposit = 5,
  kWithdrawal = 6,
  kErc721Transfer = 7,
  kCatalogued = 8,
};

constexpr size_t kWord = 32;

void DrawHolderTopic(ChainRng* rng, uint8_t* out) {
  std::memset(out, 0, 12);
  DrawAddress(rng, ChainPool::kHolders, 800, 900, out + 12);
}

// A word of `low`..`high` significant random bytes, left-padded.
void DrawWideWord(ChainRng* rng, uint64_t low, uint64_t high, uint8_t* out) {
  std::memset(out, 0, kWord);
  const auto significant = static_cast<size_t>(rng->LogUniform(low, high));
  rng->Fill(out + kWord - significant, significant);
}

// Two's complement negation of a 32-byte word, in place.
void Negate(uint8_t* word) {
  bool carry = true;
  for (size_t i = kWord; i-- > 0;) {
    word[i] = static_cast<uint8_t>(~word[i]);
    if (carry) carry = ++word[i] == 0;
  }
}

void SignedWord(int64_t value, uint8_t* out) {
  std::memset(out, value < 0 ? 0xff : 0, kWord);
  for (size_t i = 0; i < 8; ++i) {
    out[kWord - 1 - i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
  }
}

const uint8_t* CataloguedTopic0(uint64_t rank) {
  static const std::vector<std::array<uint8_t, 32>> topics = [] {
    std::vector<std::array<uint8_t, 32>> out;
    for (const auto& event : ChainEvents()) {
      out.push_back(evm::ParseEventSignature(event.signature).ValueOrDie().Topic0());
    }
    return out;
  }();
  return topics[rank].data();
}

// The topics after topic0 and the data of a catalogued event's log.
size_t DrawCataloguedLog(uint64_t rank, ChainRng* rng, DrawnLog* log, uint8_t* data) {
  auto topic = [&](int t) { return log->topic[t]; };
  switch (rank) {
    case kApproval:
      log->topics = 3;
      DrawHolderTopic(rng, topic(1));
      DrawHolderTopic(rng, topic(2));
      if (rng->Chance(400)) {  // an unlimited allowance: 2^256 - 1
        std::memset(data, 0xff, kWord);
      } else {
        DrawAmountWord(rng, data);
      }
      return kWord;
    case kSync:
      log->topics = 1;
      DrawAmountWord(rng, data);  // reserves: uint112, at most 10 significant bytes
      DrawAmountWord(rng, data + kWord);
      return 2 * kWord;
    case kSwapV2: {
      log->topics = 3;
      std::memset(topic(1), 0, 12);
      DrawAddress(rng, ChainPool::kContracts, 50, 900, topic(1) + 12);  // a router
      DrawHolderTopic(rng, topic(2));
      std::memset(data, 0, 4 * kWord);
      const bool zero_for_one = rng->Below(2) == 0;  // amount0In and amount1Out
      DrawAmountWord(rng, data + (zero_for_one ? 0 : 1) * kWord);
      DrawAmountWord(rng, data + (zero_for_one ? 3 : 2) * kWord);
      return 4 * kWord;
    }
    case kSwapV3: {
      log->topics = 3;
      std::memset(topic(1), 0, 12);
      DrawAddress(rng, ChainPool::kContracts, 50, 900, topic(1) + 12);
      DrawHolderTopic(rng, topic(2));
      // One amount flows in (positive), the other out (negative): int256.
      const bool zero_for_one = rng->Below(2) == 0;
      DrawAmountWord(rng, data);
      DrawAmountWord(rng, data + kWord);
      Negate(data + (zero_for_one ? 1 : 0) * kWord);
      DrawWideWord(rng, 8, 20, data + 2 * kWord);  // sqrtPriceX96: uint160
      DrawWideWord(rng, 6, 16, data + 3 * kWord);  // liquidity: uint128
      constexpr int64_t kMaxTick = 887272;
      SignedWord(static_cast<int64_t>(rng->Below(2 * kMaxTick + 1)) - kMaxTick,
                 data + 4 * kWord);  // tick: int24
      return 5 * kWord;
    }
    case kDeposit:
    case kWithdrawal:
      log->topics = 2;
      DrawHolderTopic(rng, topic(1));
      DrawAmountWord(rng, data);
      return kWord;
    case kErc721Transfer:
      log->topics = 4;
      if (rng->Chance(200)) {  // a mint: from the zero address
        std::memset(topic(1), 0, kWord);
      } else {
        DrawHolderTopic(rng, topic(1));
      }
      DrawHolderTopic(rng, topic(2));
      std::memset(topic(3), 0, kWord);
      rng->Fill(topic(3) + kWord - 3, 3);  // tokenId
      return 0;
    default:
      return 0;
  }
}

}  // namespace

const std::vector<ChainEvent>& ChainEvents() {
  static const std::vector<ChainEvent> events = {
      {"Transfer(address indexed from, address indexed to, uint256 value)",
       kErc20Transfer},
      {"Approval(address indexed owner, address indexed spender, uint256 value)",
       kApproval},
      {"Sync(uint112 reserve0, uint112 reserve1)", kSync},
      {"Swap(address indexed sender, uint256 amount0In, uint256 amount1In, uint256 "
       "amount0Out, uint256 amount1Out, address indexed to)",
       kSwapV2},
      {"Swap(address indexed sender, address indexed recipient, int256 amount0, int256 "
       "amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)",
       kSwapV3},
      {"Deposit(address indexed dst, uint256 wad)", kDeposit},
      {"Withdrawal(address indexed src, uint256 wad)", kWithdrawal},
      {"Transfer(address indexed from, address indexed to, uint256 indexed tokenId)",
       kErc721Transfer},
  };
  return events;
}

void DrawLog(uint64_t rank, ChainRng* rng, uint32_t max_words, DrawnLog* log,
             uint8_t* data) {
  const bool anonymous = rng->Chance(5);
  if (rank != kErc20Transfer && rank < kCatalogued) {
    std::memcpy(log->topic[0], CataloguedTopic0(rank), kWord);
    log->data_size = DrawCataloguedLog(rank, rng, log, data);
    if (anonymous) log->topics = 0;
    return;
  }
  log->topics = anonymous ? 0 : EventTopicCount(rank, rng);
  for (int t = 0; t < log->topics; ++t) {
    uint8_t* bytes = log->topic[t];
    if (t == 0) {
      PoolEventSignature(rank, bytes);
    } else if (rng->Chance(t == 3 ? 300 : 950)) {  // an indexed address, left-padded
      std::memset(bytes, 0, 12);
      DrawAddress(rng, ChainPool::kHolders, 800, 900, bytes + 12);
    } else {  // an indexed number: a token id, a pool tick
      std::memset(bytes, 0, 29);
      rng->Fill(bytes + 29, 3);
    }
  }
  if (rank == kErc20Transfer) {  // Transfer's amount
    DrawAmountWord(rng, data);
    log->data_size = kWord;
    return;
  }
  const uint32_t words = rng->Chance(300) ? 0 : DrawWordCount(rng, max_words);
  for (uint32_t w = 0; w < words; ++w) DrawAbiWord(rng, data + kWord * w);
  log->data_size = kWord * words;
}

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

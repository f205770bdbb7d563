#pragma once

/// \file chain_shape.h
/// \brief The value distributions of the synthetic chain, calibrated against Parquet
/// written by real Amp servers (`../shared/fixtures/amp-snapshots`,
/// `bench/chain_stats.py`).
///
/// Random bytes would make every column incompressible, which flatters a writer that
/// skips compression and dictionaries for them. Real chains are lopsided: a few
/// contracts, tokens, selectors and event signatures take most of the traffic; calldata
/// and log data are 32-byte words that are mostly zero (addresses and amounts
/// left-padded); nonces, gas and amounts have heavy-tailed magnitudes and round figures.
/// Each function draws one such value from a deterministic stream.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ampdelta::devserver {

/// \brief A SplitMix64 stream: fast, deterministic, and independent per seed.
class ChainRng {
 public:
  /// 2^64 / the golden ratio: SplitMix64's increment, and how seeds are spread.
  static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

  explicit ChainRng(uint64_t state) : state_(state) {}
  static uint64_t Mix(uint64_t z);
  uint64_t Next();
  /// \brief Return a value in [0, bound); bound must be positive.
  uint64_t Below(uint64_t bound) { return Next() % bound; }
  /// \brief Return true with probability `per_mille` / 1000.
  bool Chance(uint64_t per_mille) { return Below(1000) < per_mille; }
  /// \brief Return a value in [0, n) where rank k has probability about proportional to
  /// 1 / (k + 1): log-uniform, the shape of address and selector popularity.
  uint64_t PopularRank(uint64_t n);
  /// \brief Return low plus an offset in [0, high - low] spread evenly over orders of
  /// magnitude: for low > 0 most values lie just above low, with a long tail to high.
  uint64_t LogUniform(uint64_t low, uint64_t high);
  void Fill(uint8_t* out, size_t size);

 private:
  uint64_t state_;
};

/// \brief Pools of popular values; each rank of a pool is one fixed value.
enum class ChainPool : uint64_t {
  kContracts = 1,  // transaction `to`
  kSenders = 2,    // transaction `from` (exchanges, bots)
  kSelectors = 3,  // 4-byte function selectors
  kTokens = 4,     // log `address`
  kEvents = 5,     // log topic0
  kHolders = 6,    // addresses in topics and calldata
};

/// \brief Write the 20-byte address of `rank` in `pool` to `out`.
void PoolAddress(ChainPool pool, uint64_t rank, uint8_t* out);
/// \brief Write the 4-byte selector of `rank` to `out`.
void PoolSelector(uint64_t rank, uint8_t* out);
/// \brief Write the 32-byte event signature hash of `rank` (rank 0 is ERC-20 Transfer's).
void PoolEventSignature(uint64_t rank, uint8_t* out);
/// \brief Return how many topics (1 to 4) a log of the event of `rank` has, topic0
/// included: Transfer's three, or drawn from mainnet's mix.
int EventTopicCount(uint64_t rank, ChainRng* rng);

/// \brief The events whose logs the synthetic chain encodes as their ABI says, by
/// popularity rank (the rank a log's event is drawn with), with about mainnet's share of
/// logs: ERC-20 Transfer (rank 0) and Approval, Uniswap V2 Sync and Swap, Uniswap V3
/// Swap, WETH Deposit and Withdrawal, ERC-721 Transfer. Other ranks are events nobody
/// decodes here: pool topics and random words.
struct ChainEvent {
  const char* signature;  ///< as evm_decode_log takes it
  uint64_t rank;
};
const std::vector<ChainEvent>& ChainEvents();

/// \brief One log's topics and data.
struct DrawnLog {
  int topics = 0;  ///< topic0 … topic(n-1) are set, the others null
  uint8_t topic[4][32] = {};
  size_t data_size = 0;  ///< bytes of `data` used
};

/// \brief Draw a log of the event of `rank`: a catalogued event's topics and a valid
/// ABI encoding of its data (amounts, unlimited approvals of 2^256-1, negative V3 swap
/// amounts, uint160 prices), or for other ranks a pool topic0, a drawn number of topics
/// and words. `data` holds 32 * `max_words` bytes. A few logs (anonymous events) have no
/// topic at all.
void DrawLog(uint64_t rank, ChainRng* rng, uint32_t max_words, DrawnLog* log,
             uint8_t* data);

/// \brief Write an address: from `pool` with probability `popular_per_mille`, else a
/// fresh random one.
void DrawAddress(ChainRng* rng, ChainPool pool, uint64_t pool_size,
                 uint64_t popular_per_mille, uint8_t* out);
/// \brief Write one 32-byte ABI word: a left-padded address, a left-padded amount, zero
/// or (rarely) 32 random bytes.
void DrawAbiWord(ChainRng* rng, uint8_t* out);
/// \brief Write a left-padded amount: 32 bytes, 1 to 10 significant ones, often one of a
/// few popular amounts.
void DrawAmountWord(ChainRng* rng, uint8_t* out);
/// \brief Return the number of ABI words of a call's or an event's data: mostly 0 to 3, a
/// heavy tail up to `max_words`.
uint32_t DrawWordCount(ChainRng* rng, uint32_t max_words);
/// \brief Write a call's input (a selector and ABI words, at most `max_words`) to `out`,
/// which holds 4 + 32 * max_words bytes; return its size. Some calls repeat verbatim
/// (approvals, claims, bot calls).
size_t DrawCalldata(ChainRng* rng, uint32_t max_words, uint8_t* out);
/// \brief Return a decimal wei amount: round figures (1.5 ETH) or full-precision ones.
std::string DrawWeiValue(ChainRng* rng);
/// \brief Return an amount in wei of `gwei` gigawei, rounded as wallets round it with
/// probability `round_per_mille`.
int64_t DrawFee(ChainRng* rng, int64_t gwei_low, int64_t gwei_high,
                uint64_t round_per_mille);

}  // namespace ampdelta::devserver

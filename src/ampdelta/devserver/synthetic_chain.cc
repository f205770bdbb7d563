#include "ampdelta/devserver/synthetic_chain.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/table_builder.h>
#include <arrow/util/decimal.h>

#include "ampdelta/devserver/chain_shape.h"
#include "ampdelta/devserver/evm_schemas.h"
#include "ampdelta/util/hex.h"

namespace ampdelta::devserver {
namespace {

using Hash32 = std::array<uint8_t, 32>;

// Tags keep the pseudo-random streams of different fields independent.
enum Tag : uint64_t {
  kTagBlockHash = 1,
  kTagBlockRow = 2,
  kTagStateRoot = 3,
  kTagTxRoot = 4,
  kTagReceiptRoot = 5,
  kTagMixHash = 6,
  kTagWithdrawals = 7,
  kTagBeaconRoot = 8,
  kTagRequests = 9,
  kTagBlockFees = 10,
  kTagLogOwners = 11,
  kTagFeeLevels = 12,
  kTagTxHash = 1'000,
  kTagTxRow = 2'000'000,
  kTagLogRow = 4'000'000,
};

uint64_t Seed(uint64_t seed, uint64_t number, uint64_t generation, uint64_t tag) {
  using M = ChainRng;
  return M::Mix(M::Mix(M::Mix(seed + M::kGolden) ^ number) ^ (generation * M::kGolden)) ^
         M::Mix(tag);
}

using Rng = ChainRng;

Hash32 MakeHash(uint64_t seed, uint64_t number, uint64_t generation, uint64_t tag) {
  Hash32 out;
  Rng rng(Seed(seed, number, generation, tag));
  rng.Fill(out.data(), out.size());
  return out;
}

std::string HashHex(const Hash32& hash) {
  return ToHex0x(
      std::string_view(reinterpret_cast<const char*>(hash.data()), hash.size()));
}

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// The keccak of an empty RLP list, the ommers hash of every post-merge block.
constexpr uint8_t kEmptyOmmersHash[32] = {0x1d, 0xcc, 0x4d, 0xe8, 0xde, 0xc7, 0x5d, 0x7a,
                                          0xab, 0x85, 0xb5, 0x67, 0xb6, 0xcc, 0xd4, 0x1a,
                                          0xd3, 0x12, 0x45, 0x1b, 0x94, 0x8a, 0x74, 0x13,
                                          0xf0, 0xa1, 0x42, 0xfd, 0x40, 0xd4, 0x93, 0x47};

template <typename T>
T* Column(arrow::RecordBatchBuilder* builder, int index) {
  return builder->GetFieldAs<T>(index);
}

}  // namespace

// An immutable snapshot of the reorg history: enough to compute every block's generation.
class SyntheticChain::View : public ChainView {
 public:
  View(const SyntheticChainOptions* options, std::vector<uint64_t> sorted_forks)
      : options_(options), sorted_forks_(std::move(sorted_forks)) {}

  // The reorg history only grows: as many forks, the same forks.
  uint64_t version() const override { return sorted_forks_.size(); }

  uint64_t Generation(uint64_t number) const {
    return static_cast<uint64_t>(
        std::upper_bound(sorted_forks_.begin(), sorted_forks_.end(), number) -
        sorted_forks_.begin());
  }

  Hash32 BlockHash(uint64_t number) const {
    return MakeHash(options_->seed, number, Generation(number), kTagBlockHash);
  }

  Hash32 ParentHash(uint64_t number) const {
    if (number == 0) return Hash32{};
    return BlockHash(number - 1);
  }

  Hash32 TxHash(uint64_t number, uint64_t generation, uint32_t index) const {
    return MakeHash(options_->seed, number, generation, kTagTxHash + index);
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Blocks(uint64_t from,
                                                            uint64_t to) const;
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Transactions(uint64_t from,
                                                                  uint64_t to) const;
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Logs(uint64_t from,
                                                          uint64_t to) const;

  const SyntheticChainOptions& options() const { return *options_; }

 private:
  const SyntheticChainOptions* options_;
  std::vector<uint64_t> sorted_forks_;
};

arrow::Result<std::shared_ptr<arrow::RecordBatch>> SyntheticChain::View::Blocks(
    uint64_t from, uint64_t to) const {
  const int64_t rows = static_cast<int64_t>(to - from + 1);
  ARROW_ASSIGN_OR_RAISE(
      auto builder, arrow::RecordBatchBuilder::Make(BlocksSchema(),
                                                    arrow::default_memory_pool(), rows));
  auto* b = builder.get();
  uint8_t bloom[256];
  for (uint64_t n = from; n <= to; ++n) {
    const uint64_t gen = Generation(n);
    const uint64_t seed = options_->seed;
    Rng rng(Seed(seed, n, gen, kTagBlockRow));
    const Hash32 hash = BlockHash(n);
    const Hash32 parent = ParentHash(n);
    uint8_t miner[20];
    Rng(Seed(seed, rng.Below(16), 0, kTagBlockRow)).Fill(miner, sizeof(miner));
    ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 0)->Append(n));
    ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 1)->Append(n));
    ARROW_RETURN_NOT_OK(Column<arrow::TimestampBuilder>(b, 2)->Append(BlockTimestamp(n) *
                                                                      kNanosPerSecond));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 3)->Append(hash.data()));
    ARROW_RETURN_NOT_OK(
        Column<arrow::FixedSizeBinaryBuilder>(b, 4)->Append(parent.data()));
    ARROW_RETURN_NOT_OK(
        Column<arrow::FixedSizeBinaryBuilder>(b, 5)->Append(kEmptyOmmersHash));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 6)->Append(miner));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 7)->Append(
        MakeHash(seed, n, gen, kTagStateRoot).data()));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 8)->Append(
        MakeHash(seed, n, gen, kTagTxRoot).data()));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 9)->Append(
        MakeHash(seed, n, gen, kTagReceiptRoot).data()));
    rng.Fill(bloom, sizeof(bloom));
    ARROW_RETURN_NOT_OK(
        Column<arrow::BinaryBuilder>(b, 10)->Append(bloom, sizeof(bloom)));
    ARROW_RETURN_NOT_OK(
        Column<arrow::Decimal128Builder>(b, 11)->Append(arrow::Decimal128(0)));
    ARROW_RETURN_NOT_OK(Column<arrow::Decimal128Builder>(b, 12)->Append(
        arrow::Decimal128("58750003716598352816469")));
    const uint64_t gas_limit = 60'000'000;
    ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 13)->Append(gas_limit));
    ARROW_RETURN_NOT_OK(
        Column<arrow::UInt64Builder>(b, 14)->Append(1'000'000 + rng.Below(59'000'000)));
    static constexpr char kExtra[] = "acme-builder";
    ARROW_RETURN_NOT_OK(
        Column<arrow::BinaryBuilder>(b, 15)->Append(kExtra, sizeof(kExtra) - 1));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 16)->Append(
        MakeHash(seed, n, gen, kTagMixHash).data()));
    ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 17)->Append(0));
    ARROW_RETURN_NOT_OK(Column<arrow::Decimal128Builder>(b, 18)->Append(arrow::Decimal128(
        static_cast<int64_t>(100'000'000 + rng.Below(30'000'000'000)))));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 19)->Append(
        MakeHash(seed, n, gen, kTagWithdrawals).data()));
    ARROW_RETURN_NOT_OK(
        Column<arrow::UInt64Builder>(b, 20)->Append(131'072 * rng.Below(7)));
    ARROW_RETURN_NOT_OK(
        Column<arrow::UInt64Builder>(b, 21)->Append(rng.Below(1'000'000)));
    ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 22)->Append(
        MakeHash(seed, n, gen, kTagBeaconRoot).data()));
    // requests_hash appeared with a later fork: leave some blocks without it.
    if (n % 3 == 0) {
      ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 23)->AppendNull());
    } else {
      ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 23)->Append(
          MakeHash(seed, n, gen, kTagRequests).data()));
    }
  }
  return builder->Flush();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> SyntheticChain::View::Transactions(
    uint64_t from, uint64_t to) const {
  const uint32_t per_block = options_->transactions_per_block;
  const int64_t rows = static_cast<int64_t>((to - from + 1) * per_block);
  ARROW_ASSIGN_OR_RAISE(
      auto builder, arrow::RecordBatchBuilder::Make(TransactionsSchema(),
                                                    arrow::default_memory_pool(), rows));
  auto* b = builder.get();
  auto* access_list = Column<arrow::ListBuilder>(b, 24);
  auto* access_entry = static_cast<arrow::StructBuilder*>(access_list->value_builder());
  auto* access_address =
      static_cast<arrow::FixedSizeBinaryBuilder*>(access_entry->field_builder(0));
  auto* storage_keys = static_cast<arrow::ListBuilder*>(access_entry->field_builder(1));
  auto* storage_key =
      static_cast<arrow::FixedSizeBinaryBuilder*>(storage_keys->value_builder());
  auto* blob_hashes = Column<arrow::ListBuilder>(b, 25);
  auto* blob_hash =
      static_cast<arrow::FixedSizeBinaryBuilder*>(blob_hashes->value_builder());
  auto* auth_list = Column<arrow::ListBuilder>(b, 26);
  auto* auth = static_cast<arrow::StructBuilder*>(auth_list->value_builder());
  auto* max_fee = Column<arrow::Decimal128Builder>(b, 18);
  auto* max_priority = Column<arrow::Decimal128Builder>(b, 19);
  auto* max_blob_fee = Column<arrow::Decimal128Builder>(b, 20);

  constexpr uint32_t kMaxCallWords = 120;
  uint8_t bytes[32];
  std::vector<uint8_t> input(4 + 32 * kMaxCallWords);
  for (uint64_t n = from; n <= to; ++n) {
    const uint64_t gen = Generation(n);
    const Hash32 block_hash = BlockHash(n);
    const int64_t timestamp = BlockTimestamp(n) * kNanosPerSecond;
    // The block's base fee: every fee in the block is drawn above it.
    const auto base_gwei = static_cast<int64_t>(
        8 + Rng(Seed(options_->seed, n, gen, kTagBlockFees)).Below(30));
    const uint64_t fee_levels = Seed(options_->seed, n, gen, kTagFeeLevels);
    uint64_t cumulative_gas = 0;
    for (uint32_t i = 0; i < per_block; ++i) {
      Rng rng(Seed(options_->seed, n, gen, kTagTxRow + i));
      const Hash32 tx_hash = TxHash(n, gen, i);
      // 0 legacy, 2 EIP-1559, 3 blob, 4 set-code: mainnet's mix, with enough blob and
      // set-code transactions that every nullable column is exercised.
      const uint64_t pick = rng.Below(1000);
      const int32_t type = pick < 240 ? 0 : (pick < 980 ? 2 : (pick < 992 ? 3 : 4));
      // A fifth of transactions move ether and carry no calldata.
      const bool transfer = rng.Chance(220);
      ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 0)->Append(n));
      ARROW_RETURN_NOT_OK(
          Column<arrow::FixedSizeBinaryBuilder>(b, 1)->Append(block_hash.data()));
      ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 2)->Append(n));
      ARROW_RETURN_NOT_OK(Column<arrow::TimestampBuilder>(b, 3)->Append(timestamp));
      ARROW_RETURN_NOT_OK(Column<arrow::UInt32Builder>(b, 4)->Append(i));
      ARROW_RETURN_NOT_OK(
          Column<arrow::FixedSizeBinaryBuilder>(b, 5)->Append(tx_hash.data()));
      if (!transfer && rng.Chance(3)) {  // contract creation
        ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 6)->AppendNull());
      } else {
        DrawAddress(&rng, ChainPool::kContracts, 2'000, transfer ? 450 : 900, bytes);
        ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 6)->Append(bytes));
      }
      // Busy senders (exchanges, bots) have large nonces; most senders small ones.
      const bool busy_sender = rng.Chance(150);
      const uint64_t nonce =
          busy_sender ? rng.LogUniform(10'000, 50'000'000) : rng.LogUniform(0, 20'000);
      ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 7)->Append(nonce));
      const int64_t priority = DrawFee(&rng, 0, 3, 930);
      // Fee caps repeat within a block: wallets and bots quote the same few levels.
      int64_t fee_cap = 0;
      if (rng.Chance(650)) {
        Rng level(fee_levels ^ ChainRng::Mix(1 + rng.PopularRank(24)));
        fee_cap = DrawFee(&level, base_gwei, base_gwei * 2, 300);
      } else {
        fee_cap = DrawFee(&rng, base_gwei, base_gwei * 2, 300) + priority;
      }
      // As on ampd, gas_price is set for legacy transactions only.
      if (type == 0) {
        ARROW_RETURN_NOT_OK(
            Column<arrow::Decimal128Builder>(b, 8)->Append(arrow::Decimal128(fee_cap)));
      } else {
        ARROW_RETURN_NOT_OK(Column<arrow::Decimal128Builder>(b, 8)->AppendNull());
      }
      uint64_t gas_limit = 21'000;
      if (!transfer) {
        gas_limit = rng.LogUniform(40'000, 1'500'000);
        if (rng.Chance(300)) gas_limit = gas_limit / 10'000 * 10'000;  // a round limit
      } else if (rng.Chance(200)) {
        gas_limit = rng.LogUniform(21'000, 100'000);
      }
      ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 9)->Append(gas_limit));
      const std::string value =
          transfer ? DrawWeiValue(&rng) : (rng.Chance(850) ? "0" : DrawWeiValue(&rng));
      ARROW_RETURN_NOT_OK(Column<arrow::StringBuilder>(b, 10)->Append(value));
      size_t input_size = 0;
      if (!transfer) {
        input_size = DrawCalldata(&rng, kMaxCallWords, input.data());
      }
      ARROW_RETURN_NOT_OK(Column<arrow::BinaryBuilder>(b, 11)->Append(
          input.data(), static_cast<int32_t>(input_size)));
      rng.Fill(bytes, 32);
      ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 12)->Append(bytes));
      rng.Fill(bytes, 32);
      ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 13)->Append(bytes));
      ARROW_RETURN_NOT_OK(
          Column<arrow::BooleanBuilder>(b, 14)->Append(rng.Below(2) == 1));
      // Pre-EIP-155 legacy transactions carry no chain id.
      if (type == 0 && rng.Chance(60)) {
        ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 15)->AppendNull());
      } else {
        ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 15)->Append(1));
      }
      // gas_used is the receipt's cumulative gas: it grows through the block.
      const uint64_t used =
          gas_limit <= 21'000 ? 21'000 : 21'000 + rng.Below(gas_limit - 20'999);
      cumulative_gas += used;
      ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 16)->Append(cumulative_gas));
      ARROW_RETURN_NOT_OK(Column<arrow::Int32Builder>(b, 17)->Append(type));
      ARROW_RETURN_NOT_OK(max_fee->Append(arrow::Decimal128(fee_cap)));
      if (type == 0) {
        ARROW_RETURN_NOT_OK(max_priority->AppendNull());
      } else {
        ARROW_RETURN_NOT_OK(max_priority->Append(arrow::Decimal128(priority)));
      }
      if (type == 3) {
        ARROW_RETURN_NOT_OK(
            max_blob_fee->Append(arrow::Decimal128(int64_t{1'000'000'000})));
      } else {
        ARROW_RETURN_NOT_OK(max_blob_fee->AppendNull());
      }
      DrawAddress(&rng, ChainPool::kSenders, 500, busy_sender ? 1000 : 60, bytes);
      ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 21)->Append(bytes));
      ARROW_RETURN_NOT_OK(Column<arrow::BooleanBuilder>(b, 22)->Append(!rng.Chance(40)));
      ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 23)->AppendNull());
      // access_list: null for legacy transactions; rarely non-empty, then long (MEV
      // bundles list every pool and slot they touch).
      if (type == 0) {
        ARROW_RETURN_NOT_OK(access_list->AppendNull());
      } else {
        ARROW_RETURN_NOT_OK(access_list->Append());
        if (rng.Chance(12)) {
          const uint64_t entries = 1 + rng.Below(14);
          for (uint64_t e = 0; e < entries; ++e) {
            ARROW_RETURN_NOT_OK(access_entry->Append());
            DrawAddress(&rng, ChainPool::kContracts, 2'000, 900, bytes);
            ARROW_RETURN_NOT_OK(access_address->Append(bytes));
            ARROW_RETURN_NOT_OK(storage_keys->Append());
            const uint64_t keys = rng.Below(8);
            for (uint64_t k = 0; k < keys; ++k) {
              if (rng.Below(2) == 0) {
                std::memset(bytes, 0, 32);
                bytes[31] = static_cast<uint8_t>(rng.Below(16));
              } else {
                rng.Fill(bytes, 32);
              }
              ARROW_RETURN_NOT_OK(storage_key->Append(bytes));
            }
          }
        }
      }
      if (type == 3) {
        ARROW_RETURN_NOT_OK(blob_hashes->Append());
        const uint64_t blobs = 1 + rng.Below(3);
        for (uint64_t k = 0; k < blobs; ++k) {
          rng.Fill(bytes, 32);
          bytes[0] = 0x01;  // versioned hash prefix
          ARROW_RETURN_NOT_OK(blob_hash->Append(bytes));
        }
      } else {
        ARROW_RETURN_NOT_OK(blob_hashes->AppendNull());
      }
      if (type == 4) {
        ARROW_RETURN_NOT_OK(auth_list->Append());
        ARROW_RETURN_NOT_OK(auth->Append());
        ARROW_RETURN_NOT_OK(
            static_cast<arrow::UInt64Builder*>(auth->field_builder(0))->Append(1));
        rng.Fill(bytes, 20);
        ARROW_RETURN_NOT_OK(
            static_cast<arrow::FixedSizeBinaryBuilder*>(auth->field_builder(1))
                ->Append(bytes));
        ARROW_RETURN_NOT_OK(static_cast<arrow::UInt64Builder*>(auth->field_builder(2))
                                ->Append(rng.Below(1000)));
        ARROW_RETURN_NOT_OK(static_cast<arrow::BooleanBuilder*>(auth->field_builder(3))
                                ->Append(rng.Below(2) == 1));
        rng.Fill(bytes, 32);
        ARROW_RETURN_NOT_OK(
            static_cast<arrow::FixedSizeBinaryBuilder*>(auth->field_builder(4))
                ->Append(bytes));
        rng.Fill(bytes, 32);
        ARROW_RETURN_NOT_OK(
            static_cast<arrow::FixedSizeBinaryBuilder*>(auth->field_builder(5))
                ->Append(bytes));
      } else {
        ARROW_RETURN_NOT_OK(auth_list->AppendNull());
      }
    }
  }
  return builder->Flush();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> SyntheticChain::View::Logs(
    uint64_t from, uint64_t to) const {
  const uint32_t txs = options_->transactions_per_block;
  const uint32_t per_block = txs * options_->logs_per_transaction;
  const int64_t rows = static_cast<int64_t>((to - from + 1) * per_block);
  ARROW_ASSIGN_OR_RAISE(
      auto builder,
      arrow::RecordBatchBuilder::Make(LogsSchema(), arrow::default_memory_pool(), rows));
  auto* b = builder.get();
  constexpr uint32_t kMaxDataWords = 25;
  uint8_t bytes[32];
  uint8_t data[32 * kMaxDataWords];
  std::vector<uint32_t> counts;  // logs per transaction of the current block
  for (uint64_t n = from; n <= to; ++n) {
    const uint64_t gen = Generation(n);
    const Hash32 block_hash = BlockHash(n);
    const int64_t timestamp = BlockTimestamp(n) * kNanosPerSecond;
    // A block has transactions_per_block * logs_per_transaction logs, spread
    // as on a real chain: a third of transactions emit none, most of the others one, and
    // a few (swaps, batch transfers) many.
    // The draws rarely sum to the block's count: the difference is spread one log at a
    // time over random transactions that already emit some, so no transaction collects
    // it.
    Rng owners(Seed(options_->seed, n, gen, kTagLogOwners));
    counts.assign(txs, 0);
    uint64_t drawn_total = 0;
    for (auto& count : counts) {
      count = static_cast<uint32_t>(
          owners.Chance(300) ? 0
                             : (owners.Chance(600) ? 1 : 2 + owners.LogUniform(0, 10)));
      drawn_total += count;
    }
    while (drawn_total < per_block) {
      const auto i = static_cast<size_t>(owners.Below(txs));
      if (counts[i] == 0 && drawn_total > 0) continue;
      ++counts[i];
      ++drawn_total;
    }
    while (drawn_total > per_block) {
      const auto i = static_cast<size_t>(owners.Below(txs));
      if (counts[i] == 0) continue;
      --counts[i];
      --drawn_total;
    }
    uint32_t log_index = 0;
    for (uint32_t i = 0; i < txs; ++i) {
      const uint32_t count = counts[i];
      const Hash32 tx_hash = TxHash(n, gen, i);
      for (uint32_t k = 0; k < count; ++k, ++log_index) {
        Rng rng(Seed(options_->seed, n, gen, kTagLogRow + log_index));
        ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 0)->Append(n));
        ARROW_RETURN_NOT_OK(
            Column<arrow::FixedSizeBinaryBuilder>(b, 1)->Append(block_hash.data()));
        ARROW_RETURN_NOT_OK(Column<arrow::UInt64Builder>(b, 2)->Append(n));
        ARROW_RETURN_NOT_OK(Column<arrow::TimestampBuilder>(b, 3)->Append(timestamp));
        ARROW_RETURN_NOT_OK(
            Column<arrow::FixedSizeBinaryBuilder>(b, 4)->Append(tx_hash.data()));
        ARROW_RETURN_NOT_OK(Column<arrow::UInt32Builder>(b, 5)->Append(i));
        ARROW_RETURN_NOT_OK(Column<arrow::UInt32Builder>(b, 6)->Append(log_index));
        DrawAddress(&rng, ChainPool::kTokens, 300, 980, bytes);
        ARROW_RETURN_NOT_OK(Column<arrow::FixedSizeBinaryBuilder>(b, 7)->Append(bytes));
        // Transfer takes almost half of all logs.
        const uint64_t event = rng.Chance(450) ? 0 : 1 + rng.PopularRank(200);
        DrawnLog log;
        DrawLog(event, &rng, kMaxDataWords, &log, data);
        for (int t = 0; t < 4; ++t) {
          auto* topic = Column<arrow::FixedSizeBinaryBuilder>(b, 8 + t);
          ARROW_RETURN_NOT_OK(t < log.topics ? topic->Append(log.topic[t])
                                             : topic->AppendNull());
        }
        ARROW_RETURN_NOT_OK(Column<arrow::BinaryBuilder>(b, 12)->Append(
            data, static_cast<int32_t>(log.data_size)));
      }
    }
  }
  return builder->Flush();
}

namespace {

class SyntheticIterator : public BatchIterator {
 public:
  SyntheticIterator(std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>(
                        uint64_t, uint64_t)>
                        generate,
                    uint64_t from, uint64_t to, uint64_t blocks_per_batch)
      : generate_(std::move(generate)),
        next_(from),
        to_(to),
        blocks_per_batch_(std::max<uint64_t>(1, blocks_per_batch)) {}

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override {
    if (done_ || next_ > to_) return nullptr;
    const uint64_t end = std::min(to_, next_ + blocks_per_batch_ - 1);
    auto batch = generate_(next_, end);
    if (end == to_) {
      done_ = true;
    } else {
      next_ = end + 1;
    }
    return batch;
  }

 private:
  std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>(uint64_t, uint64_t)>
      generate_;
  uint64_t next_;
  uint64_t to_;
  uint64_t blocks_per_batch_;
  bool done_ = false;
};

}  // namespace

SyntheticChain::SyntheticChain(SyntheticChainOptions options)
    : options_(std::move(options)),
      head_(options_.start_block + std::max<uint64_t>(options_.initial_blocks, 1) - 1) {}

std::vector<std::string> SyntheticChain::table_names() const {
  return {"blocks", "transactions", "logs"};
}

arrow::Result<std::shared_ptr<arrow::Schema>> SyntheticChain::TableSchema(
    const std::string& table) const {
  if (table == "blocks") return BlocksSchema();
  if (table == "transactions") return TransactionsSchema();
  if (table == "logs") return LogsSchema();
  return arrow::Status::KeyError("table '", table, "' not found in dataset '",
                                 options_.dataset,
                                 "' (tables: blocks, transactions, logs)");
}

int64_t SyntheticChain::BlockTimestamp(uint64_t number) {
  return kAnchorUnixSeconds +
         (static_cast<int64_t>(number) - kAnchorBlock) * kBlockSeconds;
}

std::shared_ptr<const SyntheticChain::View> SyntheticChain::SnapshotLocked() const {
  std::vector<uint64_t> forks = reorg_forks_;
  std::sort(forks.begin(), forks.end());
  return std::make_shared<View>(&options_, std::move(forks));
}

ScanRange SyntheticChain::MakeRangeLocked(uint64_t start, uint64_t end) const {
  auto view = SnapshotLocked();
  ScanRange out;
  out.range.start = start;
  out.range.end = end;
  out.range.hash = HashHex(view->BlockHash(end));
  out.range.prev_hash = HashHex(view->ParentHash(start));
  out.range.timestamp = static_cast<uint64_t>(BlockTimestamp(end));
  out.view = std::move(view);
  return out;
}

std::optional<ScanRange> SyntheticChain::Synced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return MakeRangeLocked(options_.start_block, head_);
}

uint64_t SyntheticChain::RestartPointLocked(const ChainPosition& previous) const {
  const uint64_t n = previous.number;
  // Reorgs that touched block n, in the order they happened.
  std::vector<uint64_t> touching;
  for (uint64_t fork : reorg_forks_) {
    if (fork <= n) touching.push_back(fork);
  }
  // Find which generation of block n the client saw; the reorgs after that one moved the
  // chain under it, and the lowest of their fork points is where the chain diverged.
  for (size_t seen = touching.size(); seen-- > 0;) {
    if (HashHex(MakeHash(options_.seed, n, seen, kTagBlockHash)) == previous.hash) {
      uint64_t restart = n;
      for (size_t i = seen; i < touching.size(); ++i)
        restart = std::min(restart, touching[i]);
      return restart;
    }
  }
  // An unknown hash: re-emit from the cursor's block, as Amp does.
  return n;
}

std::optional<ScanRange> SyntheticChain::NextMicrobatch(
    const std::optional<ChainPosition>& previous, uint64_t max_blocks) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t start = options_.start_block;
  if (previous) {
    // A cursor on a block the chain never had (below its first) gets nothing, ever, as
    // on ampd, whose blocks table lacks it.
    if (previous->number < options_.start_block) return std::nullopt;
    if (previous->number > head_) return std::nullopt;  // wait until the block exists
    const auto view = SnapshotLocked();
    const bool canonical = previous->number + 1 >= options_.start_block &&
                           HashHex(view->BlockHash(previous->number)) == previous->hash;
    start = canonical ? previous->number + 1 : RestartPointLocked(*previous);
    start = std::max(start, options_.start_block);
  }
  if (start > head_) return std::nullopt;
  const uint64_t end = std::min(head_, start + std::max<uint64_t>(max_blocks, 1) - 1);
  return MakeRangeLocked(start, end);
}

uint64_t SyntheticChain::change_counter() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return change_counter_;
}

void SyntheticChain::WaitForChange(uint64_t seen,
                                   std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return change_counter_ != seen; });
}

void SyntheticChain::AdvanceHead(uint64_t count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    head_ += count;
    ++change_counter_;
  }
  changed_.notify_all();
}

arrow::Status SyntheticChain::CheckFork(uint64_t head, uint64_t depth) const {
  if (depth == 0) return arrow::Status::Invalid("reorg depth must be at least 1");
  if (depth > head - options_.start_block + 1) {
    return arrow::Status::Invalid(
        "reorg depth ", depth, " reaches below the first block ", options_.start_block);
  }
  return arrow::Status::OK();
}

arrow::Status SyntheticChain::Reorg(uint64_t depth) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ARROW_RETURN_NOT_OK(CheckFork(head_, depth));
    reorg_forks_.push_back(head_ - depth + 1);
    ++change_counter_;
  }
  changed_.notify_all();
  return arrow::Status::OK();
}

arrow::Status SyntheticChain::AdvanceHeadThenReorg(const std::vector<uint64_t>& depths) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (uint64_t depth : depths) ARROW_RETURN_NOT_OK(CheckFork(head_ + 1, depth));
    ++head_;
    for (uint64_t depth : depths) reorg_forks_.push_back(head_ - depth + 1);
    ++change_counter_;
  }
  changed_.notify_all();
  return arrow::Status::OK();
}

uint64_t SyntheticChain::head() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return head_;
}

uint64_t SyntheticChain::reorg_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reorg_forks_.size();
}

std::string SyntheticChain::BlockHash(uint64_t number) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return HashHex(SnapshotLocked()->BlockHash(number));
}

arrow::Result<std::unique_ptr<BatchIterator>> SyntheticChain::Scan(
    const std::string& table, const ScanRange& range) const {
  auto view = std::dynamic_pointer_cast<const View>(range.view);
  if (view == nullptr) return arrow::Status::Invalid("scan range from another dataset");
  const uint64_t max_rows = options_.max_rows_per_batch;
  const uint64_t txs = std::max<uint32_t>(options_.transactions_per_block, 1);
  const uint64_t logs = std::max<uint64_t>(txs * options_.logs_per_transaction, 1);
  if (table == "blocks") {
    return std::make_unique<SyntheticIterator>(
        [view](uint64_t a, uint64_t b) { return view->Blocks(a, b); }, range.range.start,
        range.range.end, max_rows);
  }
  if (table == "transactions") {
    return std::make_unique<SyntheticIterator>(
        [view](uint64_t a, uint64_t b) { return view->Transactions(a, b); },
        range.range.start, range.range.end, max_rows / txs);
  }
  if (table == "logs") {
    return std::make_unique<SyntheticIterator>(
        [view](uint64_t a, uint64_t b) { return view->Logs(a, b); }, range.range.start,
        range.range.end, max_rows / logs);
  }
  return TableSchema(table).status();
}

}  // namespace ampdelta::devserver

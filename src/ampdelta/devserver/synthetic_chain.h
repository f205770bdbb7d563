#pragma once

/// \file synthetic_chain.h
/// \brief A deterministic synthetic EVM chain with `blocks`, `transactions` and `logs`
/// in Amp's exact schemas, whose head can advance and reorg on demand.
///
/// Every value is a pure function of (seed, block number, fork generation), where a
/// block's generation counts the reorgs whose fork point is at or below it. A reorg
/// therefore gives the replaced blocks new hashes and new rows, and parent hashes stay
/// chained: parent_hash(n) is always hash(n - 1) on the current chain. Rows are generated
/// on demand in bounded batches, so chains of any length cost no memory.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ampdelta/devserver/dataset.h"

namespace ampdelta::devserver {

/// \brief Shape of the synthetic chain.
struct SyntheticChainOptions {
  std::string dataset = "acme/eth_mainnet";
  std::string network = "mainnet";
  /// First block served (Quickstart: 24,000,000).
  uint64_t start_block = 24'000'000;
  /// Blocks that exist when the server starts (Quickstart: 100).
  uint64_t initial_blocks = 100;
  uint32_t transactions_per_block = 8;
  uint32_t logs_per_transaction = 2;
  /// Changes every hash and value; the same seed always gives the same chain.
  uint64_t seed = 0;
  /// Upper bound on rows per generated batch.
  uint32_t max_rows_per_batch = 16'384;
};

/// \brief Block time and the anchor matching the Quickstart's timestamps:
/// block 24,000,000 at 2025-12-13 00:06:11 UTC, one block every 12 seconds.
inline constexpr int64_t kAnchorBlock = 24'000'000;
inline constexpr int64_t kAnchorUnixSeconds = 1'765'584'371;
inline constexpr int64_t kBlockSeconds = 12;

/// \brief The synthetic chain. Thread-safe.
class SyntheticChain : public Dataset {
 public:
  explicit SyntheticChain(SyntheticChainOptions options);

  const std::string& name() const override { return options_.dataset; }
  const std::string& network() const override { return options_.network; }
  std::vector<std::string> table_names() const override;
  arrow::Result<std::shared_ptr<arrow::Schema>> TableSchema(
      const std::string& table) const override;
  std::optional<ScanRange> Synced() const override;
  std::optional<ScanRange> NextMicrobatch(const std::optional<ChainPosition>& previous,
                                          uint64_t max_blocks) const override;
  uint64_t change_counter() const override;
  void WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const override;
  arrow::Result<std::unique_ptr<BatchIterator>> Scan(
      const std::string& table, const ScanRange& range) const override;

  /// \brief Append `count` new blocks at the head.
  void AdvanceHead(uint64_t count = 1);

  /// \brief Replace the newest `depth` blocks with a fork (new hashes and rows); the head
  /// number stays. Fails when depth is 0 or reaches below the first block.
  arrow::Status Reorg(uint64_t depth);

  /// \brief Append one block, then apply each reorg of `depths`, as one change: no
  /// reader sees the new head on the old fork.
  arrow::Status AdvanceHeadThenReorg(const std::vector<uint64_t>& depths);

  /// \brief Return the newest block number.
  uint64_t head() const;
  /// \brief Return the first block number.
  uint64_t first_block() const { return options_.start_block; }
  /// \brief Return the number of reorgs so far.
  uint64_t reorg_count() const;
  /// \brief Return the canonical hash of block `number` (`0x` + hex).
  std::string BlockHash(uint64_t number) const;
  /// \brief Return the Unix timestamp (seconds) of block `number`.
  static int64_t BlockTimestamp(uint64_t number);
  /// \brief Return the options.
  const SyntheticChainOptions& options() const { return options_; }

 private:
  class View;

  std::shared_ptr<const View> SnapshotLocked() const;
  ScanRange MakeRangeLocked(uint64_t start, uint64_t end) const;
  uint64_t RestartPointLocked(const ChainPosition& previous) const;

  // OK when a fork of the newest `depth` blocks below `head` keeps the first block.
  arrow::Status CheckFork(uint64_t head, uint64_t depth) const;

  const SyntheticChainOptions options_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  uint64_t head_;
  uint64_t change_counter_ = 0;
  /// Fork points of past reorgs, in the order they happened.
  std::vector<uint64_t> reorg_forks_;
};

}  // namespace ampdelta::devserver

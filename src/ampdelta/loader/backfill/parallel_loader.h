#pragma once

/// \file parallel_loader.h
/// \brief Parallel backfills (docs/scale-out.md): a block range split into partitions
/// that workers load concurrently into one table, each exactly once, then optionally
/// handed over to a live stream that continues at the backfill's last block.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/loader/common/load_result.h"

namespace ampdelta::loader {

/// \brief The Python SDK's ParallelConfig, plus shards.
struct ParallelOptions {
  /// Partitions loaded at once.
  int num_workers = 1;
  /// Blocks per partition. Partitions are cells of a grid anchored at block 0, so runs
  /// with the same size (shards on other machines) cut the same partitions. Unset: the
  /// range over 4 partitions per worker (and shard), at most 1,000,000 blocks each.
  std::optional<uint64_t> partition_size;
  /// First block to load (inclusive); unset: the first block the server has.
  std::optional<uint64_t> min_block;
  /// Last block to load (inclusive), at least the reorg window below the head; unset:
  /// the head the server reports at the start (a stream loads the window's blocks).
  std::optional<uint64_t> max_block;
  /// After the backfill, follow the chain as LoadStream does. The SDK does so when
  /// max_block is unset.
  bool then_stream = false;
  /// Stop starting partitions once one failed for good (the others that run finish).
  bool stop_on_error = false;
  /// The SDK's reorg_buffer: the blocks below the head a reorg may still reach
  /// (default: LoadOptions::stream_reorg_window_blocks). Partitions load only blocks
  /// below it; the stream loads the rest, recording each range's hash, and no block is
  /// loaded twice at the seam.
  std::optional<uint64_t> reorg_buffer;
  /// Attempts per partition (a failure is retried with `resilience.retry` back-off).
  int partition_attempts = 3;
  /// Load only the partitions whose grid index is shard_index modulo shard_count.
  int shard_index = 0;
  int shard_count = 1;
  /// A result for each partition loaded, skipped or failed (called from workers, one at
  /// a time).
  std::function<void(const LoadResult&)> on_partition;
};

/// \brief Load the blocks [min_block, max_block] of `sql` (a query whose output has
/// `options.block_column`) into the configured table: the final ones (at least the reorg
/// window below the head) in partitions, `num_workers` at a time; without max_block the
/// rest up to the head through the query's stream (LoadStream), and with `then_stream`
/// the stream follows the chain on.
///
/// Each partition is a batch load of the query restricted to its blocks
/// (amp::AddBlockFilter), committed with its rows and a `txn` naming the query and the
/// range (backfill_state.h): blocks a record covers are never loaded again, so a re-run
/// loads only what is missing, and a concurrent commit covering any of a partition's
/// blocks makes it a conflict (the partition then loads only what is still missing).
/// Blocks the query's stream already owns are left to it. Optimize runs once, after the
/// last partition. A partition that fails `partition_attempts` times is reported with its
/// range; the result then fails, naming every missing range and the command that loads
/// them.
LoadResult LoadParallel(amp::Client& client, const std::string& sql,
                        const DeltaLakeConfig& config, const LoadOptions& options,
                        const ParallelOptions& parallel);

}  // namespace ampdelta::loader

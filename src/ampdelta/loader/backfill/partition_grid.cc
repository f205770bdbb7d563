#include "ampdelta/loader/backfill/partition_grid.h"

#include <algorithm>

#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/util/runtime.h"

namespace ampdelta::loader {
namespace {

constexpr uint64_t kMaxDefaultPartitionBlocks = 1'000'000;
constexpr uint64_t kCellsPerShard = 16;
constexpr uint64_t kPartitionsPerWorker = 4;
// Row groups a partition flushes at its share of the memory budget stay large enough to
// stitch (optimize.h) at this share.
constexpr int64_t kMinPartitionBudgetMib = 16;

}  // namespace

uint64_t DefaultPartitionSize(const BlockSpan& range, int shard_count, int num_workers) {
  const uint64_t blocks = range.last - range.first + 1;
  const uint64_t count =
      static_cast<uint64_t>(shard_count) *
      (shard_count > 1 ? kCellsPerShard
                       : static_cast<uint64_t>(num_workers) * kPartitionsPerWorker);
  return std::clamp<uint64_t>((blocks + count - 1) / count, 1,
                              kMaxDefaultPartitionBlocks);
}

std::vector<Partition> PlanPartitions(const std::vector<BlockSpan>& missing,
                                      uint64_t size, int shard_index, int shard_count) {
  std::vector<Partition> partitions;
  for (const auto& span : missing) {
    for (uint64_t cell = span.first / size; cell <= span.last / size; ++cell) {
      if (cell % static_cast<uint64_t>(shard_count) !=
          static_cast<uint64_t>(shard_index)) {
        continue;
      }
      const uint64_t low = std::max(span.first, cell * size);
      const uint64_t high = std::min(span.last, cell * size + (size - 1));
      partitions.push_back({cell, {low, high}});
    }
  }
  return partitions;
}

DeltaLakeConfig PartitionConfig(const DeltaLakeConfig& config, int workers) {
  DeltaLakeConfig partition = config;
  partition.optimize_after_write = false;
  partition.vacuum_after_write = false;
  const int64_t shares = std::max(1, workers);
  const int64_t budget_mib = config.memory_budget_mib.value_or(
      delta::DataFileOptions{}.memory_budget_bytes >> 20);
  partition.memory_budget_mib = std::max(kMinPartitionBudgetMib, budget_mib / shares);
  if (!config.writer_threads) {
    partition.writer_threads = std::max<int64_t>(1, UsableCores() / shares);
  }
  return partition;
}

}  // namespace ampdelta::loader

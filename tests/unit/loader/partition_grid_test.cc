// How a parallel backfill cuts its range: shards on other machines, with other worker
// counts, must cut the same cells and take disjoint ones.

#include "ampdelta/loader/backfill/partition_grid.h"

#include <set>

#include "tests/support/test_util.h"

namespace ampdelta::loader {
namespace {

TEST(PartitionGridTest, ShardsWithOtherWorkerCountsCutTheSameGrid) {
  const BlockSpan range{1'000, 2'000'999};
  const uint64_t size = DefaultPartitionSize(range, /*shard_count=*/3, /*num_workers=*/1);
  EXPECT_EQ(DefaultPartitionSize(range, 3, 8), size);
  EXPECT_EQ(size, (2'000'000 + 47) / 48);  // 16 cells per shard
  // Unsharded: 4 cells per worker; never more than 1,000,000 blocks, never 0.
  EXPECT_EQ(DefaultPartitionSize(range, 1, 2), 250'000u);
  EXPECT_EQ(DefaultPartitionSize({0, 99'999'999}, 1, 1), 1'000'000u);
  EXPECT_EQ(DefaultPartitionSize({7, 7}, 4, 16), 1u);
}

TEST(PartitionGridTest, TheShardsTakeEveryMissingBlockOnceAtCellBoundaries) {
  const std::vector<BlockSpan> missing = {{5, 23}, {40, 41}, {59, 60}};
  std::set<uint64_t> blocks;
  for (int shard = 0; shard < 3; ++shard) {
    for (const Partition& partition : PlanPartitions(missing, 10, shard, 3)) {
      EXPECT_EQ(partition.cell % 3, static_cast<uint64_t>(shard));
      EXPECT_EQ(partition.span.first / 10, partition.cell);
      EXPECT_EQ(partition.span.last / 10, partition.cell);
      for (uint64_t b = partition.span.first; b <= partition.span.last; ++b) {
        EXPECT_TRUE(blocks.insert(b).second) << b;
      }
    }
  }
  std::set<uint64_t> expected;
  for (const auto& span : missing) {
    for (uint64_t b = span.first; b <= span.last; ++b) expected.insert(b);
  }
  EXPECT_EQ(blocks, expected);
  const auto first = PlanPartitions(missing, 10, 0, 3);
  ASSERT_EQ(first.size(), 2u);  // cells 0 and 6
  EXPECT_EQ(first[0].span.first, 5u);
  EXPECT_EQ(first[0].span.last, 9u);
  EXPECT_EQ(first[1].span.first, 60u);
  EXPECT_EQ(first[1].span.last, 60u);
}

TEST(PartitionGridTest, PartitionsSplitTheMemoryBudgetAndNeverCompact) {
  DeltaLakeConfig config;
  config.memory_budget_mib = 1024;
  config.writer_threads = 4;
  const DeltaLakeConfig partition = PartitionConfig(config, 8);
  EXPECT_EQ(partition.memory_budget_mib, 128);
  EXPECT_EQ(partition.writer_threads, 4);
  EXPECT_FALSE(partition.optimize_after_write);
  EXPECT_FALSE(partition.vacuum_after_write);
  config.memory_budget_mib = 64;
  EXPECT_EQ(PartitionConfig(config, 8).memory_budget_mib, 16);  // at least 16 MiB
}

}  // namespace
}  // namespace ampdelta::loader

#pragma once

/// \file partition_grid.h
/// \brief How a parallel backfill cuts its range (docs/scale-out.md): the size of the
/// grid's cells, the cells of one shard, and each partition's share of the load's
/// memory and cores.

#include <cstdint>
#include <vector>

#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/state/backfill_state.h"

namespace ampdelta::loader {

/// \brief The blocks of one grid cell a partition loads.
struct Partition {
  uint64_t cell = 0;  // grid index
  BlockSpan span;
};

/// \brief The cell size of a backfill of `range` with no partition size given: shards
/// running with other worker counts must cut the same grid, so a sharded backfill cuts
/// 16 cells per shard, an unsharded one 4 per worker; at most 1,000,000 blocks a cell.
uint64_t DefaultPartitionSize(const BlockSpan& range, int shard_count, int num_workers);

/// \brief The `missing` spans cut at the boundaries of cells of `size` blocks, keeping
/// the cells of shard `shard_index` of `shard_count` (cell index modulo the count).
std::vector<Partition> PlanPartitions(const std::vector<BlockSpan>& missing,
                                      uint64_t size, int shard_index, int shard_count);

/// \brief A partition's load: no compaction (the backfill compacts once, at its end),
/// and its share of the load's writer memory budget and cores, which the `workers`
/// partitions loading at once split rather than each taking the whole (at least 16 MiB
/// each, so its row groups stay large enough to stitch).
DeltaLakeConfig PartitionConfig(const DeltaLakeConfig& config, int workers);

}  // namespace ampdelta::loader

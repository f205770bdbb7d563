#pragma once

/// \file backfill_state.h
/// \brief What a parallel backfill (parallel_loader.h) records in the table, and reading
/// it back. Every partition commits its rows with a `txn` whose app id names the query's
/// stream (StreamAppId), the network and the partition's block range:
///
///     <stream app id>/backfill/<network>/<first>-<last>     version = last
///
/// so a re-run loads only the blocks no record covers. Every commit also records the
/// range its run set out to load and how it cut it (blocks per partition, shards):
///
///     <stream app id>/backfill-plan/<size>x<shards>/<network>/<first>-<last>
///
/// so a stream started later refuses while blocks inside a plan are missing, and shards
/// cutting one range differently are refused. Data files
/// carry the tag BackfillTagKey(stream app id), so rows of the backfill are told apart
/// from rows another writer loaded.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ampdelta/delta/log/snapshot.h"

namespace ampdelta::loader {

/// \brief An inclusive range of block numbers.
struct BlockSpan {
  uint64_t first = 0;
  uint64_t last = 0;
  bool operator==(const BlockSpan&) const = default;
};

/// \brief `first-last` (one block: `first`).
std::string SpanText(const BlockSpan& span);

/// \brief The app id of a partition's record.
std::string BackfillPartitionAppId(const std::string& stream_app_id,
                                   const std::string& network, const BlockSpan& span);

/// \brief How a backfill run cut its range.
struct BackfillGrid {
  uint64_t partition_size = 1;
  int shard_count = 1;
  bool operator==(const BackfillGrid&) const = default;
};

/// \brief The app id of the record of the range a backfill run set out to load.
std::string BackfillPlanAppId(const std::string& stream_app_id,
                              const std::string& network, const BlockSpan& span,
                              const BackfillGrid& grid);

/// \brief The tag key of a backfill's data files (its value: a JSON array of the
/// partitions' `network:first-last`).
std::string BackfillTagKey(const std::string& stream_app_id);

/// \brief Return the network and block range a partition app id of `stream_app_id`
/// names, or nullopt when it is not one.
std::optional<std::pair<std::string, BlockSpan>> ParseBackfillPartitionAppId(
    const std::string& stream_app_id, const std::string& app_id);

/// \brief What the table says about a query's backfill.
struct BackfillState {
  /// Per network, the block ranges partitions recorded, merged and sorted.
  std::map<std::string, std::vector<BlockSpan>> loaded;
  /// Per network, the ranges runs set out to load, merged and sorted.
  std::map<std::string, std::vector<BlockSpan>> planned;
  /// Per network, each recorded plan's range and grid.
  std::map<std::string, std::vector<std::pair<BlockSpan, BackfillGrid>>> plans;

  /// \brief Return the parts of `wanted` that no record on `network` covers.
  std::vector<BlockSpan> Missing(const std::string& network,
                                 const BlockSpan& wanted) const;
  /// \brief Return the blocks no record covers that a plan includes or that lie between
  /// recorded blocks, per network, merged.
  std::map<std::string, std::vector<BlockSpan>> Unfinished() const;
};

/// \brief Read a query's backfill records from a snapshot.
BackfillState ReadBackfillState(const delta::Snapshot& snapshot,
                                const std::string& stream_app_id);

/// \brief Merge overlapping and adjacent spans, sorted by first block.
std::vector<BlockSpan> MergeSpans(std::vector<BlockSpan> spans);

}  // namespace ampdelta::loader

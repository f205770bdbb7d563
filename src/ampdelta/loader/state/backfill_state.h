#pragma once

/// \file backfill_state.h
/// \brief What a parallel backfill (parallel_loader.h) records in the table, and reading
/// it back. Every partition commits its rows with data files tagged
/// BackfillTagKey(stream app id), whose value names the partition's network, blocks and
/// row count (BackfillPart): what the live files' tags name is what the table holds,
/// and a restore, an overwrite or a delete of whole files takes it back with the rows.
///
/// Each commit also claims its blocks with a `txn` whose app id names the query's
/// stream (StreamAppId), the network and the range (version: the rows it loaded), so
/// concurrent runs never load the same blocks twice:
///
///     <stream app id>/backfill/<network>/<first>-<last>     version = rows
///
/// A record can outlive its rows (a restore) or be dropped before them
/// (`delta.setTransactionRetentionDuration`), so it is never trusted alone: it counts
/// only when it says its partition was empty, or when files without the tag hold rows
/// in its blocks (another engine's compaction drops tags). Every commit also records
/// the range its run set out to load and how it cut it (blocks per partition, shards):
///
///     <stream app id>/backfill-plan/<size>x<shards>/<network>/<first>-<last>
///
/// so a stream started later refuses while blocks inside a plan are missing, and shards
/// cutting one range differently are refused.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>

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
/// \brief The spans' SpanText joined with `,`.
std::string SpansText(const std::vector<BlockSpan>& spans);

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

/// \brief A plan record: the range a run set out to load and how it cut it.
struct BackfillPlan {
  std::string network;
  BlockSpan span;
  BackfillGrid grid;
};

/// \brief Return the plan a plan app id of `stream_app_id` names, or nullopt.
std::optional<BackfillPlan> ParseBackfillPlanAppId(const std::string& stream_app_id,
                                                   const std::string& app_id);

/// \brief The tag key of a backfill's data files.
std::string BackfillTagKey(const std::string& stream_app_id);

/// \brief One partition commit as its data files' tag names it.
struct BackfillPart {
  std::string network;
  BlockSpan span;
  /// The rows the commit loaded; nullopt in tags written before ampdelta counted them
  /// (`network:first-last`).
  std::optional<int64_t> rows;
  bool operator==(const BackfillPart&) const = default;
};

/// \brief The tag value of a partition commit's data files: a JSON array holding one
/// element (a set, merged by compaction: file_tags.h).
std::string BackfillTagValue(const BackfillPart& part);

/// \brief The parts `file`'s tag of `stream_app_id` names (none without the tag).
/// Errors: kCorruptLog (a tag that does not parse).
arrow::Result<std::vector<BackfillPart>> ReadBackfillTag(
    const delta::Add& file, const std::string& stream_app_id);

/// \brief Return the network and block range a partition app id of `stream_app_id`
/// names, or nullopt when it is not one.
std::optional<std::pair<std::string, BlockSpan>> ParseBackfillPartitionAppId(
    const std::string& stream_app_id, const std::string& app_id);

/// \brief A partition's `txn` record.
struct BackfillRecord {
  std::string network;
  BlockSpan span;
  /// Rows the partition loaded (records written before ampdelta counted them hold the
  /// partition's last block instead).
  int64_t version = 0;
  /// \brief Return true when the record says its partition loaded no rows (nothing in
  /// the table can contradict it).
  bool Empty() const { return version == 0 && span.last != 0; }
  /// \brief Return the rows it says were loaded, when it says so unambiguously.
  std::optional<int64_t> Rows() const;
};

/// \brief A record whose blocks hold some of its rows in files without the tag, but
/// fewer than it loaded: neither loaded nor safely loaded again.
struct ShortRecord {
  BackfillRecord record;
  int64_t rows_found = 0;
};

/// \brief What the table says about a query's backfill.
struct BackfillState {
  /// Per network, the blocks the table holds, merged and sorted: those the live files'
  /// tags name, and those of records the table corroborates (an empty partition, or
  /// rows in files without tags).
  std::map<std::string, std::vector<BlockSpan>> loaded;
  /// Per network, the parts the live files' tags name, sorted by first block.
  std::map<std::string, std::vector<BackfillPart>> tagged;
  /// Every partition record.
  std::vector<BackfillRecord> records;
  /// Records whose blocks hold none of their rows (a restore, an overwrite or a delete
  /// took them back): ignored, their blocks are missing.
  std::vector<BackfillRecord> stale;
  /// Records whose blocks hold fewer rows than they loaded, in files without tags.
  std::vector<ShortRecord> short_records;
  /// Per network, the first block the query's stream took over (takeover.h): blocks
  /// from it on are the stream's, whatever records and plans of the backfill say.
  std::map<std::string, uint64_t> stream_from;
  /// Per network, the ranges runs set out to load below the stream's blocks, merged and
  /// sorted.
  std::map<std::string, std::vector<BlockSpan>> planned;
  /// Per network, each recorded plan's range and grid.
  std::map<std::string, std::vector<std::pair<BlockSpan, BackfillGrid>>> plans;

  /// \brief Return the parts of `wanted` the table does not hold on `network`.
  std::vector<BlockSpan> Missing(const std::string& network,
                                 const BlockSpan& wanted) const;
  /// \brief Return the blocks the table does not hold that a plan includes or that lie
  /// between held blocks, per network, merged.
  std::map<std::string, std::vector<BlockSpan>> Unfinished() const;
  /// \brief Return the app ids of the stale records (a reload commits them again).
  std::set<std::string> StaleAppIds(const std::string& stream_app_id) const;
};

/// \brief Read a query's backfill from a snapshot: its tags, records and plans.
/// `block_column` finds a record's rows in files without tags (read when their
/// statistics cannot place them); empty: any such rows corroborate every record.
/// Errors: kCorruptLog (a malformed tag), reading data files.
arrow::Result<BackfillState> ReadBackfillState(const delta::Snapshot& snapshot,
                                               const std::string& stream_app_id,
                                               const std::string& block_column);

/// \brief Merge overlapping and adjacent spans, sorted by first block.
std::vector<BlockSpan> MergeSpans(std::vector<BlockSpan> spans);

}  // namespace ampdelta::loader

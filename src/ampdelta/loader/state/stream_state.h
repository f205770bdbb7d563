#pragma once

/// \file stream_state.h
/// \brief A streaming load's state, kept in the Delta table itself (docs/streaming.md):
/// a `txn` action per stream (its app id and a commit counter) and, on every data file,
/// the block ranges of the microbatches whose rows it may hold (`add.tags`, a JSON array:
/// a superset, merged as a set by rewrites). Rows carry `_amp_batch_id`. The stream's own
/// compaction coalesces the ranges of the files it merges into spans (a second tag), so
/// what a file records stays small however many microbatches it holds.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/loader/state/stream_cursor_log.h"
#include "ampdelta/loader/state/stream_tags.h"

namespace ampdelta::loader {

/// \brief The stream's app id for `txn`: stable for a query, different across queries.
std::string StreamAppId(const std::string& sql);

/// \brief What the table says about a stream.
struct StreamState {
  /// The stream's last committed `txn` version (its commit counter); nullopt: never ran.
  std::optional<int64_t> txn_version;
  /// Every block range recorded on a live file, per network, sorted by start,
  /// deduplicated.
  std::map<std::string, std::vector<amp::BlockRange>> ranges;
  /// The first block the stream owns per network after taking the table over from
  /// another writer (takeover.h); rows of untagged files below it are not its own.
  std::map<std::string, uint64_t> takeover_blocks;
  /// Networks taken over by an older ampdelta (takeover.h: a legacy record), whose seed
  /// is the block before the takeover block…
  std::set<std::string> legacy_takeovers;
  /// …unless the takeover block follows the last block of this query's backfill
  /// (backfill_state.h): that block is final, so the seed is the takeover block itself
  /// and the backfill's rows are never re-sent.
  std::set<std::string> backfill_handoffs;

  /// \brief The range a network resumes after when the stream took the table over and
  /// has recorded nothing there yet: its first block, with a hash no chain has, so the
  /// server sends that block again (ampd restarts at an unknown cursor's own number). A
  /// legacy takeover's is the block before (not after a backfill), which the server
  /// re-sends and the stream replaces as a rewind, by block number.
  std::vector<amp::BlockRange> TakeoverSeeds() const;

  /// \brief Return true when `network`'s seed is re-sent as a rewind of rows the stream
  /// must replace (a legacy takeover not after a backfill).
  bool SeedIsRewind(const std::string& network) const;

  /// Every span recorded on a live file, per network, sorted by start, deduplicated.
  std::map<std::string, std::vector<amp::BlockRange>> spans;
  /// What the stream has recorded per network, as the log's cursor record keeps it
  /// (stream_cursor_log.h): the log's record when it holds progress the tags lost,
  /// otherwise made from the tags. Commits advance it.
  CursorLog cursor_log;
  /// Networks whose rows the stream owns in files without its tags (another engine
  /// compacted them), from this block on: a reorg there is undone by block number.
  std::map<std::string, uint64_t> untagged_from;
  /// How many other streams record their cursor in the table's log: rows without tags
  /// could then be theirs, and are never undone by block number.
  int other_streams = 0;

  /// \brief Return true when a live file records a range or span of the stream.
  bool HasRecords() const { return !ranges.empty() || !spans.empty(); }
  /// \brief Return the first block recorded on `network`, if any.
  std::optional<uint64_t> FirstRecordedBlock(const std::string& network) const;
  /// \brief Return the ranges and spans of `network` in block order.
  std::vector<amp::BlockRange> Recorded(const std::string& network) const;

  /// \brief Return the cursor after the newest recorded range or span of every network
  /// (or its takeover seed).
  amp::Cursor ResumeCursor() const;
};

/// \brief Read a stream's state from a snapshot (nullptr: a table that does not exist).
/// The log's cursor record counts where it is ahead of the tags and files without them
/// hold rows past what the tags record (by `block_column`'s statistics; without one, any
/// such rows): another engine's compaction dropped the tags. Otherwise a restore or
/// delete took the progress back, and the tags are what the table holds.
arrow::Result<StreamState> ReadStreamState(const delta::Snapshot* snapshot,
                                           const std::string& app_id,
                                           const std::string& block_column = {});

/// \brief Return true when one of `file`'s recorded ranges or spans (of stream `app_id`)
/// is on `network` and ends at or after `from` (its rows may be invalidated by a reorg
/// from `from`).
arrow::Result<bool> FileReachesBlock(const delta::Add& file, const std::string& app_id,
                                     const std::string& network, uint64_t from);

/// \brief Return a kCommitConflict error with subcode `rolled_back` when a commit after
/// `before` removed (as a data change) a file that held stream `app_id`'s progress in
/// `before`: the refreshed state is what to resume from, not the stream's position in
/// memory. OK when either snapshot is missing or nothing was committed in between.
arrow::Status CheckProgressKept(const delta::Snapshot* before,
                                const delta::Snapshot* after, const std::string& app_id);

}  // namespace ampdelta::loader

#pragma once

/// \file reorg_undo.h
/// \brief Undoing a reorg in a table: from a snapshot, the stream's recorded state and
/// the invalidated ranges to the actions that remove the invalidated microbatches' rows.
/// No server and no commit: the stream loader commits what this stages.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/loader/state/stream_state.h"

namespace ampdelta::loader {

/// \brief What a reorg invalidates of a stream's records: every recorded range or span of
/// a fork's network that ends at or after the fork's first block.
struct Invalidation {
  /// The batch ids of the invalidated microbatch ranges (rows found by `_amp_batch_id`).
  std::set<std::string> batch_ids;
  /// The invalidated spans (rows found by block number; all of a span goes).
  std::vector<amp::BlockRange> spans;

  bool empty() const { return batch_ids.empty() && spans.empty(); }
  /// \brief Return true when `range` (a recorded range or span) is invalidated.
  bool Covers(const amp::BlockRange& range) const;
};

/// \brief Return what the forks `invalidated` invalidate of `state`.
Invalidation Invalidate(const StreamState& state,
                        const std::vector<amp::BlockRange>& invalidated);

/// \brief What StageUndo staged.
struct UndoStaged {
  int64_t rows_removed = 0;
  /// Files whose recorded ranges reach a fork (rewritten, removed or re-tagged).
  int64_t files_touched = 0;
  /// Files rewritten without the invalidated rows (some of their rows stay).
  int64_t files_rewritten = 0;
  /// Files that stay with their invalidated rows marked in a deletion vector (tables with
  /// `delta.enableDeletionVectors`).
  int64_t files_marked = 0;
  /// The newest surviving recorded range per network: what the table must still record
  /// after the undo commits.
  std::vector<amp::BlockRange> surviving;
  /// The ranges and spans the rewritten files keep: the writer's file tags name them. A
  /// commit that also adds new rows (a replacement) writes them into the same files,
  /// whose tags then name both.
  std::vector<amp::BlockRange> kept_ranges;
  std::vector<amp::BlockRange> kept_spans;
};

/// \brief Stage in `writer` (an append opened on `snapshot`) the undo of `undo`: a file
/// holding rows of its microbatches (by `_amp_batch_id`) or of its spans (by
/// `block_column`) is removed, and rewritten with its other rows and their ranges and
/// spans as tags; a file whose tags name them but that holds none of their rows (its
/// commit group's tags are a superset) is only re-tagged.
///
/// \return what was staged; ErrorCode::kInvalidInput when the table has no
///   `_amp_batch_id` column, or (for spans) no block column, to find the rows by
arrow::Result<UndoStaged> StageUndo(const delta::Snapshot& snapshot,
                                    const std::string& app_id, const StreamState& state,
                                    const std::vector<amp::BlockRange>& invalidated,
                                    const Invalidation& undo,
                                    const std::string& block_column,
                                    delta::TableWriter* writer);

}  // namespace ampdelta::loader

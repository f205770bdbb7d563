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
#include "ampdelta/loader/stream_state.h"

namespace ampdelta::loader {

/// \brief Return the batch ids of the recorded microbatches a reorg invalidates: every
/// recorded range of a fork's network that ends at or after the fork's first block.
std::set<std::string> InvalidatedBatchIds(
    const StreamState& state, const std::vector<amp::BlockRange>& invalidated);

/// \brief What StageUndo staged.
struct UndoStaged {
  int64_t rows_removed = 0;
  /// Files whose recorded ranges reach a fork (rewritten, removed or re-tagged).
  int64_t files_touched = 0;
  /// Files rewritten without the invalidated rows (some of their rows stay).
  int64_t files_rewritten = 0;
  /// The newest surviving recorded range per network: what the table must still record
  /// after the undo commits.
  std::vector<amp::BlockRange> surviving;
};

/// \brief Stage in `writer` (an append opened on `snapshot`) the undo of the microbatches
/// `ids`: a file holding their rows is removed, and rewritten with its other rows and
/// their ranges as tags; a file whose tags name them but that holds none of their rows
/// (its commit group's tags are a superset) is only re-tagged.
///
/// \return what was staged; ErrorCode::kInvalidInput when the table has no
///   `_amp_batch_id` column to find the rows by
arrow::Result<UndoStaged> StageUndo(const delta::Snapshot& snapshot,
                                    const std::string& app_id, const StreamState& state,
                                    const std::vector<amp::BlockRange>& invalidated,
                                    const std::set<std::string>& ids,
                                    delta::TableWriter* writer);

}  // namespace ampdelta::loader

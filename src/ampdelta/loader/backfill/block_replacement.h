#pragma once

/// \file block_replacement.h
/// \brief A load of Arrow data that replaces the table's rows of a block range in its one
/// commit: a partition of the Python SDK's parallel load, which keeps no record of what
/// it finished, run again replaces itself instead of loading its blocks twice.

#include <cstdint>
#include <memory>

#include <arrow/record_batch.h>

#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/loader/common/load_result.h"
#include "ampdelta/loader/state/backfill_state.h"

namespace ampdelta::loader {

/// \brief Append `reader` in one commit that also removes the table's rows of `blocks`
/// (by `options.block_column`) that no stream recorded: a stream's rows are the
/// stream's to replace. Concurrent partitions replacing blocks of one file (a
/// compaction packs partitions together) conflict; the loser plans its removal again on
/// the winner's table and retries, from a local spool of its rows (the reader is read
/// once). Refused (kInvalidInput, the table untouched): another mode than append,
/// `options.commit_every_rows` (its earlier commits would hold the blocks twice), a
/// span past INT64_MAX, a row whose block is null or outside the span (a rerun would
/// not replace it).
LoadResult LoadReplacingBlocks(const std::shared_ptr<arrow::RecordBatchReader>& reader,
                               const DeltaLakeConfig& config, const LoadOptions& options,
                               BlockSpan blocks);

}  // namespace ampdelta::loader

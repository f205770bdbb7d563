#pragma once

/// \file batch_loader.h
/// \brief Run a batch query on Amp and load its result into a Delta table as one commit:
/// data files stream out as batches arrive, readers see the whole load or nothing.

#include <memory>
#include <string>

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/loader/common/load_result.h"

namespace ampdelta::loader {

/// \brief Load the result of `sql` into the configured table. Never throws; failures
/// come back as a LoadResult with success=false and the table left as it was.
///
/// Transient server failures (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED,
/// ABORTED), before or during the stream, rerun the query with back-off per
/// `config.retry`, as long as nothing of this load has been committed yet (with
/// commit_every_rows, later failures are reported with the rows already committed).
LoadResult LoadBatch(amp::Client& client, const std::string& sql,
                     const DeltaLakeConfig& config, const LoadOptions& options);

/// \brief Load Arrow data handed to the engine (a Python table, a DataFrame, a reader of
/// any size) into the configured table as one commit, in every mode LoadBatch has: the
/// batches are written as `reader` yields them (a merge collects them first). Read once,
/// so never retried; a failure or a batch whose schema differs from the reader's commits
/// nothing. Never throws.
LoadResult LoadRecordBatches(const std::shared_ptr<arrow::RecordBatchReader>& reader,
                             const DeltaLakeConfig& config, const LoadOptions& options);

}  // namespace ampdelta::loader

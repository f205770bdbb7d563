#pragma once

/// \file read_ahead.h
/// \brief A scan of a block range whose rows are made ahead of the client on several
/// threads: the range is cut into pieces of consecutive blocks, each generated (or read)
/// and transformed by the query on a worker, and the pieces' batches come out in block
/// order. A single stream then carries what Flight can carry instead of what one core
/// can generate (a synthetic chain's rows, a Parquet dataset's decoding, evm_decode_log).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/devserver/dataset.h"

namespace ampdelta::devserver {

/// \brief How far ahead a scan works.
struct ReadAheadOptions {
  /// Worker threads (at least 1).
  int threads = 1;
  /// Blocks per piece where the dataset has no unit of its own (Dataset::ScanPieces).
  uint64_t piece_blocks = 256;
  /// Pieces made ahead of the one being sent, per thread: what bounds memory.
  int pieces_per_thread = 2;
};

/// \brief What is applied to every batch a piece yields, on its worker (the query's
/// projection, filters and functions); must be thread-safe.
using BatchTransform = std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>(
    const std::shared_ptr<arrow::RecordBatch>&)>;

/// \brief Return an iterator over `table`'s rows for `range`, `transform`ed, in block
/// order. `dataset` must outlive it; destroying it stops the workers (pieces in progress
/// finish first).
std::unique_ptr<BatchIterator> ReadAhead(const Dataset& dataset, std::string table,
                                         ScanRange range, BatchTransform transform,
                                         ReadAheadOptions options);

}  // namespace ampdelta::devserver

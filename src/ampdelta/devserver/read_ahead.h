#pragma once

/// \file read_ahead.h
/// \brief A scan of a block range whose rows are made ahead of the client on several
/// threads: the range is cut into pieces of consecutive blocks, each generated (or read)
/// and transformed by the query on a worker, and the pieces' batches come out in block
/// order. A single stream then carries what Flight can carry instead of what one core
/// can generate (a synthetic chain's rows, a Parquet dataset's decoding, evm_decode_log).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/devserver/dataset.h"

namespace ampdelta::devserver {

/// \brief The rows made for pieces, kept for the next scan of the same piece of the same
/// chain view (a benchmark's repeated query): a server that then serves from memory, as a
/// Flight server holding the batches would. Pieces are kept until `budget_bytes` are
/// held; later ones are made every time. Thread-safe.
class PieceCache {
 public:
  explicit PieceCache(int64_t budget_bytes) : budget_bytes_(budget_bytes) {}

  using Batches = std::vector<std::shared_ptr<arrow::RecordBatch>>;
  /// \brief Return the rows kept for `piece` of `table` in `dataset`, if any.
  std::optional<Batches> Find(const Dataset& dataset, const std::string& table,
                              const ScanRange& piece) const;
  /// \brief Keep `batches` as `piece`'s rows while the budget allows.
  void Put(const Dataset& dataset, const std::string& table, const ScanRange& piece,
           const Batches& batches);
  /// \brief Return the bytes held.
  int64_t bytes() const;

 private:
  // A piece is the same only under a view of the same version (a reorg makes another).
  using Key = std::tuple<const Dataset*, std::string, uint64_t, uint64_t, uint64_t>;
  static Key KeyOf(const Dataset& dataset, const std::string& table,
                   const ScanRange& piece);

  const int64_t budget_bytes_;
  mutable std::mutex mutex_;
  std::map<Key, Batches> entries_;
  int64_t bytes_ = 0;
};

/// \brief How far ahead a scan works.
struct ReadAheadOptions {
  /// Worker threads (at least 1).
  int threads = 1;
  /// Blocks per piece where the dataset has no unit of its own (Dataset::ScanPieces).
  uint64_t piece_blocks = 256;
  /// Pieces made ahead of the one being sent, per thread: what bounds memory.
  int pieces_per_thread = 2;
  /// Where made pieces are kept and found again (null: none).
  PieceCache* cache = nullptr;
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

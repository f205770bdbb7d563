#pragma once

/// \file dataset.h
/// \brief What the dev server serves: datasets of block-indexed tables on one network.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::devserver {

/// \brief An inclusive block range as the server announces it in app_metadata.
struct ServedRange {
  uint64_t start = 0;
  uint64_t end = 0;
  /// Hash of the end block, `0x` + 64 hex digits.
  std::string hash;
  /// Parent hash of the start block.
  std::string prev_hash;
  /// Unix seconds of the end block.
  std::optional<uint64_t> timestamp;
};

/// \brief A dataset's consistent view of its chain, captured with a range; opaque to the
/// server, interpreted only by the dataset that made it.
class ChainView {
 public:
  virtual ~ChainView() = default;
  /// \brief Views of one dataset with the same version show the same rows (a synthetic
  /// chain counts its reorgs; a static dataset has one version).
  virtual uint64_t version() const { return 0; }
};

/// \brief A range to serve, with the view its rows must be generated from.
struct ScanRange {
  ServedRange range;
  std::shared_ptr<const ChainView> view;
};

/// \brief A client's position: the last block it completed and that block's hash.
struct ChainPosition {
  uint64_t number = 0;
  std::string hash;
};

/// \brief Pull-style iterator over record batches; a null batch marks the end.
class BatchIterator {
 public:
  virtual ~BatchIterator() = default;
  /// \brief Return the next batch, or nullptr at the end.
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() = 0;
};

/// \brief A dataset: named tables indexed by block number on one network.
/// Implementations are thread-safe.
class Dataset {
 public:
  virtual ~Dataset() = default;

  /// \brief Return the dataset's name, as written in SQL (e.g. `acme/eth_mainnet`).
  virtual const std::string& name() const = 0;
  /// \brief Return the network its blocks belong to (e.g. `mainnet`).
  virtual const std::string& network() const = 0;
  /// \brief Return the table names.
  virtual std::vector<std::string> table_names() const = 0;
  /// \brief Return a table's schema, or KeyError.
  virtual arrow::Result<std::shared_ptr<arrow::Schema>> TableSchema(
      const std::string& table) const = 0;

  /// \brief Return everything synced now (for batch queries), or nullopt when empty.
  virtual std::optional<ScanRange> Synced() const = 0;

  /// \brief Return the microbatch that follows `previous` (from the earliest block when
  /// absent), spanning at most `max_blocks`; when `previous` is no longer canonical, the
  /// range restarts at the fork (a reorg as the client sees it). Nullopt when no new
  /// block exists yet.
  virtual std::optional<ScanRange> NextMicrobatch(
      const std::optional<ChainPosition>& previous, uint64_t max_blocks) const = 0;

  /// \brief Return a counter that changes whenever the chain changes (new head, reorg).
  virtual uint64_t change_counter() const = 0;

  /// \brief Wait until change_counter() differs from `seen` or `timeout` passes.
  virtual void WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const = 0;

  /// \brief Iterate the rows of `table` for blocks [range.start, range.end] in block
  /// order.
  virtual arrow::Result<std::unique_ptr<BatchIterator>> Scan(
      const std::string& table, const ScanRange& range) const = 0;

  /// \brief Cut `range` into consecutive, disjoint pieces that scans of `table` can make
  /// independently (read_ahead.h): by default of `piece_blocks` blocks each; a dataset
  /// whose scans have a natural unit (a file) cuts there instead.
  virtual std::vector<ScanRange> ScanPieces(const std::string& table,
                                            const ScanRange& range,
                                            uint64_t piece_blocks) const {
    (void)table;
    std::vector<ScanRange> pieces;
    const uint64_t step = std::max<uint64_t>(piece_blocks, 1);
    for (uint64_t start = range.range.start; start <= range.range.end; start += step) {
      const bool last = range.range.end - start < step;
      ScanRange piece = range;
      piece.range.start = start;
      piece.range.end = last ? range.range.end : start + step - 1;
      pieces.push_back(std::move(piece));
      if (last) break;
    }
    return pieces;
  }
};

}  // namespace ampdelta::devserver

#pragma once

/// \file parquet_dataset.h
/// \brief Serve a folder of Parquet files written by Amp as a dataset.
///
/// Layout (Amp's snapshot layout): `<dir>/<table>/<revision>/<start>-<id>.parquet`. The
/// newest revision folder of each table is served. Each file's block ranges come from the
/// `nozzle_metadata` key-value entry Amp writes; streaming queries get one microbatch per
/// distinct file range. The data never changes, so there are no reorgs.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ampdelta/devserver/dataset.h"

namespace ampdelta::devserver {

/// \brief A read-only dataset backed by Parquet files. Thread-safe.
class ParquetDataset : public Dataset {
 public:
  /// \brief Index `dir` (schemas and block ranges only; rows are read when scanned).
  static arrow::Result<std::shared_ptr<ParquetDataset>> Open(const std::string& name,
                                                             const std::string& dir);

  const std::string& name() const override { return name_; }
  const std::string& network() const override { return network_; }
  std::vector<std::string> table_names() const override;
  arrow::Result<std::shared_ptr<arrow::Schema>> TableSchema(
      const std::string& table) const override;
  std::optional<ScanRange> Synced() const override;
  std::optional<ScanRange> NextMicrobatch(const std::optional<ChainPosition>& previous,
                                          uint64_t max_blocks) const override;
  uint64_t change_counter() const override { return 0; }
  void WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const override;
  /// \brief Pieces that start where the table's files do: each piece reads only the files
  /// it overlaps, once (files that overlap one another are read by each of their pieces,
  /// filtered to its blocks).
  std::vector<ScanRange> ScanPieces(const std::string& table, const ScanRange& range,
                                    uint64_t piece_blocks) const override;
  arrow::Result<std::unique_ptr<BatchIterator>> Scan(
      const std::string& table, const ScanRange& range) const override;

  /// \brief One indexed file.
  struct File {
    std::string path;
    ServedRange range;
    int64_t num_rows = 0;
  };

 private:
  struct Table {
    std::shared_ptr<arrow::Schema> schema;
    std::vector<File> files;  // sorted by range start
  };

  ParquetDataset() = default;
  // Index every block's hash and time from the `blocks` table, when there is one.
  arrow::Status IndexBlocks();
  // The range [start, end] as served: its end hash and the hash before its start.
  ServedRange RangeOf(uint64_t start, uint64_t end) const;

  struct Block {
    std::string hash;
    std::optional<uint64_t> timestamp;
  };

  std::string name_;
  std::string network_;
  std::map<std::string, Table> tables_;
  /// Distinct block ranges over all tables, sorted and contiguous.
  std::vector<ServedRange> ranges_;
  /// Every block of the `blocks` table; empty when the dataset has none (then
  /// microbatches are the files' ranges as written).
  std::map<uint64_t, Block> blocks_;
};

}  // namespace ampdelta::devserver

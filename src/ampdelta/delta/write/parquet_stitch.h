#pragma once

/// \file parquet_stitch.h
/// \brief Parquet files concatenated without decoding them: their encoded row groups
/// copied byte for byte into one file, behind a footer (and page indexes) whose offsets
/// name their new places. Compaction does this to files whose row groups are large
/// already (a parallel backfill's partitions): merging them then costs a copy, not a
/// decode and an encode.

#include <cstdint>
#include <memory>
#include <vector>

#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <parquet/metadata.h>

namespace ampdelta::delta {

/// \brief One file to stitch: its bytes and its footer (ReadParquetFooter).
struct StitchInput {
  std::shared_ptr<arrow::io::RandomAccessFile> file;
  std::shared_ptr<parquet::FileMetaData> footer;
};

/// \brief What a stitch wrote.
struct StitchedFile {
  int64_t bytes = 0;
  int64_t rows = 0;
  int64_t row_groups = 0;
};

/// \brief Read the footer of the Parquet file `file`.
arrow::Result<std::shared_ptr<parquet::FileMetaData>> ReadParquetFooter(
    const std::shared_ptr<arrow::io::RandomAccessFile>& file);

/// \brief OK when the files with these footers can be stitched: one schema (columns,
/// types, Arrow schema metadata), one format version and writer, no encryption, bloom
/// filters or column-chunk metadata the copy would not carry, column chunks that lie
/// one after another in each row group. Otherwise NotImplemented naming the first
/// difference (the caller then rewrites the rows).
arrow::Status CheckStitchable(const std::vector<StitchInput>& inputs);

/// \brief Write to `sink` one Parquet file holding the row groups of `inputs`, in order:
/// each row group's bytes copied, their statistics, encodings and column indexes kept,
/// offset indexes moved with them. Fails as CheckStitchable does for files it cannot
/// stitch.
arrow::Result<StitchedFile> StitchParquetFiles(const std::vector<StitchInput>& inputs,
                                               arrow::io::OutputStream* sink);

}  // namespace ampdelta::delta

#pragma once

/// \file column_plan.h
/// \brief How a data file's columns are encoded, decided from a sample of its first rows:
/// which skip the dictionary (mostly distinct values), which skip compression (bytes the
/// codec cannot shrink). Pure functions of the sample and the options, testable alone.

#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>
#include <parquet/properties.h>

#include "ampdelta/delta/write/data_file_options.h"

namespace ampdelta::delta {

/// \brief The encoding choices for one file's top-level columns.
struct ColumnPlan {
  // Mostly-distinct columns (hashes, signatures, ids): no dictionary, no min/max.
  std::vector<std::string> plain;
  // Values the codec cannot shrink (random bytes): stored uncompressed.
  std::vector<std::string> uncompressed;
  bool empty() const { return plain.empty() && uncompressed.empty(); }
};

/// \brief Plan a file's columns from `sample` (its first rows).
///
/// Top-level columns whose first rows are mostly distinct (hashes, signatures, ids): a
/// dictionary would not shrink them and costs encoding time, so they are written plain.
/// Columns that repeat (block hashes, addresses, flags) keep their dictionary. Plain
/// binary columns the codec cannot shrink by 10% (random hashes and signatures) skip
/// compression: the file is as large, and compressing them was most of the codec's time.
arrow::Result<ColumnPlan> PlanColumns(const arrow::RecordBatch& sample,
                                      const DataFileOptions& options);

/// \brief Return the Parquet writer properties for `plan` under `options`, for a file of
/// `data_schema` (the columns stored in the file: no partition columns).
std::shared_ptr<parquet::WriterProperties> MakeWriterProperties(
    const ColumnPlan& plan, const DataFileOptions& options,
    const arrow::Schema& data_schema);

/// \brief Return Parquet's codec for `codec`.
parquet::Compression::type ToParquetCompression(Codec codec);

}  // namespace ampdelta::delta

#pragma once

/// \file arrow_data.h
/// \brief Arrow data crossing between the extension and Python through the Arrow
/// PyCapsule interface only ("arrow_array_stream", "arrow_schema", "arrow_array"
/// capsules): the extension carries its own Arrow C++ and never touches pyarrow's, so any
/// producer or consumer (pyarrow of any version, Polars, DuckDB, arro3) can be on the
/// other side.

#include <memory>
#include <optional>

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/table.h>
#include <nanobind/nanobind.h>

namespace ampdelta::python {

/// \brief Take over the stream of an "arrow_array_stream" capsule (the capsule is left
/// released, as the interface asks of a consumer). Needs the GIL.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ImportStreamCapsule(
    nanobind::handle capsule);

/// \brief One record batch from "arrow_schema" and "arrow_array" capsules (a struct
/// array, as `__arrow_c_array__` of a record batch gives), as a one-batch reader. Needs
/// the GIL.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ImportArrayCapsules(
    nanobind::handle schema_capsule, nanobind::handle array_capsule);

/// \brief `reader` as a new "arrow_array_stream" capsule. Needs the GIL.
arrow::Result<nanobind::capsule> ExportStreamCapsule(
    const std::shared_ptr<arrow::RecordBatchReader>& reader);

/// \brief `schema` as a new "arrow_schema" capsule. Needs the GIL.
arrow::Result<nanobind::capsule> ExportSchemaCapsule(const arrow::Schema& schema);

/// \brief A table held by the extension (`to_arrow()` without pyarrow): exported as a
/// new stream each time it is asked for, so consumers may read it any number of times.
class HeldTable {
 public:
  explicit HeldTable(std::shared_ptr<arrow::Table> table) : table_(std::move(table)) {}
  /// \brief Read `reader` to its end (the caller has released the GIL).
  static arrow::Result<HeldTable> Collect(
      const std::shared_ptr<arrow::RecordBatchReader>& reader);

  const std::shared_ptr<arrow::Table>& table() const { return table_; }
  /// \brief A new stream over the table. A consumer's requested schema is not applied:
  /// the interface lets a producer give its own schema instead.
  arrow::Result<nanobind::capsule> ExportStream() const;

 private:
  std::shared_ptr<arrow::Table> table_;
};

/// \brief A stream read batch by batch by the extension (iterating a result without
/// pyarrow): each batch a HeldTable.
class HeldReader {
 public:
  explicit HeldReader(std::shared_ptr<arrow::RecordBatchReader> reader)
      : reader_(std::move(reader)) {}
  /// \brief The next batch, or nullopt at the end (the caller has released the GIL).
  arrow::Result<std::optional<HeldTable>> Next();

 private:
  std::shared_ptr<arrow::RecordBatchReader> reader_;
};

}  // namespace ampdelta::python

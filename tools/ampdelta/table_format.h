#pragma once

/// \file table_format.h
/// \brief Human-readable rendering of Arrow data for the CLI.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/type_fwd.h>

namespace ampdelta::cli {

/// \brief Render one value: hashes as 0x-hex, timestamps as `YYYY-MM-DD HH:MM:SS UTC`.
std::string FormatValue(const arrow::Array& array, int64_t index);

/// \brief Render a short type name in Polars' style (u64, datetime[μs, UTC], binary, …).
std::string FormatType(const arrow::DataType& type);

/// \brief Render rows as a box table with a `shape: (rows, columns)` header, the way the
/// Python SDK's docs show Polars output.
std::string FormatTable(const std::shared_ptr<arrow::Schema>& schema,
                        const std::vector<std::vector<std::string>>& rows);

/// \brief Collect the formatted cells of the given rows of a batch.
std::vector<std::vector<std::string>> FormatRows(const arrow::RecordBatch& batch,
                                                 const std::vector<int64_t>& indices);

}  // namespace ampdelta::cli

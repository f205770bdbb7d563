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

/// \brief Quote `text` as an RFC 4180 field when it holds a comma, a double quote, CR or
/// LF (quotes doubled); an empty text becomes `""`, so it differs from a null.
std::string CsvQuote(const std::string& text);

/// \brief Render one value as an RFC 4180 field: a null is an empty field, other values
/// are FormatValue's text, quoted as CsvQuote says.
std::string CsvField(const arrow::Array& array, int64_t index);

/// \brief The line ending of every CSV record (RFC 4180: CRLF).
inline constexpr const char* kCsvLineEnd = "\r\n";

/// \brief Return the header record (the column names) of `schema`, with its line ending.
std::string CsvHeader(const arrow::Schema& schema);

/// \brief Return the records of every row of `batch`, each with its line ending.
std::string CsvRecords(const arrow::RecordBatch& batch);

/// \brief Collect the formatted cells of the given rows of a batch.
std::vector<std::vector<std::string>> FormatRows(const arrow::RecordBatch& batch,
                                                 const std::vector<int64_t>& indices);

}  // namespace ampdelta::cli

#pragma once

/// \file reader_support.h
/// \brief Which engines read which tables: the reader table features each known reader
/// reads, tested ones (Spark, DuckDB, Polars, deltalake: tests/interop/
/// test_reader_support.py reads a table of each feature with each) and ones taken from
/// their own documentation (Trino, Athena, Snowflake, BigQuery, Power BI). A write that
/// declares its readers (`--readers`, config `readers`) is refused when the table it
/// would leave needs a feature one of them cannot read (docs/downstream.md "Readers").

#include <map>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/table_feature.h"

namespace ampdelta::delta {

/// \brief One engine that reads Delta tables.
struct KnownReader {
  std::string name;
  /// The version tested here, or "documented" for a reader taken from its documentation.
  std::string tested;
  /// The reader features it reads; any other it cannot.
  std::vector<TableFeature> reads;
  /// The highest legacy reader version it opens (2: column mapping without features,
  /// read right only when `reads` has columnMapping).
  int max_legacy_reader_version = 2;
};

/// \brief The readers ampdelta knows, tested ones first.
const std::vector<KnownReader>& KnownReaders();

/// \brief Return the names in `given` as known readers' names (lower case, each once).
/// \return InvalidInput naming an unknown reader and listing the known ones
arrow::Result<std::vector<std::string>> ParseReaderNames(
    const std::vector<std::string>& given);

/// \brief Return what the reader named `reader` cannot read of a table with `protocol`
/// and table properties `configuration`: reader features, a legacy reader version, or
/// column mapping at reader version 2; empty when it reads the table.
std::vector<std::string> UnreadableBy(
    const std::string& reader, const Protocol& protocol,
    const std::map<std::string, std::string>& configuration);

/// \brief Refuse a table with `protocol` and `configuration` when one of `readers`
/// cannot read it.
/// \return InvalidInput naming each reader and the features it cannot read
arrow::Status CheckReaders(const std::vector<std::string>& readers,
                           const Protocol& protocol,
                           const std::map<std::string, std::string>& configuration);

}  // namespace ampdelta::delta

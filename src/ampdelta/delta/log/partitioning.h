#pragma once

/// \file partitioning.h
/// \brief Hive-style partition folders and partition value serialisation
/// (PROTOCOL.md "Partition Value Serialization").

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

/// \brief Escape a value for a `col=value` folder name as Spark does (Hive's
/// escapePathName): control characters and `"#%'*/:=?\{[]^` become `%XX`.
std::string EscapePartitionPathValue(const std::string& value);

/// \brief Return true when `column` is one of `columns`, ignoring case (the log may spell
/// a partition column in another case than the schema).
bool IsPartitionColumn(const std::vector<std::string>& columns,
                       const std::string& column);

/// \brief Return the partition value of `column` in `values` (the exact key, else one
/// that differs only in case); nullopt when the file has none (null).
std::optional<std::string> FindPartitionValue(const NullableStringMap& values,
                                              const std::string& column);

/// \brief Return the partition value of the table column `field`: keyed by its physical
/// name under column mapping, else by its name (as above).
std::optional<std::string> FindPartitionValue(const NullableStringMap& values,
                                              const arrow::Field& field);

/// \brief Return the folder of a partition, `a=1/b=x` in partition-column order; null
/// values use `__HIVE_DEFAULT_PARTITION__`.
std::string PartitionFolder(const std::vector<std::string>& columns,
                            const NullableStringMap& values);

/// \brief Serialise one value of a partition column for `partitionValues`: numbers and
/// booleans as text, dates `YYYY-MM-DD`, timestamps ISO-8601 UTC with microseconds
/// (`2024-01-01T10:00:00.000000Z`), timestamp_ntz `YYYY-MM-DD HH:MM:SS.ffffff`, null as
/// nullopt.
/// \return Invalid for types that cannot partition a table (binary, nested, floats'
/// NaN…);
///   ErrorCode::kInvalidInput for a string that is not UTF-8
arrow::Result<std::optional<std::string>> SerializePartitionValue(
    const arrow::Array& array, int64_t row);

/// \brief Parse a serialised partition value back into a scalar of `type`.
arrow::Result<std::shared_ptr<arrow::Scalar>> ParsePartitionValue(
    const std::optional<std::string>& value,
    const std::shared_ptr<arrow::DataType>& type);

/// \brief Return true when `type` can be a partition column.
bool IsPartitionableType(const arrow::DataType& type);

}  // namespace ampdelta::delta

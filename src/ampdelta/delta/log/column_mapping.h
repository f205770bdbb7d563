#pragma once

/// \file column_mapping.h
/// \brief Column mapping (PROTOCOL.md "Column Mapping"): every field of a table in mode
/// `name` or `id` has a physical name (`delta.columnMapping.physicalName`) and an id
/// (`delta.columnMapping.id`). Data files name columns physically and carry the id as
/// Parquet's field_id; partition values and statistics are keyed by physical name. A
/// field without mapping metadata (an unmapped table, `_change_type`) is its own physical
/// name, so every function here is the identity on unmapped schemas.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief The configuration key of the mode, and of the largest id ever given.
inline constexpr char kColumnMappingModeKey[] = "delta.columnMapping.mode";
inline constexpr char kMaxColumnIdKey[] = "delta.columnMapping.maxColumnId";

enum class ColumnMappingMode : uint8_t { kNone, kName, kId };

/// \brief The mode a table configuration sets (`none` when unset).
/// \return Invalid naming the value when it is not none, name or id
arrow::Result<ColumnMappingMode> ColumnMappingModeOf(
    const std::map<std::string, std::string>& configuration);

/// \brief The mode's name as the configuration spells it: none, name or id.
const char* ColumnMappingModeName(ColumnMappingMode mode);

/// \brief Give every field (at any depth) that lacks an id or a physical name the next id
/// above `*max_id` and the physical name `col-<uuid>`, as Spark does; fields that have
/// both keep them. `*max_id` becomes the largest id given.
std::shared_ptr<arrow::Schema> AssignColumnMapping(const arrow::Schema& schema,
                                                   int64_t* max_id);

/// \brief The largest id of `schema` and of the configuration's maxColumnId.
int64_t MaxColumnId(const arrow::Schema& schema,
                    const std::map<std::string, std::string>& configuration);

/// \brief Check that every field has an id and a physical name, and that ids are unique.
/// \return Invalid (a corrupt log) naming the field
arrow::Status CheckColumnMapping(const arrow::Schema& schema);

/// \brief The schema data files get: every field named by its physical name, with its id
/// as `PARQUET:field_id`, no other metadata.
std::shared_ptr<arrow::Schema> PhysicalSchema(const arrow::Schema& logical);

/// \brief The physical name of the top-level column `logical` (compared
/// case-insensitively); `logical` when the schema has no such column.
std::string PhysicalColumnName(const arrow::Schema& schema, const std::string& logical);

/// \brief The physical path (`col-a.col-b`) of a dotted path of struct fields.
std::string PhysicalColumnPath(const arrow::Schema& schema,
                               const std::string& logical_path);

/// \brief `array` viewed as `type`, which differs from its type at most in field names
/// (the same buffers, no copy).
std::shared_ptr<arrow::Array> ViewAs(const std::shared_ptr<arrow::Array>& array,
                                     const std::shared_ptr<arrow::DataType>& type);

}  // namespace ampdelta::delta

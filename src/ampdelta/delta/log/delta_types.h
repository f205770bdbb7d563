#pragma once

/// \file delta_types.h
/// \brief Delta's names for Arrow types (PROTOCOL.md "Schema Serialization Format"), in
/// one place for the schema serialiser and for the messages that name a column's type.

#include <optional>
#include <string>

#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief Return Delta's name for a primitive type as a `schemaString` spells it
/// (`string`, `long`, `integer`, `short`, `byte`, `float`, `double`, `boolean`, `binary`,
/// `date`, `void`, `timestamp_ntz` and `timestamp` for microsecond timestamps without and
/// with a time zone, `decimal(p,s)` for decimal128); nullopt for nested types and for
/// types Delta cannot store.
std::optional<std::string> PrimitiveTypeName(const arrow::DataType& type);

/// \brief Return the Delta type name of an Arrow type as used in messages ("long", …).
///
/// Nested types are named by their kind ("array", "map", "struct"); a type Delta cannot
/// store, or a nested type holding one, by its Arrow spelling.
std::string DeltaTypeName(const arrow::DataType& type);

}  // namespace ampdelta::delta

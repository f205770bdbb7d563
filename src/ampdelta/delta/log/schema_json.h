#pragma once

/// \file schema_json.h
/// \brief A table schema's `schemaString` (PROTOCOL.md "Schema Serialization Format")
/// read into, and written from, an Arrow schema (schema.h says which Arrow types a table
/// schema uses).

#include <memory>
#include <string>
#include <string_view>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief Parse a `schemaString` into an Arrow schema.
arrow::Result<std::shared_ptr<arrow::Schema>> SchemaFromJson(
    std::string_view schema_string);

/// \brief Serialise a table schema as a `schemaString`.
/// \return Invalid when a field's type is not Delta-representable
arrow::Result<std::string> SchemaToJson(const arrow::Schema& schema);

}  // namespace ampdelta::delta

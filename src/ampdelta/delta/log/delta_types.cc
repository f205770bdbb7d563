#include "ampdelta/delta/log/delta_types.h"

#include <arrow/type.h>

namespace ampdelta::delta {
namespace {

// Whether the schema serialiser can write `type`: a nested type only when every type
// inside it can be written too, so that DeltaTypeName names no type a schema cannot hold.
bool Representable(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::LIST:
      return Representable(*static_cast<const arrow::ListType&>(type).value_type());
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(type);
      return Representable(*map.key_type()) && Representable(*map.item_type());
    }
    case arrow::Type::STRUCT:
      for (const auto& child : type.fields()) {
        if (!Representable(*child->type())) return false;
      }
      return true;
    default:
      return PrimitiveTypeName(type).has_value();
  }
}

}  // namespace

std::optional<std::string> PrimitiveTypeName(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::STRING:
      return "string";
    case arrow::Type::INT64:
      return "long";
    case arrow::Type::INT32:
      return "integer";
    case arrow::Type::INT16:
      return "short";
    case arrow::Type::INT8:
      return "byte";
    case arrow::Type::FLOAT:
      return "float";
    case arrow::Type::DOUBLE:
      return "double";
    case arrow::Type::BOOL:
      return "boolean";
    case arrow::Type::BINARY:
      return "binary";
    case arrow::Type::DATE32:
      return "date";
    case arrow::Type::NA:
      return "void";
    case arrow::Type::TIMESTAMP: {
      const auto& ts = static_cast<const arrow::TimestampType&>(type);
      if (ts.unit() != arrow::TimeUnit::MICRO) return std::nullopt;
      if (ts.timezone().empty()) return "timestamp_ntz";
      return "timestamp";
    }
    case arrow::Type::DECIMAL128: {
      const auto& dec = static_cast<const arrow::Decimal128Type&>(type);
      return "decimal(" + std::to_string(dec.precision()) + "," +
             std::to_string(dec.scale()) + ")";
    }
    default:
      return std::nullopt;
  }
}

std::string DeltaTypeName(const arrow::DataType& type) {
  if (!Representable(type)) return type.ToString();
  switch (type.id()) {
    case arrow::Type::LIST:
      return "array";
    case arrow::Type::MAP:
      return "map";
    case arrow::Type::STRUCT:
      return "struct";
    default:
      return *PrimitiveTypeName(type);
  }
}

}  // namespace ampdelta::delta

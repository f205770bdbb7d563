// The schema's JSON form (PROTOCOL.md "Schema Serialization Format") and its Arrow
// types, in both directions.

#include "ampdelta/delta/log/schema_json.h"

#include <optional>
#include <string>
#include <utility>

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

arrow::Status BadSchema(const std::string& what) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                   "invalid Delta schema: ", what);
}

arrow::Result<std::shared_ptr<arrow::DataType>> TypeFromJson(const json& type);

arrow::Result<std::shared_ptr<arrow::Field>> FieldFromJson(const json& field) {
  if (!field.is_object() || !field.contains("name") || !field["name"].is_string() ||
      !field.contains("type")) {
    return BadSchema("field without name/type: " +
                     json_util::DumpJsonLossy(field).substr(0, 200));
  }
  ARROW_ASSIGN_OR_RAISE(auto type, TypeFromJson(field["type"]));
  // json::value() would throw on a nullable that is not a boolean.
  const std::optional<bool> nullable = json_util::BoolOr(field, "nullable", true);
  if (!nullable) return BadSchema("'nullable' of a field is not a boolean");
  std::shared_ptr<arrow::KeyValueMetadata> metadata;
  if (field.contains("metadata") && field["metadata"].is_object() &&
      !field["metadata"].empty()) {
    metadata = std::make_shared<arrow::KeyValueMetadata>();
    for (auto it = field["metadata"].begin(); it != field["metadata"].end(); ++it) {
      metadata->Append(it.key(), it->dump());
    }
  }
  return arrow::field(field["name"].get<std::string>(), std::move(type), *nullable,
                      std::move(metadata));
}

// Precision and scale of "decimal(p,s)", blanks allowed around the numbers as Spark's
// parser allows them (sscanf's %d would be undefined behaviour beyond int).
std::optional<std::pair<int64_t, int64_t>> ParseDecimalName(std::string_view name) {
  constexpr std::string_view kOpen = "decimal(";
  if (name.substr(0, kOpen.size()) != kOpen || name.back() != ')') return std::nullopt;
  const std::string_view inner =
      name.substr(kOpen.size(), name.size() - kOpen.size() - 1);
  const size_t comma = inner.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  auto trim = [](std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    return text;
  };
  auto precision = ParseInt64(trim(inner.substr(0, comma)));
  auto scale = ParseInt64(trim(inner.substr(comma + 1)));
  if (!precision || !scale) return std::nullopt;
  return std::pair<int64_t, int64_t>{*precision, *scale};
}

arrow::Result<std::shared_ptr<arrow::DataType>> PrimitiveFromName(
    const std::string& name) {
  if (name == "string") return arrow::utf8();
  if (name == "long") return arrow::int64();
  if (name == "integer") return arrow::int32();
  if (name == "short") return arrow::int16();
  if (name == "byte") return arrow::int8();
  if (name == "float") return arrow::float32();
  if (name == "double") return arrow::float64();
  if (name == "boolean") return arrow::boolean();
  if (name == "binary") return arrow::binary();
  if (name == "date") return arrow::date32();
  if (name == "timestamp") return arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
  if (name == "timestamp_ntz") return arrow::timestamp(arrow::TimeUnit::MICRO);
  if (name == "void") return arrow::null();
  if (name == "variant") {
    // Stored as a struct of the binary metadata and value (PROTOCOL.md "Variant Data
    // Type").
    return arrow::struct_({arrow::field("value", arrow::binary(), false),
                           arrow::field("metadata", arrow::binary(), false)});
  }
  if (name.rfind("decimal", 0) == 0) {
    std::pair<int64_t, int64_t> precision_scale{10, 0};
    if (name != "decimal") {
      auto parsed = ParseDecimalName(name);
      if (!parsed) return BadSchema("bad decimal type '" + name + "'");
      precision_scale = *parsed;
    }
    const auto [precision, scale] = precision_scale;
    if (precision < 1 || precision > 38 || scale < 0 || scale > precision) {
      return BadSchema("decimal precision/scale out of range in '" + name + "'");
    }
    return arrow::decimal128(static_cast<int32_t>(precision),
                             static_cast<int32_t>(scale));
  }
  return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                   "unsupported Delta type '", name, "'");
}

arrow::Result<std::shared_ptr<arrow::DataType>> TypeFromJson(const json& type) {
  if (type.is_string()) return PrimitiveFromName(type.get<std::string>());
  if (!type.is_object() || !type.contains("type") || !type["type"].is_string()) {
    return BadSchema("bad type: " + json_util::DumpJsonLossy(type).substr(0, 200));
  }
  const std::string kind = type["type"].get<std::string>();
  if (kind == "struct") {
    if (!type.contains("fields") || !type["fields"].is_array()) {
      return BadSchema("struct without fields");
    }
    arrow::FieldVector fields;
    for (const auto& field : type["fields"]) {
      ARROW_ASSIGN_OR_RAISE(auto parsed, FieldFromJson(field));
      fields.push_back(std::move(parsed));
    }
    return arrow::struct_(std::move(fields));
  }
  if (kind == "array") {
    if (!type.contains("elementType")) return BadSchema("array without elementType");
    ARROW_ASSIGN_OR_RAISE(auto element, TypeFromJson(type["elementType"]));
    const std::optional<bool> contains_null =
        json_util::BoolOr(type, "containsNull", true);
    if (!contains_null) return BadSchema("'containsNull' of an array is not a boolean");
    return arrow::list(arrow::field("element", element, *contains_null));
  }
  if (kind == "map") {
    if (!type.contains("keyType") || !type.contains("valueType")) {
      return BadSchema("map without keyType/valueType");
    }
    ARROW_ASSIGN_OR_RAISE(auto key, TypeFromJson(type["keyType"]));
    ARROW_ASSIGN_OR_RAISE(auto value, TypeFromJson(type["valueType"]));
    const std::optional<bool> contains_null =
        json_util::BoolOr(type, "valueContainsNull", true);
    if (!contains_null) return BadSchema("'valueContainsNull' of a map is not a boolean");
    return std::make_shared<arrow::MapType>(arrow::field("key", key, false),
                                            arrow::field("value", value, *contains_null));
  }
  return BadSchema("unknown complex type '" + kind + "'");
}

arrow::Result<ojson> TypeToJson(const arrow::DataType& type);

arrow::Result<ojson> FieldToJson(const arrow::Field& field) {
  ARROW_ASSIGN_OR_RAISE(ojson type, TypeToJson(*field.type()));
  ojson metadata = ojson::object();
  if (field.metadata() != nullptr) {
    for (int64_t i = 0; i < field.metadata()->size(); ++i) {
      const std::string& key = field.metadata()->key(i);
      const std::string& value = field.metadata()->value(i);
      if (key.rfind("ARROW:", 0) == 0 || key.rfind("PARQUET:", 0) == 0) continue;
      ojson parsed = json_util::ParseJson<ojson>(value);
      metadata[key] = parsed.is_discarded() ? ojson(value) : parsed;
    }
  }
  return ojson{{"name", field.name()},
               {"type", std::move(type)},
               {"nullable", field.nullable()},
               {"metadata", std::move(metadata)}};
}

arrow::Result<ojson> TypeToJson(const arrow::DataType& type) {
  if (std::optional<std::string> name = PrimitiveTypeName(type)) return ojson(*name);
  switch (type.id()) {
    case arrow::Type::LIST: {
      const auto& list = static_cast<const arrow::ListType&>(type);
      ARROW_ASSIGN_OR_RAISE(ojson element, TypeToJson(*list.value_type()));
      return ojson{{"type", "array"},
                   {"elementType", std::move(element)},
                   {"containsNull", list.value_field()->nullable()}};
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(type);
      ARROW_ASSIGN_OR_RAISE(ojson key, TypeToJson(*map.key_type()));
      ARROW_ASSIGN_OR_RAISE(ojson value, TypeToJson(*map.item_type()));
      return ojson{{"type", "map"},
                   {"keyType", std::move(key)},
                   {"valueType", std::move(value)},
                   {"valueContainsNull", map.item_field()->nullable()}};
    }
    case arrow::Type::STRUCT: {
      ojson fields = ojson::array();
      for (const auto& child : type.fields()) {
        ARROW_ASSIGN_OR_RAISE(ojson field, FieldToJson(*child));
        fields.push_back(std::move(field));
      }
      return ojson{{"type", "struct"}, {"fields", std::move(fields)}};
    }
    default:
      break;
  }
  return InvalidInputError("type ", type.ToString(), " has no Delta equivalent");
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Schema>> SchemaFromJson(
    std::string_view schema_string) {
  json doc = json_util::ParseJson(schema_string);
  if (doc.is_discarded()) {
    return BadSchema("schemaString is not JSON (or nests deeper than " +
                     std::to_string(json_util::kMaxJsonDepth) + " levels)");
  }
  // Compared, not read with value(), which throws when "type" is not a string.
  if (!doc.is_object() || !doc.contains("type") || doc["type"] != "struct" ||
      !doc.contains("fields") || !doc["fields"].is_array()) {
    return BadSchema("schemaString is not a struct");
  }
  arrow::FieldVector fields;
  for (const auto& field : doc["fields"]) {
    ARROW_ASSIGN_OR_RAISE(auto parsed, FieldFromJson(field));
    fields.push_back(std::move(parsed));
  }
  return arrow::schema(std::move(fields));
}

arrow::Result<std::string> SchemaToJson(const arrow::Schema& schema) {
  ojson fields = ojson::array();
  for (const auto& field : schema.fields()) {
    auto encoded = FieldToJson(*field);
    if (!encoded.ok()) {
      return arrow::Status::Invalid("column '", field->name(),
                                    "': ", encoded.status().message());
    }
    fields.push_back(std::move(*encoded));
  }
  // Field names and metadata come from Arrow, whose strings need not be UTF-8.
  return json_util::DumpJson(ojson{{"type", "struct"}, {"fields", std::move(fields)}},
                             "the table schema");
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/log/type_widening.h"

#include <cctype>

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

constexpr const char* kTypeChanges = "delta.typeChanges";

int IntegerWidth(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT8:
      return 8;
    case arrow::Type::INT16:
      return 16;
    case arrow::Type::INT32:
      return 32;
    case arrow::Type::INT64:
      return 64;
    default:
      return 0;
  }
}

bool IsNtzTimestamp(const arrow::DataType& type) {
  return type.id() == arrow::Type::TIMESTAMP &&
         static_cast<const arrow::TimestampType&>(type).timezone().empty();
}

// Every identifier of `expression`, lower case: runs of letters, digits and underscores,
// and backquoted names (`` ` `` doubled inside).
void AddIdentifiers(const std::string& expression, std::set<std::string>* out) {
  std::string current;
  const auto flush = [&] {
    if (!current.empty()) out->insert(AsciiLower(current));
    current.clear();
  };
  for (size_t i = 0; i < expression.size(); ++i) {
    const char c = expression[i];
    if (c == '`') {
      flush();
      for (++i; i < expression.size(); ++i) {
        if (expression[i] == '`' &&
            (i + 1 >= expression.size() || expression[i + 1] != '`'))
          break;
        if (expression[i] == '`') ++i;
        current += expression[i];
      }
      flush();
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      current += c;
    } else {
      flush();
    }
  }
  flush();
}

}  // namespace

std::set<std::string> ColumnsExpressionsUse(
    const arrow::Schema& schema,
    const std::map<std::string, std::string>& configuration) {
  std::set<std::string> names;
  for (const auto& field : schema.fields()) {
    if (const auto expression = FieldMetadataValue(*field, "delta.generationExpression"))
      AddIdentifiers(*expression, &names);
  }
  for (const auto& [key, value] : configuration) {
    if (key.rfind("delta.constraints.", 0) == 0) AddIdentifiers(value, &names);
  }
  return names;
}

bool TypeWideningEnabled(const std::map<std::string, std::string>& configuration) {
  const auto it = configuration.find("delta.enableTypeWidening");
  return it != configuration.end() && AsciiLower(it->second) == "true";
}

bool WidensAutomatically(const arrow::DataType& from, const arrow::DataType& to) {
  const int from_width = IntegerWidth(from);
  const int to_width = IntegerWidth(to);
  if (from_width > 0 && to_width > 0) return to_width > from_width;
  if (from.id() == arrow::Type::FLOAT) return to.id() == arrow::Type::DOUBLE;
  if (from.id() == arrow::Type::DATE32) return IsNtzTimestamp(to);
  if (from.id() == arrow::Type::DECIMAL128 && to.id() == arrow::Type::DECIMAL128) {
    const auto& a = static_cast<const arrow::Decimal128Type&>(from);
    const auto& b = static_cast<const arrow::Decimal128Type&>(to);
    const bool grows = b.precision() > a.precision() || b.scale() > a.scale();
    return grows && b.scale() >= a.scale() &&
           b.precision() - b.scale() >= a.precision() - a.scale();
  }
  return false;
}

bool WasWidened(const arrow::Field& field) {
  return FieldMetadataValue(field, kTypeChanges).has_value();
}

arrow::Result<std::shared_ptr<arrow::Field>> WidenField(
    const std::shared_ptr<arrow::Field>& field,
    const std::shared_ptr<arrow::DataType>& to) {
  nlohmann::json changes = nlohmann::json::array();
  if (const auto recorded = FieldMetadataValue(*field, kTypeChanges)) {
    changes = json_util::ParseJson(*recorded);
    if (!changes.is_array()) {
      return InvalidInputError("column ", EscapeForMessage(field->name()), " has ",
                               kTypeChanges, " that is not a JSON array");
    }
  }
  changes.push_back(
      {{"fromType", DeltaTypeName(*field->type())}, {"toType", DeltaTypeName(*to)}});
  auto metadata = field->metadata() ? field->metadata()->Copy()
                                    : std::make_shared<arrow::KeyValueMetadata>();
  ARROW_ASSIGN_OR_RAISE(const std::string text,
                        json_util::DumpJson(changes, kTypeChanges));
  ARROW_UNUSED(metadata->Set(kTypeChanges, text));
  return field->WithType(to)->WithMetadata(std::move(metadata));
}

namespace {

// Stamp the typeChanges records in `node` and everything under it; true when one was.
arrow::Result<bool> StampRecords(nlohmann::ordered_json* node, int64_t version) {
  bool stamped = false;
  if (node->is_array()) {
    for (auto& item : *node) {
      ARROW_ASSIGN_OR_RAISE(const bool inner, StampRecords(&item, version));
      stamped = stamped || inner;
    }
    return stamped;
  }
  if (!node->is_object()) return false;
  auto metadata = node->find("metadata");
  if (metadata != node->end() && metadata->is_object() &&
      metadata->contains(kTypeChanges)) {
    auto& records = (*metadata)[kTypeChanges];
    // Spark keeps the records as a JSON array; a string holding one is read alike.
    nlohmann::ordered_json parsed =
        records.is_string()
            ? json_util::ParseJson<nlohmann::ordered_json>(records.get<std::string>())
            : records;
    if (!parsed.is_array()) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid, kTypeChanges,
                       " is not a JSON array: ", json_util::DumpJsonLossy(records));
    }
    for (auto& record : parsed) {
      if (record.is_object() && !record.contains("tableVersion")) {
        record["tableVersion"] = version;
        stamped = true;
      }
    }
    if (stamped) records = parsed;
  }
  for (auto& [key, child] : node->items()) {
    if (key == "metadata") continue;
    ARROW_ASSIGN_OR_RAISE(const bool inner, StampRecords(&child, version));
    stamped = stamped || inner;
  }
  return stamped;
}

}  // namespace

arrow::Result<std::string> StampTypeChangeVersions(const std::string& schema_json,
                                                   int64_t version) {
  auto schema = json_util::ParseJson<nlohmann::ordered_json>(schema_json);
  if (schema.is_discarded()) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                     "the schema is not JSON");
  }
  ARROW_ASSIGN_OR_RAISE(const bool stamped, StampRecords(&schema, version));
  if (!stamped) return schema_json;
  return json_util::DumpJson(schema, "schema");
}

arrow::Result<std::shared_ptr<arrow::Field>> WidenedFor(
    const std::shared_ptr<arrow::Field>& column,
    const std::shared_ptr<arrow::DataType>& data) {
  if (WidensAutomatically(*column->type(), *data)) return WidenField(column, data);
  const auto& type = *column->type();
  if (type.id() != arrow::Type::STRUCT || data->id() != arrow::Type::STRUCT ||
      type.num_fields() != data->num_fields()) {
    return nullptr;
  }
  arrow::FieldVector children;
  bool widened = false;
  for (int i = 0; i < type.num_fields(); ++i) {
    const auto& child = type.field(i);
    const auto& given = data->field(i);
    if (child->name() != given->name()) return nullptr;
    ARROW_ASSIGN_OR_RAISE(auto wider, WidenedFor(child, given->type()));
    if (wider != nullptr) {
      children.push_back(std::move(wider));
      widened = true;
    } else if (CanWriteInto(*given->type(), *child->type())) {
      children.push_back(child);
    } else {
      return nullptr;
    }
  }
  if (!widened) return nullptr;
  return column->WithType(arrow::struct_(std::move(children)));
}

}  // namespace ampdelta::delta

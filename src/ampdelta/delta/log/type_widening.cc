#include "ampdelta/delta/log/type_widening.h"

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

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

}  // namespace

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

}  // namespace ampdelta::delta

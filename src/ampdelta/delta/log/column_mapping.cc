#include "ampdelta/delta/log/column_mapping.h"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include <arrow/array.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

constexpr char kIdKey[] = "delta.columnMapping.id";
constexpr char kPhysicalNameKey[] = "delta.columnMapping.physicalName";
// The key Arrow's Parquet writer takes a field's field_id from.
constexpr char kParquetFieldIdKey[] = "PARQUET:field_id";

std::optional<int64_t> FieldId(const arrow::Field& field) {
  auto text = FieldMetadataValue(field, kIdKey);
  return text ? ParseInt64(*text) : std::nullopt;
}

// A field rebuilt from the field and its already rebuilt type.
using FieldRebuilder = std::function<std::shared_ptr<arrow::Field>(
    const arrow::Field& field, std::shared_ptr<arrow::DataType> type)>;

// `type` with every struct field at any depth rebuilt, children first. List elements and
// map keys and values are no struct fields: they have no mapping of their own.
std::shared_ptr<arrow::DataType> RebuildType(const arrow::DataType& type,
                                             const FieldRebuilder& rebuild);

std::shared_ptr<arrow::Field> RebuildField(const arrow::Field& field,
                                           const FieldRebuilder& rebuild) {
  return rebuild(field, RebuildType(*field.type(), rebuild));
}

std::shared_ptr<arrow::DataType> RebuildType(const arrow::DataType& type,
                                             const FieldRebuilder& rebuild) {
  switch (type.id()) {
    case arrow::Type::STRUCT: {
      arrow::FieldVector fields;
      for (const auto& child : type.fields()) {
        fields.push_back(RebuildField(*child, rebuild));
      }
      return arrow::struct_(std::move(fields));
    }
    case arrow::Type::LIST: {
      const auto& element = type.field(0);
      return arrow::list(element->WithType(RebuildType(*element->type(), rebuild)));
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(type);
      return std::make_shared<arrow::MapType>(
          map.key_field()->WithType(RebuildType(*map.key_type(), rebuild)),
          map.item_field()->WithType(RebuildType(*map.item_type(), rebuild)),
          map.keys_sorted());
    }
    default:
      return type.GetSharedPtr();
  }
}

std::shared_ptr<arrow::Schema> RebuildSchema(const arrow::Schema& schema,
                                             const FieldRebuilder& rebuild) {
  arrow::FieldVector fields;
  for (const auto& field : schema.fields())
    fields.push_back(RebuildField(*field, rebuild));
  return arrow::schema(std::move(fields), schema.metadata());
}

void VisitFields(const arrow::FieldVector& fields,
                 const std::function<void(const arrow::Field&)>& visit);

// The struct fields inside `type`, through lists and maps.
void VisitType(const arrow::DataType& type,
               const std::function<void(const arrow::Field&)>& visit) {
  switch (type.id()) {
    case arrow::Type::STRUCT:
      VisitFields(type.fields(), visit);
      break;
    case arrow::Type::LIST:
      VisitType(*type.field(0)->type(), visit);
      break;
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(type);
      VisitType(*map.key_type(), visit);
      VisitType(*map.item_type(), visit);
      break;
    }
    default:
      break;
  }
}

// Every struct field of `fields` at any depth, parents first.
void VisitFields(const arrow::FieldVector& fields,
                 const std::function<void(const arrow::Field&)>& visit) {
  for (const auto& field : fields) {
    visit(*field);
    VisitType(*field->type(), visit);
  }
}

}  // namespace

arrow::Result<ColumnMappingMode> ColumnMappingModeOf(
    const std::map<std::string, std::string>& configuration) {
  const auto it = configuration.find(kColumnMappingModeKey);
  if (it == configuration.end()) return ColumnMappingMode::kNone;
  const std::string mode = AsciiLower(it->second);
  if (mode == "none") return ColumnMappingMode::kNone;
  if (mode == "name") return ColumnMappingMode::kName;
  if (mode == "id") return ColumnMappingMode::kId;
  return InvalidInputError(kColumnMappingModeKey, " is '", it->second,
                           "': it must be none, name or id");
}

const char* ColumnMappingModeName(ColumnMappingMode mode) {
  switch (mode) {
    case ColumnMappingMode::kName:
      return "name";
    case ColumnMappingMode::kId:
      return "id";
    case ColumnMappingMode::kNone:
      break;
  }
  return "none";
}

std::shared_ptr<arrow::Schema> AssignColumnMapping(const arrow::Schema& schema,
                                                   int64_t* max_id) {
  return RebuildSchema(
      schema, [max_id](const arrow::Field& field, std::shared_ptr<arrow::DataType> type) {
        if (FieldId(field) && FieldMetadataValue(field, kPhysicalNameKey)) {
          return field.WithType(std::move(type));
        }
        // Both anew: half a mapping (from elsewhere) is no mapping.
        auto metadata = field.metadata() ? field.metadata()->Copy()
                                         : std::make_shared<arrow::KeyValueMetadata>();
        (void)metadata->Delete(kIdKey);
        (void)metadata->Delete(kPhysicalNameKey);
        metadata->Append(kIdKey, std::to_string(++*max_id));
        metadata->Append(kPhysicalNameKey, "\"col-" + NewUuid() + "\"");
        return arrow::field(field.name(), std::move(type), field.nullable(),
                            std::move(metadata));
      });
}

int64_t MaxColumnId(const arrow::Schema& schema,
                    const std::map<std::string, std::string>& configuration) {
  int64_t max_id = 0;
  const auto it = configuration.find(kMaxColumnIdKey);
  if (it != configuration.end()) max_id = ParseInt64(it->second).value_or(0);
  VisitFields(schema.fields(), [&max_id](const arrow::Field& field) {
    max_id = std::max(max_id, FieldId(field).value_or(0));
  });
  return max_id;
}

arrow::Status CheckColumnMapping(const arrow::Schema& schema) {
  std::set<int64_t> ids;
  arrow::Status status;
  VisitFields(schema.fields(), [&](const arrow::Field& field) {
    if (!status.ok()) return;
    const auto id = FieldId(field);
    if (!id || !FieldMetadataValue(field, kPhysicalNameKey)) {
      status = MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                         "column mapping: field '", field.name(),
                         "' has no delta.columnMapping.id or physicalName");
    } else if (!ids.insert(*id).second) {
      status = MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                         "column mapping: id ", *id, " is given twice (field '",
                         field.name(), "')");
    }
  });
  return status;
}

std::shared_ptr<arrow::Schema> PhysicalSchema(const arrow::Schema& logical) {
  auto physical = RebuildSchema(logical, [](const arrow::Field& field,
                                            std::shared_ptr<arrow::DataType> type) {
    std::shared_ptr<const arrow::KeyValueMetadata> metadata;
    if (const auto id = FieldId(field)) {
      metadata = arrow::key_value_metadata({kParquetFieldIdKey}, {std::to_string(*id)});
    }
    return arrow::field(PhysicalName(field), std::move(type), field.nullable(),
                        std::move(metadata));
  });
  return physical->WithMetadata(nullptr);
}

std::string PhysicalColumnName(const arrow::Schema& schema, const std::string& logical) {
  const int index = FindFieldIgnoreCase(schema, logical);
  return index < 0 ? logical : PhysicalName(*schema.field(index));
}

std::string PhysicalColumnPath(const arrow::Schema& schema,
                               const std::string& logical_path) {
  std::string path;
  arrow::FieldVector fields = schema.fields();
  size_t start = 0;
  while (start <= logical_path.size()) {
    const size_t dot = std::min(logical_path.find('.', start), logical_path.size());
    const std::string name = logical_path.substr(start, dot - start);
    const auto found = std::find_if(fields.begin(), fields.end(), [&](const auto& field) {
      return EqualsIgnoreAsciiCase(field->name(), name);
    });
    if (found == fields.end()) return logical_path;
    path += (path.empty() ? "" : ".") + PhysicalName(**found);
    fields = (*found)->type()->id() == arrow::Type::STRUCT ? (*found)->type()->fields()
                                                           : arrow::FieldVector{};
    start = dot + 1;
  }
  return path;
}

namespace {

std::shared_ptr<arrow::ArrayData> ViewData(const std::shared_ptr<arrow::ArrayData>& data,
                                           const std::shared_ptr<arrow::DataType>& type) {
  auto out = data->Copy();
  out->type = type;
  // Struct children are its fields; a list's (and a map's) only child is its element.
  for (size_t i = 0; i < out->child_data.size(); ++i) {
    out->child_data[i] =
        ViewData(out->child_data[i], type->field(static_cast<int>(i))->type());
  }
  return out;
}

}  // namespace

std::shared_ptr<arrow::Array> ViewAs(const std::shared_ptr<arrow::Array>& array,
                                     const std::shared_ptr<arrow::DataType>& type) {
  if (array->type()->Equals(*type)) return array;
  return arrow::MakeArray(ViewData(array->data(), type));
}

}  // namespace ampdelta::delta

// The table types ampdelta gives Amp's types, and ConformBatch; each type's two halves
// stay together. The schema's JSON form is schema_json.cc.

#include "ampdelta/delta/log/schema.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <arrow/util/utf8.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/wide_integers.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/utf8.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;
namespace cp = arrow::compute;

arrow::Status UnsupportedType(const std::string& column, const arrow::DataType& type,
                              const std::string& hint = "") {
  return InvalidInputError("column '", column, "' has type ", type.ToString(),
                           ", which Delta Lake cannot store",
                           hint.empty() ? "" : " (" + hint + ")");
}

arrow::Result<std::shared_ptr<arrow::DataType>> ToTableType(
    const std::string& column, const arrow::DataType& type,
    const TypeMapping& mapping = {});

arrow::Result<std::shared_ptr<arrow::Field>> ToTableField(const std::string& path,
                                                          const arrow::Field& field,
                                                          const TypeMapping& mapping) {
  ARROW_ASSIGN_OR_RAISE(auto type, ToTableType(path, *field.type(), mapping));
  return arrow::field(field.name(), std::move(type), field.nullable());
}

// Column names become Parquet column paths, JSON strings in the log and, for partition
// columns, folder names: they must be non-empty valid UTF-8 without NUL, and free of the
// characters Spark refuses in column names without column mapping.
arrow::Status CheckColumnName(const std::string& name, const std::string& parent,
                              bool column_mapping) {
  const std::string shown = parent.empty() ? name : parent + "." + name;
  if (name.empty()) {
    return InvalidInputError("empty column name",
                             parent.empty() ? "" : " in '" + parent + "'",
                             ": give every column a name (SELECT expr AS name)");
  }
  if (name.find('\0') != std::string::npos) {
    return InvalidInputError("column name '", EscapeForMessage(shown),
                             "' contains a NUL character");
  }
  if (!IsValidUtf8(name)) {
    return InvalidInputError("column name '", EscapeForMessage(shown),
                             "' is not valid UTF-8");
  }
  // Under column mapping data files use physical names: any name goes.
  static constexpr std::string_view kRefused = " ,;{}()\n\t=";
  if (!column_mapping && name.find_first_of(kRefused) != std::string::npos) {
    return InvalidInputError(
        "column name '", EscapeForMessage(shown),
        "' contains one of the characters ' ,;{}()\\n\\t=', which Delta "
        "readers refuse without column mapping: rename it in the query "
        "(SELECT expr AS name)");
  }
  return arrow::Status::OK();
}

arrow::Status CheckUniqueNames(const arrow::FieldVector& fields,
                               const std::string& parent, bool column_mapping) {
  std::set<std::string> seen;
  for (const auto& field : fields) {
    ARROW_RETURN_NOT_OK(CheckColumnName(field->name(), parent, column_mapping));
    if (!seen.insert(AsciiLower(field->name())).second) {
      return InvalidInputError("duplicate column name '",
                               parent.empty() ? "" : parent + ".", field->name(),
                               "' (Delta column names are case-insensitive)");
    }
  }
  return arrow::Status::OK();
}

// 2^64-1 has 20 digits: every uint64 fits decimal(20,0).
std::shared_ptr<arrow::DataType> Unsigned64Decimal() { return arrow::decimal128(20, 0); }

arrow::Result<std::shared_ptr<arrow::DataType>> ToTableList(const std::string& column,
                                                            const arrow::DataType& type,
                                                            const TypeMapping& mapping) {
  const auto& child = *type.field(0);
  ARROW_ASSIGN_OR_RAISE(auto element,
                        ToTableType(column + ".element", *child.type(), mapping));
  return arrow::list(arrow::field("element", std::move(element), child.nullable()));
}

arrow::Result<std::shared_ptr<arrow::DataType>> ToTableMap(const std::string& column,
                                                           const arrow::MapType& map,
                                                           const TypeMapping& mapping) {
  ARROW_ASSIGN_OR_RAISE(auto key, ToTableType(column + ".key", *map.key_type(), mapping));
  ARROW_ASSIGN_OR_RAISE(auto value,
                        ToTableType(column + ".value", *map.item_type(), mapping));
  return std::make_shared<arrow::MapType>(
      arrow::field("key", std::move(key), false),
      arrow::field("value", std::move(value), map.item_field()->nullable()));
}

arrow::Result<std::shared_ptr<arrow::DataType>> ToTableStruct(
    const std::string& column, const arrow::DataType& type, const TypeMapping& mapping) {
  if (type.num_fields() == 0) {
    return UnsupportedType(column, type,
                           "a struct without fields, which Parquet cannot store (an "
                           "empty Solidity tuple, say): leave it out of the query");
  }
  arrow::FieldVector fields;
  for (const auto& child : type.fields()) {
    ARROW_ASSIGN_OR_RAISE(auto field,
                          ToTableField(column + "." + child->name(), *child, mapping));
    fields.push_back(std::move(field));
  }
  ARROW_RETURN_NOT_OK(CheckUniqueNames(fields, column, mapping.column_mapping));
  return arrow::struct_(std::move(fields));
}

// Stored as decimal128 when the declared precision fits Delta's 38 digits, else as
// `wide` says.
arrow::Result<std::shared_ptr<arrow::DataType>> ToTableDecimal256(
    const std::string& column, const arrow::Decimal256Type& dec, WideIntegers wide) {
  if (dec.precision() <= arrow::Decimal128Type::kMaxPrecision) {
    return arrow::decimal128(dec.precision(), dec.scale());
  }
  if (wide == WideIntegers::kString) return arrow::utf8();
  if (dec.scale() > arrow::Decimal128Type::kMaxPrecision || dec.scale() < 0) {
    return UnsupportedType(column, dec,
                           "its scale does not fit a Delta decimal; store it with "
                           "wide_integers \"string\"");
  }
  return arrow::decimal128(arrow::Decimal128Type::kMaxPrecision, dec.scale());
}

arrow::Result<std::shared_ptr<arrow::DataType>> ToTableType(const std::string& column,
                                                            const arrow::DataType& type,
                                                            const TypeMapping& mapping) {
  const bool same_width = mapping.integers == IntegerMapping::kSameWidth;
  switch (type.id()) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::BOOL:
    case arrow::Type::STRING:
    case arrow::Type::BINARY:
    case arrow::Type::DATE32:
    case arrow::Type::DECIMAL128:
      return type.GetSharedPtr();
    case arrow::Type::NA:
      // Delta's `void` exists, but DuckDB and Polars cannot read a table that has one.
      return UnsupportedType(column, type,
                             "a column of NULLs has no type: cast it in the query, e.g. "
                             "CAST(NULL AS BIGINT)");
    case arrow::Type::UINT8:
      return same_width ? arrow::int8() : arrow::int16();
    case arrow::Type::UINT16:
      return same_width ? arrow::int16() : arrow::int32();
    case arrow::Type::UINT32:
      return same_width ? arrow::int32() : arrow::int64();
    case arrow::Type::UINT64:  // a field: top-level columns are ToTableColumn's
      return mapping.unsigned64 == Unsigned64::kLong ? arrow::int64()
                                                     : Unsigned64Decimal();
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW:
      return arrow::utf8();
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::BINARY_VIEW:
    case arrow::Type::FIXED_SIZE_BINARY:
      return arrow::binary();
    case arrow::Type::DATE64:
      return arrow::date32();
    case arrow::Type::TIMESTAMP: {
      const auto& ts = static_cast<const arrow::TimestampType&>(type);
      return ts.timezone().empty() ? arrow::timestamp(arrow::TimeUnit::MICRO)
                                   : arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
    }
    case arrow::Type::DICTIONARY:
      return ToTableType(
          column, *static_cast<const arrow::DictionaryType&>(type).value_type(), mapping);
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST:
    case arrow::Type::LIST_VIEW:
    case arrow::Type::LARGE_LIST_VIEW:
      return ToTableList(column, type, mapping);
    case arrow::Type::MAP:
      return ToTableMap(column, static_cast<const arrow::MapType&>(type), mapping);
    case arrow::Type::STRUCT:
      return ToTableStruct(column, type, mapping);
    case arrow::Type::DECIMAL256:
      return ToTableDecimal256(column, static_cast<const arrow::Decimal256Type&>(type),
                               mapping.wide_integers);
    case arrow::Type::HALF_FLOAT:
      return UnsupportedType(column, type, "cast it to float in the query");
    default:
      return UnsupportedType(column, type);
  }
}

// FixedSizeBinary (hashes, addresses) as binary without copying the values: only offsets
// are built, the value buffer is shared. Falls back to a cast when offsets would
// overflow.
arrow::Result<std::shared_ptr<arrow::Array>> FixedToBinary(
    const arrow::FixedSizeBinaryArray& fixed) {
  const int64_t width = fixed.byte_width();
  const int64_t slots = fixed.offset() + fixed.length();
  if (slots * width >= std::numeric_limits<int32_t>::max()) {
    return cp::Cast(fixed, arrow::binary(), cp::CastOptions::Safe(arrow::binary()));
  }
  ARROW_ASSIGN_OR_RAISE(
      auto offsets,
      arrow::AllocateBuffer((slots + 1) * static_cast<int64_t>(sizeof(int32_t))));
  auto* out = reinterpret_cast<int32_t*>(offsets->mutable_data());
  for (int64_t i = 0; i <= slots; ++i) out[i] = static_cast<int32_t>(i * width);
  auto data =
      arrow::ArrayData::Make(arrow::binary(), fixed.length(),
                             {fixed.null_bitmap(), std::move(offsets), fixed.values()},
                             fixed.null_count(), fixed.offset());
  return arrow::MakeArray(std::move(data));
}

bool IsInteger(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
      return true;
    default:
      return false;
  }
}

arrow::Result<std::shared_ptr<arrow::Array>> ConformNarrowColumn(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target);

// Cast one column to its table type. Integer narrowing is checked; times are truncated;
// decimals wider than 38 digits and uint64s become the table's types first.
arrow::Result<std::shared_ptr<arrow::Array>> ConformColumn(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target) {
  if (column->type()->Equals(*target)) return column;
  ARROW_ASSIGN_OR_RAISE(auto narrowed, NarrowWideIntegers(name, column, target));
  return ConformNarrowColumn(name, narrowed, target);
}

arrow::Result<std::shared_ptr<arrow::Array>> ConformNarrowColumn(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target) {
  if (column->type()->Equals(*target)) return column;
  // Only conversions a write may make: never a string parsed as a number, say.
  ARROW_ASSIGN_OR_RAISE(auto stored, ToTableType(name, *column->type()));
  if (!CanWriteInto(*stored, *target)) {
    // uint64s NarrowWideIntegers left (in list views) may go into long fields.
    TypeMapping as_long;
    as_long.unsigned64 = Unsigned64::kLong;
    ARROW_ASSIGN_OR_RAISE(stored, ToTableType(name, *column->type(), as_long));
  }
  if (!CanWriteInto(*stored, *target)) {
    return InvalidInputError("column '", name, "' has type ", DeltaTypeName(*stored),
                             " in this data; the table stores ", DeltaTypeName(*target));
  }
  if (column->type_id() == arrow::Type::FIXED_SIZE_BINARY &&
      target->id() == arrow::Type::BINARY) {
    return FixedToBinary(static_cast<const arrow::FixedSizeBinaryArray&>(*column));
  }
  cp::CastOptions options = cp::CastOptions::Safe(target);
  options.allow_time_truncate = true;
  auto cast = cp::Cast(*column, target, options);
  if (cast.ok()) return *cast;
  // Otherwise find the first value that does not fit (the failure path only); a nested
  // column's cast error names the value itself.
  const bool nested = arrow::is_nested(column->type_id());
  for (int64_t i = 0; !nested && i < column->length(); ++i) {
    if (column->IsNull(i)) continue;
    auto one = cp::Cast(*column->Slice(i, 1), target, options);
    if (one.ok()) continue;
    auto value = column->GetScalar(i);
    return InvalidInputError("column '", name, "' has value ",
                             value.ok() ? (*value)->ToString() : "?", " (row ", i,
                             " of the batch), which does not fit the table's type ",
                             DeltaTypeName(*target));
  }
  return InvalidInputError("column '", name, "' cannot be stored as Delta ",
                           DeltaTypeName(*target), ": ", cast.status().message());
}

// Every string value must be valid UTF-8 (Parquet's STRING logical type and every reader
// require it; Flight does not check what a server sends). The whole value region is
// checked at once, and then that no value starts inside a multi-byte character.
template <typename ArrayType>
arrow::Status CheckStringArray(const std::string& column, const ArrayType& strings) {
  if (strings.length() == 0) return arrow::Status::OK();
  static const bool initialized = [] {
    arrow::util::InitializeUTF8();  // Arrow's validation tables start empty
    return true;
  }();
  (void)initialized;
  const auto first = strings.value_offset(0);
  const auto last = strings.value_offset(strings.length());
  const uint8_t* data = strings.value_data()->data();
  bool valid = arrow::util::ValidateUTF8(data + first, last - first);
  for (int64_t i = 0; valid && i < strings.length(); ++i) {
    const auto offset = strings.value_offset(i);
    valid = offset == last || (data[offset] & 0xC0) != 0x80;
  }
  if (valid) return arrow::Status::OK();
  for (int64_t i = 0; i < strings.length(); ++i) {
    const std::string_view value = strings.GetView(i);
    if (strings.IsValid(i) &&
        !arrow::util::ValidateUTF8(reinterpret_cast<const uint8_t*>(value.data()),
                                   static_cast<int64_t>(value.size()))) {
      return InvalidInputError("column '", column, "' row ", i,
                               " holds a string that is not valid UTF-8 (",
                               EscapeForMessage(std::string(value.substr(0, 32))),
                               "): cast it to binary in the query or fix the data");
    }
  }
  // Every value is valid on its own: what failed the fast check lies under null slots,
  // whose bytes are no value.
  return arrow::Status::OK();
}

arrow::Status CheckStringsAreUtf8(const std::string& column, const arrow::Array& array) {
  switch (array.type_id()) {
    case arrow::Type::STRING:
      return CheckStringArray(column, static_cast<const arrow::StringArray&>(array));
    case arrow::Type::LARGE_STRING:
      return CheckStringArray(column, static_cast<const arrow::LargeStringArray&>(array));
    case arrow::Type::LIST:
      return CheckStringsAreUtf8(column + ".element",
                                 *static_cast<const arrow::ListArray&>(array).values());
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapArray&>(array);
      ARROW_RETURN_NOT_OK(CheckStringsAreUtf8(column + ".key", *map.keys()));
      return CheckStringsAreUtf8(column + ".value", *map.items());
    }
    case arrow::Type::STRUCT: {
      const auto& record = static_cast<const arrow::StructArray&>(array);
      for (int i = 0; i < record.num_fields(); ++i) {
        ARROW_RETURN_NOT_OK(CheckStringsAreUtf8(
            column + "." + record.type()->field(i)->name(), *record.field(i)));
      }
      return arrow::Status::OK();
    }
    default:
      return arrow::Status::OK();
  }
}

}  // namespace

std::string NestedFieldHint(const arrow::Schema& schema, const std::string& name) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return "";
  const int parent = FindFieldIgnoreCase(schema, name.substr(0, dot));
  if (parent < 0 || schema.field(parent)->type()->id() != arrow::Type::STRUCT) return "";
  const std::string field = name.substr(dot + 1);
  return " ('" + name + "' is a field of the struct column '" +
         schema.field(parent)->name() +
         "': partitioning and clustering take top-level columns, so select it as one, "
         "e.g. " +
         schema.field(parent)->name() + "['" + field + "'] AS " + field + ")";
}

std::string EscapeForMessage(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7F || c >= 0x80) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

// The same Delta type: nested nullability and child field names do not matter (a cast
// settles them), struct field names match as column names do.
bool SameDeltaType(const arrow::DataType& a, const arrow::DataType& b) {
  if (a.id() != b.id()) return false;
  switch (a.id()) {
    case arrow::Type::LIST:
      return SameDeltaType(*a.field(0)->type(), *b.field(0)->type());
    case arrow::Type::MAP: {
      const auto& x = static_cast<const arrow::MapType&>(a);
      const auto& y = static_cast<const arrow::MapType&>(b);
      return SameDeltaType(*x.key_type(), *y.key_type()) &&
             SameDeltaType(*x.item_type(), *y.item_type());
    }
    case arrow::Type::STRUCT: {
      if (a.num_fields() != b.num_fields()) return false;
      for (int i = 0; i < a.num_fields(); ++i) {
        if (!EqualsIgnoreAsciiCase(a.field(i)->name(), b.field(i)->name()) ||
            !SameDeltaType(*a.field(i)->type(), *b.field(i)->type())) {
          return false;
        }
      }
      return true;
    }
    default:
      return a.Equals(b, /*check_metadata=*/false);
  }
}

}  // namespace

bool CanWriteInto(const arrow::DataType& data, const arrow::DataType& column) {
  if (SameDeltaType(data, column)) return true;
  if (data.id() == arrow::Type::STRUCT && column.id() == arrow::Type::STRUCT) {
    // Field by field (a struct a widening changed, rows written before it).
    if (data.num_fields() != column.num_fields()) return false;
    for (int i = 0; i < data.num_fields(); ++i) {
      if (!EqualsIgnoreAsciiCase(data.field(i)->name(), column.field(i)->name()) ||
          !CanWriteInto(*data.field(i)->type(), *column.field(i)->type())) {
        return false;
      }
    }
    return true;
  }
  // A date is midnight of a timestamp without time zone (a widened column).
  if (data.id() == arrow::Type::DATE32 && column.id() == arrow::Type::TIMESTAMP &&
      static_cast<const arrow::TimestampType&>(column).timezone().empty()) {
    return true;
  }
  if (IsInteger(data) && IsInteger(column)) return true;
  if (data.id() == arrow::Type::FLOAT && column.id() == arrow::Type::DOUBLE) return true;
  if (data.id() == arrow::Type::DECIMAL128 && column.id() == arrow::Type::DECIMAL128) {
    const auto& from = static_cast<const arrow::Decimal128Type&>(data);
    const auto& to = static_cast<const arrow::Decimal128Type&>(column);
    // A narrower precision is checked value by value; a smaller scale would round.
    return to.scale() >= from.scale();
  }
  return false;
}

int FindFieldIgnoreCase(const arrow::Schema& schema, const std::string& name) {
  int found = -1;
  for (int i = 0; i < schema.num_fields(); ++i) {
    if (EqualsIgnoreAsciiCase(schema.field(i)->name(), name)) {
      if (schema.field(i)->name() == name) return i;
      if (found < 0) found = i;
    }
  }
  return found;
}

namespace {

bool IsBlockColumn(const std::string& column, const TypeMapping& mapping) {
  return std::any_of(
      mapping.block_columns.begin(), mapping.block_columns.end(),
      [&](const std::string& name) { return EqualsIgnoreAsciiCase(name, column); });
}

// A top-level column. A uint64 one is long (as the SDK stores Amp's block_num and
// gas_used) unless the mapping asks for decimal(20,0); block numbers are long always.
arrow::Result<std::shared_ptr<arrow::Field>> ToTableColumn(const arrow::Field& field,
                                                           const TypeMapping& mapping) {
  const arrow::DataType* type = field.type().get();
  if (type->id() == arrow::Type::DICTIONARY) {
    type = static_cast<const arrow::DictionaryType&>(*type).value_type().get();
  }
  if (type->id() != arrow::Type::UINT64) {
    return ToTableField(field.name(), field, mapping);
  }
  const bool as_decimal =
      mapping.unsigned64 == Unsigned64::kDecimal && !IsBlockColumn(field.name(), mapping);
  return arrow::field(field.name(), as_decimal ? Unsigned64Decimal() : arrow::int64(),
                      field.nullable());
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Schema>> ToTableSchema(const arrow::Schema& source,
                                                            const TypeMapping& mapping) {
  if (source.num_fields() == 0) {
    return InvalidInputError("the data has no columns: a Delta table needs at least one");
  }
  arrow::FieldVector fields;
  for (const auto& field : source.fields()) {
    ARROW_ASSIGN_OR_RAISE(auto converted, ToTableColumn(*field, mapping));
    fields.push_back(std::move(converted));
  }
  ARROW_RETURN_NOT_OK(CheckUniqueNames(fields, "", mapping.column_mapping));
  return arrow::schema(std::move(fields));
}

namespace {

// The same types, leaf by leaf, whatever the fields' names and nullability.
bool SameShape(const arrow::DataType& a, const arrow::DataType& b) {
  if (a.id() != b.id() || a.num_fields() != b.num_fields()) return false;
  if (arrow::is_decimal(a.id())) return a.Equals(b);
  for (int i = 0; i < a.num_fields(); ++i) {
    if (!SameShape(*a.field(i)->type(), *b.field(i)->type())) return false;
  }
  return true;
}

WideIntegers Other(WideIntegers wide) {
  return wide == WideIntegers::kString ? WideIntegers::kDecimal : WideIntegers::kString;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Schema>> ToTableSchemaInto(
    const arrow::Schema& source, const TypeMapping& mapping, const arrow::Schema& table) {
  ARROW_ASSIGN_OR_RAISE(auto incoming, ToTableSchema(source, mapping));
  // The same source under each representation the policies offer, `mapping`'s first.
  std::vector<std::shared_ptr<arrow::Schema>> variants;
  for (const auto wide : {mapping.wide_integers, Other(mapping.wide_integers)}) {
    for (const auto unsigned64 : {mapping.unsigned64, Unsigned64::kAuto,
                                  Unsigned64::kDecimal, Unsigned64::kLong}) {
      TypeMapping variant = mapping;
      variant.wide_integers = wide;
      variant.unsigned64 = unsigned64;
      auto schema = ToTableSchema(source, variant);
      if (schema.ok()) variants.push_back(*std::move(schema));
    }
  }
  arrow::FieldVector fields = incoming->fields();
  for (int i = 0; i < source.num_fields(); ++i) {
    const int existing = FindFieldIgnoreCase(table, source.field(i)->name());
    if (existing < 0 || !HasWideInteger(*source.field(i)->type())) continue;
    const auto& wanted = *table.field(existing)->type();
    for (const auto& variant : variants) {
      if (SameShape(*variant->field(i)->type(), wanted)) {
        fields[i] = variant->field(i);
        break;
      }
    }
  }
  return arrow::schema(std::move(fields));
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ConformBatch(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::Schema>& table_schema) {
  // A batch may lack nullable columns, never bring one the table does not have: its
  // values would be dropped without a word.
  if (batch->num_columns() > 0 &&
      (batch->num_columns() > table_schema->num_fields() ||
       !batch->schema()->Equals(*table_schema, /*check_metadata=*/false))) {
    for (const auto& field : batch->schema()->fields()) {
      if (FindFieldIgnoreCase(*table_schema, field->name()) < 0) {
        return InvalidInputError("the data has a column '",
                                 EscapeForMessage(field->name()),
                                 "' that the table's schema does not have");
      }
    }
  }
  std::vector<std::shared_ptr<arrow::Array>> columns;
  columns.reserve(table_schema->num_fields());
  for (const auto& field : table_schema->fields()) {
    auto source = batch->GetColumnByName(field->name());
    if (source == nullptr) {
      // Delta column names are case-insensitive: `Block_Num` writes into `block_num`.
      const int index = FindFieldIgnoreCase(*batch->schema(), field->name());
      if (index >= 0) source = batch->column(index);
    }
    if (source == nullptr) {
      if (!field->nullable()) {
        return InvalidInputError("the data has no column '", field->name(),
                                 "', which the table requires (not nullable)");
      }
      ARROW_ASSIGN_OR_RAISE(auto nulls,
                            arrow::MakeArrayOfNull(field->type(), batch->num_rows()));
      columns.push_back(std::move(nulls));
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto conformed,
                          ConformColumn(field->name(), source, field->type()));
    ARROW_RETURN_NOT_OK(CheckStringsAreUtf8(field->name(), *conformed));
    if (!field->nullable() && conformed->null_count() > 0) {
      return InvalidInputError("column '", field->name(),
                               "' is not nullable but the data has ",
                               conformed->null_count(), " nulls");
    }
    columns.push_back(std::move(conformed));
  }
  return arrow::RecordBatch::Make(table_schema, batch->num_rows(), std::move(columns));
}

bool NeedsTimestampNtz(const arrow::Schema& schema) {
  std::function<bool(const arrow::DataType&)> visit = [&](const arrow::DataType& type) {
    if (type.id() == arrow::Type::TIMESTAMP) {
      return static_cast<const arrow::TimestampType&>(type).timezone().empty();
    }
    for (const auto& child : type.fields()) {
      if (visit(*child->type())) return true;
    }
    return false;
  };
  for (const auto& field : schema.fields()) {
    if (visit(*field->type())) return true;
  }
  return false;
}

std::optional<std::string> FieldMetadataValue(const arrow::Field& field,
                                              const std::string& key) {
  if (field.metadata() == nullptr) return std::nullopt;
  const int index = field.metadata()->FindKey(key);
  if (index < 0) return std::nullopt;
  return field.metadata()->value(index);
}

std::string PhysicalName(const arrow::Field& field) {
  auto value = FieldMetadataValue(field, "delta.columnMapping.physicalName");
  if (!value) return field.name();
  json parsed = json_util::ParseJson(*value);
  if (parsed.is_string()) return parsed.get<std::string>();
  return field.name();
}

}  // namespace ampdelta::delta

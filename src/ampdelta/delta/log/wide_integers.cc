#include "ampdelta/delta/log/wide_integers.h"

#include <arrow/array.h>
#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_decimal.h>
#include <arrow/type.h>
#include <arrow/util/bitmap_ops.h>
#include <arrow/util/decimal.h>

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

bool IsWideDecimal(const arrow::DataType& type) {
  return type.id() == arrow::Type::DECIMAL256 &&
         static_cast<const arrow::Decimal256Type&>(type).precision() >
             arrow::Decimal128Type::kMaxPrecision;
}

// Where a value sits, for messages: a row of the batch, or an item of a list.
std::string Place(int64_t index, bool in_list) {
  return in_list ? "item " + std::to_string(index) + " of a list"
                 : "row " + std::to_string(index) + " of the batch";
}

// The value's plain decimal text (never scientific notation, whatever the scale).
std::string PlainText(const arrow::Decimal256& value, int32_t scale) {
  std::string digits = value.ToIntegerString();
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.erase(0, 1);
  if (scale < 0) {
    if (digits != "0") digits.append(static_cast<size_t>(-scale), '0');
  } else if (scale > 0) {
    const auto fraction = static_cast<size_t>(scale);
    if (digits.size() <= fraction) digits.insert(0, fraction + 1 - digits.size(), '0');
    digits.insert(digits.size() - fraction, ".");
  }
  return (negative ? "-" : "") + digits;
}

// A struct field by name: exactly, else ignoring case (Delta names are case-insensitive).
int FindChild(const arrow::StructType& type, const std::string& name) {
  const int exact = type.GetFieldIndex(name);
  if (exact >= 0) return exact;
  for (int i = 0; i < type.num_fields(); ++i) {
    if (AsciiLower(type.field(i)->name()) == AsciiLower(name)) return i;
  }
  return -1;
}

arrow::Result<std::shared_ptr<arrow::Array>> AsText(
    const arrow::Decimal256Array& values) {
  const int32_t scale = static_cast<const arrow::Decimal256Type&>(*values.type()).scale();
  arrow::StringBuilder out;
  ARROW_RETURN_NOT_OK(out.Reserve(values.length()));
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.IsNull(i)) {
      ARROW_RETURN_NOT_OK(out.AppendNull());
    } else {
      ARROW_RETURN_NOT_OK(
          out.Append(PlainText(arrow::Decimal256(values.GetValue(i)), scale)));
    }
  }
  return out.Finish();
}

arrow::Result<std::shared_ptr<arrow::Array>> AsDecimal128(
    const std::string& name, const arrow::Decimal256Array& values,
    const arrow::Decimal128Type& target, bool in_list) {
  const int32_t scale = static_cast<const arrow::Decimal256Type&>(*values.type()).scale();
  arrow::Decimal128Builder out(target.GetSharedPtr());
  ARROW_RETURN_NOT_OK(out.Reserve(values.length()));
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.IsNull(i)) {
      ARROW_RETURN_NOT_OK(out.AppendNull());
      continue;
    }
    const arrow::Decimal256 value(values.GetValue(i));
    auto rescaled = value.Rescale(scale, target.scale());
    if (!rescaled.ok() || !rescaled->FitsInPrecision(target.precision())) {
      return InvalidInputError(
          "column '", name, "' has value ", PlainText(value, scale), " (",
          Place(i, in_list), "), which does not fit the table's type decimal(",
          target.precision(), ",", target.scale(),
          "): a 256-bit integer needs wide_integers \"string\" (the default) and a "
          "string column");
    }
    const auto limbs = rescaled->little_endian_array();
    ARROW_RETURN_NOT_OK(
        out.Append(arrow::Decimal128(static_cast<int64_t>(limbs[1]), limbs[0])));
  }
  return out.Finish();
}

arrow::Result<std::shared_ptr<arrow::Array>> Narrow(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target, bool in_list);

arrow::Result<std::shared_ptr<arrow::Array>> NarrowStruct(
    const std::string& name, const arrow::StructArray& record,
    const arrow::StructType& target, bool in_list) {
  arrow::ArrayVector children;
  std::vector<std::string> names;
  for (int i = 0; i < record.num_fields(); ++i) {
    const auto& field = record.type()->field(i);
    ARROW_ASSIGN_OR_RAISE(auto child, record.GetFlattenedField(i));
    const int at = FindChild(target, field->name());
    if (at >= 0) {
      ARROW_ASSIGN_OR_RAISE(child, Narrow(name + "." + field->name(), child,
                                          target.field(at)->type(), in_list));
    }
    children.push_back(std::move(child));
    names.push_back(field->name());
  }
  // GetFlattenedField folded the struct's nulls into each child; the struct keeps them.
  std::shared_ptr<arrow::Buffer> bitmap;
  if (record.null_count() > 0) {
    ARROW_ASSIGN_OR_RAISE(
        bitmap, arrow::internal::CopyBitmap(arrow::default_memory_pool(),
                                            record.null_bitmap_data(), record.offset(),
                                            record.length()));
  }
  ARROW_ASSIGN_OR_RAISE(
      auto out, arrow::StructArray::Make(children, names, bitmap, record.null_count()));
  return out;
}

arrow::Result<std::shared_ptr<arrow::Array>> NarrowList(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const arrow::DataType& target) {
  if (target.id() != arrow::Type::LIST) return column;
  const auto& element_target = target.field(0)->type();
  const std::string element = name + ".element";
  switch (column->type_id()) {
    case arrow::Type::LIST: {
      const auto& list = static_cast<const arrow::ListArray&>(*column);
      ARROW_ASSIGN_OR_RAISE(auto values, Narrow(element, list.values(), element_target,
                                                /*in_list=*/true));
      auto type = arrow::list(list.list_type()->value_field()->WithType(values->type()));
      return std::make_shared<arrow::ListArray>(type, list.length(), list.value_offsets(),
                                                values, list.null_bitmap(),
                                                list.null_count(), list.offset());
    }
    case arrow::Type::LARGE_LIST: {
      const auto& list = static_cast<const arrow::LargeListArray&>(*column);
      ARROW_ASSIGN_OR_RAISE(auto values, Narrow(element, list.values(), element_target,
                                                /*in_list=*/true));
      auto type =
          arrow::large_list(list.list_type()->value_field()->WithType(values->type()));
      return std::make_shared<arrow::LargeListArray>(
          type, list.length(), list.value_offsets(), values, list.null_bitmap(),
          list.null_count(), list.offset());
    }
    case arrow::Type::FIXED_SIZE_LIST: {
      const auto& list = static_cast<const arrow::FixedSizeListArray&>(*column);
      ARROW_ASSIGN_OR_RAISE(auto values, Narrow(element, list.values(), element_target,
                                                /*in_list=*/true));
      auto type = arrow::fixed_size_list(
          list.list_type()->value_field()->WithType(values->type()), list.value_length());
      return std::make_shared<arrow::FixedSizeListArray>(
          type, list.length(), values, list.null_bitmap(), list.null_count(),
          list.offset());
    }
    default:
      return column;
  }
}

arrow::Result<std::shared_ptr<arrow::Array>> Narrow(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target, bool in_list) {
  if (!HasWideDecimal(*column->type())) return column;
  if (IsWideDecimal(*column->type())) {
    const auto& values = static_cast<const arrow::Decimal256Array&>(*column);
    if (target->id() == arrow::Type::STRING) return AsText(values);
    if (target->id() == arrow::Type::DECIMAL128) {
      return AsDecimal128(name, values,
                          static_cast<const arrow::Decimal128Type&>(*target), in_list);
    }
    return column;
  }
  if (column->type_id() == arrow::Type::STRUCT) {
    if (target->id() != arrow::Type::STRUCT) return column;
    return NarrowStruct(name, static_cast<const arrow::StructArray&>(*column),
                        static_cast<const arrow::StructType&>(*target), in_list);
  }
  return NarrowList(name, column, *target);
}

}  // namespace

bool HasWideDecimal(const arrow::DataType& type) {
  if (IsWideDecimal(type)) return true;
  for (const auto& field : type.fields()) {
    if (HasWideDecimal(*field->type())) return true;
  }
  return false;
}

arrow::Result<std::shared_ptr<arrow::Array>> NarrowWideDecimals(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target) {
  return Narrow(name, column, target, /*in_list=*/false);
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/log/wide_integers.h"

#include <cstdint>
#include <limits>

#include <arrow/array.h>
#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_decimal.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/compute/cast.h>
#include <arrow/type.h>
#include <arrow/type_traits.h>
#include <arrow/util/bitmap_ops.h>
#include <arrow/util/decimal.h>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

bool IsWideDecimal(const arrow::DataType& type) {
  return type.id() == arrow::Type::DECIMAL256 &&
         static_cast<const arrow::Decimal256Type&>(type).precision() >
             arrow::Decimal128Type::kMaxPrecision;
}

bool IsWide(const arrow::DataType& type) {
  return IsWideDecimal(type) || type.id() == arrow::Type::UINT64;
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

// A decimal128 array of `target` type from `values`: null where they are, else
// `convert(i)` (which fails naming a value that does not fit).
template <typename Convert>
arrow::Result<std::shared_ptr<arrow::Array>> BuildDecimal128(
    const arrow::Array& values, const arrow::Decimal128Type& target, Convert convert) {
  arrow::Decimal128Builder out(target.GetSharedPtr());
  ARROW_RETURN_NOT_OK(out.Reserve(values.length()));
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.IsNull(i)) {
      ARROW_RETURN_NOT_OK(out.AppendNull());
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(const arrow::Decimal128 value, convert(i));
    ARROW_RETURN_NOT_OK(out.Append(value));
  }
  return out.Finish();
}

arrow::Result<std::shared_ptr<arrow::Array>> AsDecimal128(
    const std::string& name, const arrow::Decimal256Array& values,
    const arrow::Decimal128Type& target, bool in_list) {
  const int32_t scale = static_cast<const arrow::Decimal256Type&>(*values.type()).scale();
  return BuildDecimal128(
      values, target, [&](int64_t i) -> arrow::Result<arrow::Decimal128> {
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
        return arrow::Decimal128(static_cast<int64_t>(limbs[1]), limbs[0]);
      });
}

arrow::Status DoesNotFit(const std::string& name, uint64_t value, int64_t index,
                         bool in_list, const arrow::DataType& target) {
  return InvalidInputError(
      "column '", name, "' has value ", value, " (", Place(index, in_list),
      "), which does not fit the table's type ", DeltaTypeName(target),
      " (a new table stores every uint64 as decimal(20,0) with \"uint64\": "
      "\"decimal\")");
}

// uint64 into a decimal column: exact, the precision checked value by value.
arrow::Result<std::shared_ptr<arrow::Array>> Unsigned64AsDecimal(
    const std::string& name, const arrow::UInt64Array& values,
    const arrow::Decimal128Type& target, bool in_list) {
  return BuildDecimal128(
      values, target, [&](int64_t i) -> arrow::Result<arrow::Decimal128> {
        auto rescaled = arrow::Decimal128(0, values.Value(i)).Rescale(0, target.scale());
        if (!rescaled.ok() || !rescaled->FitsInPrecision(target.precision())) {
          return DoesNotFit(name, values.Value(i), i, in_list, target);
        }
        return *rescaled;
      });
}

// uint64 into a signed integer column (a table the SDK made, a block number): checked.
template <typename TargetType>
arrow::Result<std::shared_ptr<arrow::Array>> Unsigned64AsSigned(
    const std::string& name, const arrow::UInt64Array& values, bool in_list) {
  using Target = typename TargetType::c_type;
  arrow::NumericBuilder<TargetType> out;
  ARROW_RETURN_NOT_OK(out.Reserve(values.length()));
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.IsNull(i)) {
      out.UnsafeAppendNull();
    } else if (values.Value(i) >
               static_cast<uint64_t>(std::numeric_limits<Target>::max())) {
      return DoesNotFit(name, values.Value(i), i, in_list,
                        *arrow::TypeTraits<TargetType>::type_singleton());
    } else {
      out.UnsafeAppend(static_cast<Target>(values.Value(i)));
    }
  }
  return out.Finish();
}

// uint64 into a long column: when every value fits, the same buffers viewed as long.
arrow::Result<std::shared_ptr<arrow::Array>> Unsigned64AsLong(
    const std::string& name, const arrow::UInt64Array& values, bool in_list) {
  constexpr auto kLargest = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t i = 0; i < values.length(); ++i) {
    if (values.Value(i) > kLargest && values.IsValid(i)) {
      return DoesNotFit(name, values.Value(i), i, in_list, *arrow::int64());
    }
  }
  auto data = values.data()->Copy();
  data->type = arrow::int64();
  data->statistics = nullptr;  // a uint64's min and max are no int64's
  return arrow::MakeArray(std::move(data));
}

arrow::Result<std::shared_ptr<arrow::Array>> NarrowUnsigned64(
    const std::string& name, const arrow::UInt64Array& values,
    const std::shared_ptr<arrow::DataType>& target, bool in_list,
    const std::shared_ptr<arrow::Array>& column) {
  switch (target->id()) {
    case arrow::Type::DECIMAL128:
      return Unsigned64AsDecimal(
          name, values, static_cast<const arrow::Decimal128Type&>(*target), in_list);
    case arrow::Type::INT8:
      return Unsigned64AsSigned<arrow::Int8Type>(name, values, in_list);
    case arrow::Type::INT16:
      return Unsigned64AsSigned<arrow::Int16Type>(name, values, in_list);
    case arrow::Type::INT32:
      return Unsigned64AsSigned<arrow::Int32Type>(name, values, in_list);
    case arrow::Type::INT64:
      return Unsigned64AsLong(name, values, in_list);
    default:
      return column;
  }
}

arrow::Result<std::shared_ptr<arrow::Array>> Narrow(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target, bool in_list);

arrow::Result<std::shared_ptr<arrow::Array>> NarrowStruct(
    const std::string& name, const arrow::StructArray& record,
    const arrow::StructType& target, bool in_list) {
  arrow::ArrayVector children;
  arrow::FieldVector fields;
  for (int i = 0; i < record.num_fields(); ++i) {
    const auto& field = record.type()->field(i);
    ARROW_ASSIGN_OR_RAISE(auto child, record.GetFlattenedField(i));
    const int at = FindChild(target, field->name());
    if (at >= 0) {
      ARROW_ASSIGN_OR_RAISE(child, Narrow(name + "." + field->name(), child,
                                          target.field(at)->type(), in_list));
    }
    // The field keeps its nullability: values under a null struct are no values.
    fields.push_back(field->WithType(child->type()));
    children.push_back(std::move(child));
  }
  // GetFlattenedField folded the struct's nulls into each child; the struct keeps them.
  std::shared_ptr<arrow::Buffer> bitmap;
  if (record.null_count() > 0) {
    ARROW_ASSIGN_OR_RAISE(
        bitmap, arrow::internal::CopyBitmap(arrow::default_memory_pool(),
                                            record.null_bitmap_data(), record.offset(),
                                            record.length()));
  }
  return std::make_shared<arrow::StructArray>(arrow::struct_(std::move(fields)),
                                              record.length(), std::move(children),
                                              std::move(bitmap), record.null_count());
}

// A list's offsets rebased to start at 0, and the values they reach: only the slice's
// values are converted (a batch may be a slice of a larger one).
template <typename ListArrayType>
arrow::Result<std::pair<std::shared_ptr<arrow::Buffer>, std::shared_ptr<arrow::Array>>>
RebasedList(const ListArrayType& list) {
  using Offset = typename ListArrayType::offset_type;
  const Offset first = list.value_offset(0);
  const Offset last = list.value_offset(list.length());
  ARROW_ASSIGN_OR_RAISE(
      auto offsets,
      arrow::AllocateBuffer((list.length() + 1) * static_cast<int64_t>(sizeof(Offset))));
  auto* out = reinterpret_cast<Offset*>(offsets->mutable_data());
  for (int64_t i = 0; i <= list.length(); ++i) out[i] = list.value_offset(i) - first;
  return std::make_pair(std::shared_ptr<arrow::Buffer>(std::move(offsets)),
                        list.values()->Slice(first, last - first));
}

// The list's validity from offset 0 (the rebased offsets start there).
arrow::Result<std::shared_ptr<arrow::Buffer>> Validity(const arrow::Array& array) {
  if (array.null_count() == 0) return std::shared_ptr<arrow::Buffer>();
  return arrow::internal::CopyBitmap(arrow::default_memory_pool(),
                                     array.null_bitmap_data(), array.offset(),
                                     array.length());
}

template <typename ListArrayType>
arrow::Result<std::shared_ptr<arrow::Array>> NarrowVarList(
    const std::string& element, const ListArrayType& list,
    const arrow::Field& element_target) {
  ARROW_ASSIGN_OR_RAISE(auto rebased, RebasedList(list));
  ARROW_ASSIGN_OR_RAISE(auto values, Narrow(element, rebased.second,
                                            element_target.type(), /*in_list=*/true));
  ARROW_ASSIGN_OR_RAISE(auto validity, Validity(list));
  // The element named as the table names it, with the data's nullability.
  auto type = std::make_shared<typename ListArrayType::TypeClass>(
      arrow::field(element_target.name(), values->type(),
                   list.list_type()->value_field()->nullable()));
  return std::make_shared<ListArrayType>(type, list.length(), rebased.first, values,
                                         validity, list.null_count());
}

arrow::Result<std::shared_ptr<arrow::Array>> NarrowMap(const std::string& name,
                                                       const arrow::MapArray& map,
                                                       const arrow::MapType& target) {
  ARROW_ASSIGN_OR_RAISE(auto rebased, RebasedList(map));
  const auto& entries = static_cast<const arrow::StructArray&>(*rebased.second);
  ARROW_ASSIGN_OR_RAISE(auto keys, Narrow(name + ".key", entries.field(0),
                                          target.key_type(), /*in_list=*/true));
  ARROW_ASSIGN_OR_RAISE(auto items, Narrow(name + ".value", entries.field(1),
                                           target.item_type(), /*in_list=*/true));
  ARROW_ASSIGN_OR_RAISE(auto validity, Validity(map));
  const auto& type = static_cast<const arrow::MapType&>(*map.type());
  auto narrowed = std::make_shared<arrow::MapType>(
      type.key_field()->WithType(keys->type()),
      type.item_field()->WithType(items->type()), type.keys_sorted());
  return std::make_shared<arrow::MapArray>(narrowed, map.length(), rebased.first, keys,
                                           items, validity, map.null_count());
}

arrow::Result<std::shared_ptr<arrow::Array>> NarrowList(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const arrow::DataType& target) {
  if (column->type_id() == arrow::Type::MAP) {
    if (target.id() != arrow::Type::MAP) return column;
    return NarrowMap(name, static_cast<const arrow::MapArray&>(*column),
                     static_cast<const arrow::MapType&>(target));
  }
  if (target.id() != arrow::Type::LIST) return column;
  const auto& element_target = target.field(0)->type();
  const std::string element = name + ".element";
  switch (column->type_id()) {
    case arrow::Type::LIST:
      return NarrowVarList(element, static_cast<const arrow::ListArray&>(*column),
                           *target.field(0));
    case arrow::Type::LARGE_LIST:
      return NarrowVarList(element, static_cast<const arrow::LargeListArray&>(*column),
                           *target.field(0));
    case arrow::Type::FIXED_SIZE_LIST: {
      const auto& list = static_cast<const arrow::FixedSizeListArray&>(*column);
      const int32_t size = list.value_length();
      ARROW_ASSIGN_OR_RAISE(
          auto values,
          Narrow(element,
                 list.values()->Slice(list.offset() * size, list.length() * size),
                 element_target, /*in_list=*/true));
      ARROW_ASSIGN_OR_RAISE(auto validity, Validity(list));
      auto type = arrow::fixed_size_list(
          list.list_type()->value_field()->WithType(values->type()), size);
      return std::make_shared<arrow::FixedSizeListArray>(type, list.length(), values,
                                                         validity, list.null_count());
    }
    default:  // list views: the caller's cast converts them
      return column;
  }
}

arrow::Result<std::shared_ptr<arrow::Array>> Narrow(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target, bool in_list) {
  if (!HasWideInteger(*column->type())) return column;
  if (column->type_id() == arrow::Type::DICTIONARY) {
    ARROW_ASSIGN_OR_RAISE(
        auto decoded,
        arrow::compute::Cast(
            *column,
            static_cast<const arrow::DictionaryType&>(*column->type()).value_type()));
    return Narrow(name, decoded, target, in_list);
  }
  if (column->type_id() == arrow::Type::UINT64) {
    return NarrowUnsigned64(name, static_cast<const arrow::UInt64Array&>(*column), target,
                            in_list, column);
  }
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

bool HasWideInteger(const arrow::DataType& type) {
  if (IsWide(type)) return true;
  if (type.id() == arrow::Type::DICTIONARY) {
    return HasWideInteger(*static_cast<const arrow::DictionaryType&>(type).value_type());
  }
  for (const auto& field : type.fields()) {
    if (HasWideInteger(*field->type())) return true;
  }
  return false;
}

arrow::Result<std::shared_ptr<arrow::Array>> NarrowWideIntegers(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target) {
  return Narrow(name, column, target, /*in_list=*/false);
}

}  // namespace ampdelta::delta

#include "ampdelta/evm/abi_encode.h"

#include <array>
#include <cstring>

#include <arrow/array.h>
#include <arrow/array/builder_binary.h>
#include <arrow/type.h>
#include <arrow/util/decimal.h>

#include "ampdelta/evm/abi_word.h"

namespace ampdelta::evm {
namespace {

using Kind = SolType::Kind;

Limbs SignExtended(int64_t value) {
  const uint64_t fill = value < 0 ? ~uint64_t{0} : 0;
  return {static_cast<uint64_t>(value), fill, fill, fill};
}

bool IsNegative(const Limbs& limbs) { return (limbs[3] >> 63) != 0; }

// Whether the number fits `bits` bits, signed (two's complement) or unsigned.
bool FitsBits(const Limbs& limbs, int bits, bool is_signed) {
  if (!is_signed && IsNegative(limbs)) return false;
  const int significant = is_signed ? bits - 1 : bits;
  const uint64_t fill = IsNegative(limbs) ? ~uint64_t{0} : 0;
  for (int bit = significant; bit < 256; ++bit) {
    const uint64_t value = (limbs[bit / 64] >> (bit % 64)) & 1;
    if (value != (fill & 1)) return false;
  }
  return true;
}

arrow::Status CannotConvert(const std::string& what, const SolType& type) {
  return arrow::Status::Invalid("cannot convert ", what, " to solidity type ",
                                type.Canonical());
}

std::string ArrowTypeName(const arrow::DataType& type) {
  if (type.id() == arrow::Type::DECIMAL128 || type.id() == arrow::Type::DECIMAL256) {
    const auto& decimal = static_cast<const arrow::DecimalType&>(type);
    return std::string(type.id() == arrow::Type::DECIMAL128 ? "Decimal128("
                                                            : "Decimal256(") +
           std::to_string(decimal.precision()) + ", " + std::to_string(decimal.scale()) +
           ")";
  }
  return type.ToString();
}

template <typename ArrayType>
arrow::Result<SolValue> SignedValue(const SolType& type, const arrow::Array& array,
                                    int64_t row) {
  if (type.kind != Kind::kInt) {
    return arrow::Status::Invalid("expected int type, got ", type.Canonical());
  }
  const int64_t value = static_cast<const ArrayType&>(array).Value(row);
  if (type.bits < 64) {
    const int64_t max = (int64_t{1} << (type.bits - 1)) - 1;
    const int64_t min = -max - 1;
    if (value < min || value > max) {
      return arrow::Status::Invalid("cannot convert int to solidity int", type.bits, ": ",
                                    value, " not in [", min, ", ", max, "]");
    }
  }
  return SolValue{WordOf(SignExtended(value)), {}};
}

template <typename ArrayType>
arrow::Result<SolValue> UnsignedValue(const SolType& type, const arrow::Array& array,
                                      int64_t row) {
  if (type.kind != Kind::kUint) {
    return arrow::Status::Invalid("expected uint type, got ", type.Canonical());
  }
  const uint64_t value = static_cast<const ArrayType&>(array).Value(row);
  if (type.bits < 64 && value >= (uint64_t{1} << type.bits)) {
    return arrow::Status::Invalid("cannot convert uint to solidity uint", type.bits, ": ",
                                  value, " not in [0, ", uint64_t{1} << type.bits, ")");
  }
  return SolValue{WordOf({value, 0, 0, 0}), {}};
}

// A decimal of scale ≤ 0 is taken as its unscaled integer (Amp ignores a negative scale).
arrow::Result<SolValue> DecimalValue(const SolType& type, const arrow::Array& array,
                                     int64_t row) {
  const auto& decimal_type = static_cast<const arrow::DecimalType&>(*array.type());
  if (decimal_type.scale() > 0) {
    return arrow::Status::Invalid("Unsupported type ", ArrowTypeName(decimal_type),
                                  " for Solidity type ", type.Canonical());
  }
  const bool is_signed = type.kind == Kind::kInt;
  if (!is_signed && type.kind != Kind::kUint) {
    return arrow::Status::Invalid("expected uint type, got ", type.Canonical());
  }
  Limbs limbs{};
  std::string text;
  if (array.type_id() == arrow::Type::DECIMAL128) {
    const arrow::Decimal128 value(
        static_cast<const arrow::Decimal128Array&>(array).GetValue(row));
    const uint64_t fill = value.IsNegative() ? ~uint64_t{0} : 0;
    limbs = {value.low_bits(), static_cast<uint64_t>(value.high_bits()), fill, fill};
    text = value.ToIntegerString();
  } else {
    const arrow::Decimal256 value(
        static_cast<const arrow::Decimal256Array&>(array).GetValue(row));
    limbs = value.little_endian_array();
    text = value.ToIntegerString();
  }
  if (!FitsBits(limbs, type.bits, is_signed)) {
    return arrow::Status::Invalid("cannot convert decimal to solidity ", type.Canonical(),
                                  ": ", text, " is out of range");
  }
  return SolValue{WordOf(limbs), {}};
}

SolValue Padded(std::string_view bytes) {
  std::string word(kAbiWordBytes, '\0');
  std::memcpy(word.data(), bytes.data(), bytes.size());
  return SolValue{std::move(word), {}};
}

arrow::Result<SolValue> FixedBinaryValue(const SolType& type, const arrow::Array& array,
                                         int64_t row) {
  const auto& binary = static_cast<const arrow::FixedSizeBinaryArray&>(array);
  const std::string_view bytes = binary.GetView(row);
  if (type.kind == Kind::kFixedBytes && bytes.size() == type.size) return Padded(bytes);
  if (type.kind == Kind::kAddress && bytes.size() == 20) {
    std::string word(12, '\0');
    word.append(bytes);
    return SolValue{std::move(word), {}};
  }
  return CannotConvert("fixed size binary of size " + std::to_string(bytes.size()), type);
}

arrow::Result<std::vector<SolValue>> Items(const SolType& item,
                                           const arrow::Array& values, int64_t offset,
                                           int64_t count) {
  std::vector<SolValue> items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto value, ToSolValue(item, values, offset + i));
    items.push_back(std::move(value));
  }
  return items;
}

arrow::Result<SolValue> ListValue(const SolType& type, const arrow::Array& array,
                                  int64_t row) {
  if (type.kind != Kind::kArray) return CannotConvert("list", type);
  const auto& list = static_cast<const arrow::ListArray&>(array);
  SolValue value;
  ARROW_ASSIGN_OR_RAISE(value.items,
                        Items(type.components[0], *list.values(), list.value_offset(row),
                              list.value_length(row)));
  return value;
}

arrow::Result<SolValue> FixedListValue(const SolType& type, const arrow::Array& array,
                                       int64_t row) {
  const auto& list = static_cast<const arrow::FixedSizeListArray&>(array);
  const auto size = static_cast<size_t>(list.value_length());
  if (type.kind != Kind::kFixedArray || type.size != size) {
    return CannotConvert("fixed size list of size " + std::to_string(size), type);
  }
  SolValue value;
  ARROW_ASSIGN_OR_RAISE(value.items, Items(type.components[0], *list.values(),
                                           list.value_offset(row), list.value_length()));
  return value;
}

arrow::Result<SolValue> StructValue(const SolType& type, const arrow::Array& array,
                                    int64_t row) {
  const auto& record = static_cast<const arrow::StructArray&>(array);
  const auto size = static_cast<size_t>(record.num_fields());
  if (type.kind != Kind::kTuple || type.components.size() != size) {
    return CannotConvert("struct of size " + std::to_string(size), type);
  }
  SolValue value;
  for (size_t i = 0; i < size; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto item, ToSolValue(type.components[i],
                                                *record.field(static_cast<int>(i)), row));
    value.items.push_back(std::move(item));
  }
  return value;
}

template <typename ArrayType>
arrow::Result<SolValue> BytesValue(const SolType& type, Kind expected, const char* what,
                                   const arrow::Array& array, int64_t row) {
  if (type.kind != expected) return CannotConvert(what, type);
  return SolValue{std::string(static_cast<const ArrayType&>(array).GetView(row)), {}};
}

void AppendWord(uint64_t number, std::string* out) {
  out->append(WordOf({number, 0, 0, 0}));
}

std::string Encode(const SolType& type, const SolValue& value);

std::string EncodeItems(const SolType& item, const std::vector<SolValue>& items) {
  return EncodeSequence(std::vector<const SolType*>(items.size(), &item), items);
}

std::string Encode(const SolType& type, const SolValue& value) {
  switch (type.kind) {
    case Kind::kBytes:
    case Kind::kString: {
      std::string out;
      AppendWord(value.bytes.size(), &out);
      out.append(value.bytes);
      out.append((kAbiWordBytes - value.bytes.size() % kAbiWordBytes) % kAbiWordBytes,
                 '\0');
      return out;
    }
    case Kind::kArray: {
      std::string out;
      AppendWord(value.items.size(), &out);
      out.append(EncodeItems(type.components[0], value.items));
      return out;
    }
    case Kind::kFixedArray:
      return EncodeItems(type.components[0], value.items);
    case Kind::kTuple: {
      std::vector<const SolType*> members;
      for (const auto& component : type.components) members.push_back(&component);
      return EncodeSequence(members, value.items);
    }
    default:
      return value.bytes;
  }
}

}  // namespace

arrow::Result<SolValue> ToSolValue(const SolType& type, const arrow::Array& array,
                                   int64_t row) {
  switch (array.type_id()) {
    case arrow::Type::BOOL:
      if (type.kind != Kind::kBool) return CannotConvert("boolean", type);
      return SolValue{
          WordOf({static_cast<const arrow::BooleanArray&>(array).Value(row) ? 1u : 0u, 0,
                  0, 0}),
          {}};
    case arrow::Type::INT8:
      return SignedValue<arrow::Int8Array>(type, array, row);
    case arrow::Type::INT16:
      return SignedValue<arrow::Int16Array>(type, array, row);
    case arrow::Type::INT32:
      return SignedValue<arrow::Int32Array>(type, array, row);
    case arrow::Type::INT64:
      return SignedValue<arrow::Int64Array>(type, array, row);
    case arrow::Type::UINT8:
      return UnsignedValue<arrow::UInt8Array>(type, array, row);
    case arrow::Type::UINT16:
      return UnsignedValue<arrow::UInt16Array>(type, array, row);
    case arrow::Type::UINT32:
      return UnsignedValue<arrow::UInt32Array>(type, array, row);
    case arrow::Type::UINT64:
      return UnsignedValue<arrow::UInt64Array>(type, array, row);
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
      return DecimalValue(type, array, row);
    case arrow::Type::STRING:
      return BytesValue<arrow::StringArray>(type, Kind::kString, "string", array, row);
    case arrow::Type::LARGE_STRING:
      return BytesValue<arrow::LargeStringArray>(type, Kind::kString, "string", array,
                                                 row);
    case arrow::Type::BINARY:
      return BytesValue<arrow::BinaryArray>(type, Kind::kBytes, "bytes", array, row);
    case arrow::Type::LARGE_BINARY:
      return BytesValue<arrow::LargeBinaryArray>(type, Kind::kBytes, "bytes", array, row);
    case arrow::Type::FIXED_SIZE_BINARY:
      return FixedBinaryValue(type, array, row);
    case arrow::Type::LIST:
      return ListValue(type, array, row);
    case arrow::Type::FIXED_SIZE_LIST:
      return FixedListValue(type, array, row);
    case arrow::Type::STRUCT:
      return StructValue(type, array, row);
    default:
      return arrow::Status::Invalid("Unsupported type ", ArrowTypeName(*array.type()),
                                    " for Solidity type ", type.Canonical());
  }
}

std::string EncodeSequence(const std::vector<const SolType*>& types,
                           const std::vector<SolValue>& values) {
  size_t head_size = 0;
  for (const SolType* type : types) head_size += type->HeadSize();
  std::string head;
  std::string tail;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i]->IsDynamic()) {
      AppendWord(head_size + tail.size(), &head);
      tail.append(Encode(*types[i], values[i]));
    } else {
      head.append(Encode(*types[i], values[i]));
    }
  }
  return head + tail;
}

arrow::Result<std::shared_ptr<arrow::Array>> EncodeValues(const SolType& type,
                                                          const arrow::Array& values,
                                                          arrow::MemoryPool* pool) {
  arrow::BinaryBuilder builder(pool);
  for (int64_t row = 0; row < values.length(); ++row) {
    ARROW_ASSIGN_OR_RAISE(auto value, ToSolValue(type, values, row));
    ARROW_RETURN_NOT_OK(builder.Append(EncodeSequence({&type}, {value})));
  }
  return builder.Finish();
}

arrow::Result<std::shared_ptr<arrow::Array>> EncodeCalls(
    const FunctionSignature& function,
    const std::vector<std::shared_ptr<arrow::Array>>& arguments, int64_t rows,
    arrow::MemoryPool* pool) {
  if (arguments.size() != function.inputs.size()) {
    return arrow::Status::Invalid("expected ", function.inputs.size(),
                                  " arguments for the function signature but got ",
                                  arguments.size());
  }
  for (const auto& argument : arguments) {
    if (argument->length() != rows) {
      return arrow::Status::Invalid("an argument has ", argument->length(),
                                    " values for ", rows, " rows");
    }
  }
  std::vector<const SolType*> types;
  for (const auto& input : function.inputs) types.push_back(&input.type);
  const auto selector = function.Selector();
  arrow::BinaryBuilder builder(pool);
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<SolValue> values;
    for (size_t i = 0; i < types.size(); ++i) {
      ARROW_ASSIGN_OR_RAISE(auto value, ToSolValue(*types[i], *arguments[i], row));
      values.push_back(std::move(value));
    }
    std::string call(reinterpret_cast<const char*>(selector.data()), selector.size());
    call.append(EncodeSequence(types, values));
    ARROW_RETURN_NOT_OK(builder.Append(call));
  }
  return builder.Finish();
}

}  // namespace ampdelta::evm

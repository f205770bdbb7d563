#include "ampdelta/evm/sol_type.h"

#include <arrow/type.h>

namespace ampdelta::evm {
namespace {

// Amp's thresholds (crates/core/common/src/udfs/evm_common.rs): the bits a signed decimal
// of 38 or 76 digits holds, less the sign.
constexpr int kDecimal128MaxBits = 125;
constexpr int kDecimal256MaxBits = 251;

std::shared_ptr<arrow::DataType> IntegerType(bool is_signed, int bits) {
  if (bits <= 8) return is_signed ? arrow::int8() : arrow::uint8();
  if (bits <= 16) return is_signed ? arrow::int16() : arrow::uint16();
  if (bits <= 32) return is_signed ? arrow::int32() : arrow::uint32();
  if (bits <= 64) return is_signed ? arrow::int64() : arrow::uint64();
  if (bits <= kDecimal128MaxBits) return arrow::decimal128(38, 0);
  if (bits <= kDecimal256MaxBits) return arrow::decimal256(76, 0);
  return arrow::utf8();
}

}  // namespace

std::string SolType::Canonical() const {
  switch (kind) {
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int" + std::to_string(bits);
    case Kind::kUint:
      return "uint" + std::to_string(bits);
    case Kind::kAddress:
      return "address";
    case Kind::kFixedBytes:
      return "bytes" + std::to_string(size);
    case Kind::kBytes:
      return "bytes";
    case Kind::kString:
      return "string";
    case Kind::kFunction:
      return "function";
    case Kind::kArray:
      return components[0].Canonical() + "[]";
    case Kind::kFixedArray:
      return components[0].Canonical() + "[" + std::to_string(size) + "]";
    case Kind::kTuple: {
      std::string out = "(";
      for (size_t i = 0; i < components.size(); ++i) {
        if (i > 0) out += ",";
        out += components[i].Canonical();
      }
      return out + ")";
    }
  }
  return "";
}

bool SolType::IsDynamic() const {
  switch (kind) {
    case Kind::kBytes:
    case Kind::kString:
    case Kind::kArray:
      return true;
    case Kind::kFixedArray:
      return components[0].IsDynamic();
    case Kind::kTuple:
      for (const auto& component : components) {
        if (component.IsDynamic()) return true;
      }
      return false;
    default:
      return false;
  }
}

size_t SolType::HeadSize() const {
  if (IsDynamic()) return 32;
  if (kind == Kind::kFixedArray) return size * components[0].HeadSize();
  if (kind == Kind::kTuple) {
    size_t total = 0;
    for (const auto& component : components) total += component.HeadSize();
    return total;
  }
  return 32;
}

bool SolType::IsValueType() const {
  switch (kind) {
    case Kind::kBool:
    case Kind::kInt:
    case Kind::kUint:
    case Kind::kAddress:
    case Kind::kFixedBytes:
      return true;
    default:
      return false;
  }
}

arrow::Result<std::shared_ptr<arrow::DataType>> ArrowTypeOf(const SolType& type) {
  using Kind = SolType::Kind;
  switch (type.kind) {
    case Kind::kBool:
      return arrow::boolean();
    case Kind::kInt:
    case Kind::kUint:
      return IntegerType(type.kind == Kind::kInt, type.bits);
    case Kind::kAddress:
      return arrow::fixed_size_binary(20);
    case Kind::kFixedBytes:
      return arrow::fixed_size_binary(static_cast<int32_t>(type.size));
    case Kind::kBytes:
      return arrow::binary();
    case Kind::kString:
      return arrow::utf8();
    case Kind::kFunction:
      return arrow::Status::Invalid(
          "cannot convert solidity type function to arrow data type");
    case Kind::kArray: {
      ARROW_ASSIGN_OR_RAISE(auto item, ArrowTypeOf(type.components[0]));
      return arrow::list(arrow::field("item", item));
    }
    case Kind::kFixedArray: {
      ARROW_ASSIGN_OR_RAISE(auto item, ArrowTypeOf(type.components[0]));
      return arrow::fixed_size_list(arrow::field("item", item),
                                    static_cast<int32_t>(type.size));
    }
    case Kind::kTuple: {
      arrow::FieldVector fields;
      for (size_t i = 0; i < type.components.size(); ++i) {
        ARROW_ASSIGN_OR_RAISE(auto child, ArrowTypeOf(type.components[i]));
        fields.push_back(arrow::field("c" + std::to_string(i), child));
      }
      return arrow::struct_(fields);
    }
  }
  return arrow::Status::Invalid("unknown solidity type");
}

arrow::Result<std::shared_ptr<arrow::DataType>> IndexedArrowTypeOf(const SolType& type) {
  if (type.kind == SolType::Kind::kFunction) return ArrowTypeOf(type);
  if (type.IsValueType()) return ArrowTypeOf(type);
  return arrow::fixed_size_binary(32);
}

}  // namespace ampdelta::evm

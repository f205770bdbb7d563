#include "ampdelta/evm/abi_decode.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_decimal.h>
#include <arrow/array/builder_nested.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/util/decimal.h>

#include "ampdelta/evm/abi_word.h"
#include "ampdelta/util/utf8.h"

namespace ampdelta::evm {
namespace {

// Values (and words of bytes copied) a decode may produce per word of input, plus a
// floor: well-formed encodings need at most one per word; offsets that alias one region
// many times are refused instead of multiplying it.
constexpr size_t kValuesPerWord = 64;
constexpr size_t kMinValueBudget = 4096;

using Kind = SolType::Kind;

class Decoder {
 public:
  explicit Decoder(std::string_view data)
      : budget_(kMinValueBudget + kValuesPerWord * (data.size() / kAbiWordBytes)) {}

  // The tuple of `types` whose encoding starts at `area`'s first byte.
  arrow::Result<std::vector<SolValue>> Tuple(const std::vector<const SolType*>& types,
                                             std::string_view area) {
    std::vector<SolValue> values;
    values.reserve(types.size());
    size_t head = 0;
    for (const SolType* type : types) {
      if (type->IsDynamic()) {
        ARROW_ASSIGN_OR_RAISE(const size_t offset, Number(area, head));
        ARROW_ASSIGN_OR_RAISE(auto value, Dynamic(*type, area.substr(offset)));
        values.push_back(std::move(value));
      } else {
        ARROW_ASSIGN_OR_RAISE(auto value, Static(*type, area, head));
        values.push_back(std::move(value));
      }
      head += type->HeadSize();
    }
    return values;
  }

 private:
  arrow::Status Spend(size_t values) {
    if (values > budget_) {
      return arrow::Status::Invalid(
          "the encoding expands to more values than its size allows");
    }
    budget_ -= values;
    return arrow::Status::OK();
  }

  static arrow::Result<std::string_view> Word(std::string_view area, size_t at) {
    if (at > area.size() || area.size() - at < kAbiWordBytes) {
      return arrow::Status::Invalid("a word at byte ", at, " is past the end (",
                                    area.size(), " bytes)");
    }
    return area.substr(at, kAbiWordBytes);
  }

  // A word read as an offset or a length: it must be a small number.
  static arrow::Result<size_t> Number(std::string_view area, size_t at) {
    ARROW_ASSIGN_OR_RAISE(auto word, Word(area, at));
    if (std::any_of(word.begin(), word.end() - 8, [](char c) { return c != 0; })) {
      return arrow::Status::Invalid("an offset or length at byte ", at, " is too large");
    }
    const uint64_t value = LowBytes(word, 8);
    if (value > area.size()) {
      return arrow::Status::Invalid("an offset or length at byte ", at, " (", value,
                                    ") is past the end (", area.size(), " bytes)");
    }
    return static_cast<size_t>(value);
  }

  static std::vector<const SolType*> Repeat(const SolType& item, size_t count) {
    return std::vector<const SolType*>(count, &item);
  }

  // A value encoded in place, at `at` of the enclosing tuple's area.
  arrow::Result<SolValue> Static(const SolType& type, std::string_view area, size_t at) {
    ARROW_RETURN_NOT_OK(Spend(1));
    SolValue value;
    if (type.kind == Kind::kFixedArray || type.kind == Kind::kTuple) {
      if (at > area.size()) return arrow::Status::Invalid("a tuple is past the end");
      const auto members = type.kind == Kind::kTuple
                               ? Members(type)
                               : Repeat(type.components[0], type.size);
      ARROW_ASSIGN_OR_RAISE(value.items, Tuple(members, area.substr(at)));
      return value;
    }
    ARROW_ASSIGN_OR_RAISE(auto word, Word(area, at));
    value.bytes = std::string(word);
    return value;
  }

  // A value behind an offset; `area` starts where it does.
  arrow::Result<SolValue> Dynamic(const SolType& type, std::string_view area) {
    ARROW_RETURN_NOT_OK(Spend(1));
    SolValue value;
    switch (type.kind) {
      case Kind::kBytes:
      case Kind::kString: {
        ARROW_ASSIGN_OR_RAISE(const size_t length, Number(area, 0));
        if (area.size() - kAbiWordBytes < length) {
          return arrow::Status::Invalid("bytes of length ", length, " are past the end");
        }
        // Copies are paid for by the word: items that all point at one large blob would
        // otherwise copy it once per item.
        ARROW_RETURN_NOT_OK(Spend(length / kAbiWordBytes));
        value.bytes = std::string(area.substr(kAbiWordBytes, length));
        return value;
      }
      case Kind::kArray: {
        ARROW_ASSIGN_OR_RAISE(const size_t count, Number(area, 0));
        // Each item's head takes at least a word: a count the data cannot hold is bad.
        if (count > (area.size() - kAbiWordBytes) / kAbiWordBytes) {
          return arrow::Status::Invalid("an array of ", count, " items is past the end");
        }
        ARROW_RETURN_NOT_OK(Spend(count));
        ARROW_ASSIGN_OR_RAISE(value.items, Tuple(Repeat(type.components[0], count),
                                                 area.substr(kAbiWordBytes)));
        return value;
      }
      case Kind::kFixedArray: {
        ARROW_ASSIGN_OR_RAISE(value.items,
                              Tuple(Repeat(type.components[0], type.size), area));
        return value;
      }
      case Kind::kTuple: {
        ARROW_ASSIGN_OR_RAISE(value.items, Tuple(Members(type), area));
        return value;
      }
      default:
        return arrow::Status::Invalid(type.Canonical(), " is not a dynamic type");
    }
  }

  static std::vector<const SolType*> Members(const SolType& tuple) {
    std::vector<const SolType*> members;
    for (const auto& component : tuple.components) members.push_back(&component);
    return members;
  }

  size_t budget_;
};

template <typename Builder, typename Native>
arrow::Status AppendInteger(arrow::ArrayBuilder* builder, uint64_t low) {
  return static_cast<Builder*>(builder)->Append(static_cast<Native>(low));
}

// The word cut to the type's low `bits` and extended again (with the sign bit when
// signed): a malformed word's value still fits the type's decimal precision.
std::string Truncated(std::string_view word, int bits, bool is_signed) {
  const size_t keep = static_cast<size_t>(bits) / 8;
  std::string out(word);
  const bool negative =
      is_signed && (static_cast<uint8_t>(word[kAbiWordBytes - keep]) & 0x80) != 0;
  std::fill(out.begin(), out.end() - static_cast<std::ptrdiff_t>(keep),
            negative ? '\xff' : '\0');
  return out;
}

arrow::Status AppendIntegerWord(const SolType& type, std::string_view full_word,
                                arrow::ArrayBuilder* builder) {
  const bool is_signed = type.kind == Kind::kInt;
  const int bits = type.bits;
  const std::string word = Truncated(full_word, bits, is_signed);
  if (bits <= 8) {
    return is_signed
               ? AppendInteger<arrow::Int8Builder, int8_t>(builder, LowBytes(word, 1))
               : AppendInteger<arrow::UInt8Builder, uint8_t>(builder, LowBytes(word, 1));
  }
  if (bits <= 16) {
    return is_signed
               ? AppendInteger<arrow::Int16Builder, int16_t>(builder, LowBytes(word, 2))
               : AppendInteger<arrow::UInt16Builder, uint16_t>(builder,
                                                               LowBytes(word, 2));
  }
  if (bits <= 32) {
    return is_signed
               ? AppendInteger<arrow::Int32Builder, int32_t>(builder, LowBytes(word, 4))
               : AppendInteger<arrow::UInt32Builder, uint32_t>(builder,
                                                               LowBytes(word, 4));
  }
  if (bits <= 64) {
    return is_signed
               ? AppendInteger<arrow::Int64Builder, int64_t>(builder, LowBytes(word, 8))
               : AppendInteger<arrow::UInt64Builder, uint64_t>(builder,
                                                               LowBytes(word, 8));
  }
  if (bits <= 125) {
    // The low 16 bytes as a signed 128-bit number: a well-formed word's value fits.
    const arrow::Decimal128 value(static_cast<int64_t>(LowBytes(word.substr(0, 24), 8)),
                                  LowBytes(word, 8));
    return static_cast<arrow::Decimal128Builder*>(builder)->Append(value);
  }
  if (bits <= 251) {
    const arrow::Decimal256 value(
        arrow::BasicDecimal256(arrow::BasicDecimal256::LittleEndianArray, LimbsOf(word)));
    return static_cast<arrow::Decimal256Builder*>(builder)->Append(value);
  }
  return static_cast<arrow::StringBuilder*>(builder)->Append(
      WordToDecimal(word, is_signed));
}

arrow::Status AppendItems(const SolType& item, const std::vector<SolValue>& items,
                          arrow::ArrayBuilder* builder) {
  for (const auto& value : items) ARROW_RETURN_NOT_OK(AppendValue(item, value, builder));
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::vector<SolValue>> DecodeSequence(
    const std::vector<const SolType*>& types, std::string_view data) {
  Decoder decoder(data);
  return decoder.Tuple(types, data);
}

std::string WordToDecimal(std::string_view word, bool is_signed) {
  auto limbs = LimbsOf(word);
  const bool negative = is_signed && (limbs[3] >> 63) != 0;
  if (negative) {  // two's complement: invert and add one
    bool carry = true;
    for (auto& limb : limbs) {
      limb = ~limb;
      if (carry) carry = ++limb == 0;
    }
  }
  std::string digits;
  constexpr uint64_t kTen19 = 10'000'000'000'000'000'000ULL;
  while (
      std::any_of(limbs.begin(), limbs.end(), [](uint64_t limb) { return limb != 0; })) {
    unsigned __int128 remainder = 0;
    for (int i = 3; i >= 0; --i) {
      const unsigned __int128 current = (remainder << 64) | limbs[i];
      limbs[i] = static_cast<uint64_t>(current / kTen19);
      remainder = current % kTen19;
    }
    auto chunk = static_cast<uint64_t>(remainder);
    const bool last =
        std::all_of(limbs.begin(), limbs.end(), [](uint64_t l) { return l == 0; });
    for (int i = 0; i < 19 && (!last || chunk != 0); ++i) {
      digits.push_back(static_cast<char>('0' + chunk % 10));
      chunk /= 10;
    }
  }
  if (digits.empty()) digits = "0";
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

arrow::Status AppendValue(const SolType& type, const SolValue& value,
                          arrow::ArrayBuilder* builder) {
  switch (type.kind) {
    case Kind::kBool:
      // Byte 31 alone, as Amp's vectorized decoder reads it.
      return static_cast<arrow::BooleanBuilder*>(builder)->Append(
          value.bytes[kAbiWordBytes - 1] != 0);
    case Kind::kInt:
    case Kind::kUint:
      return AppendIntegerWord(type, value.bytes, builder);
    case Kind::kAddress:
      return static_cast<arrow::FixedSizeBinaryBuilder*>(builder)->Append(
          value.bytes.substr(12, 20));
    case Kind::kFixedBytes:
      return static_cast<arrow::FixedSizeBinaryBuilder*>(builder)->Append(
          value.bytes.substr(0, type.size));
    case Kind::kBytes:
      return static_cast<arrow::BinaryBuilder*>(builder)->Append(value.bytes);
    case Kind::kString:
      return static_cast<arrow::StringBuilder*>(builder)->Append(
          ReplaceNonUtf8(value.bytes));
    case Kind::kFunction:
      return arrow::Status::Invalid(
          "cannot convert solidity type function to arrow data type");
    case Kind::kArray: {
      auto* list = static_cast<arrow::ListBuilder*>(builder);
      ARROW_RETURN_NOT_OK(list->Append());
      return AppendItems(type.components[0], value.items, list->value_builder());
    }
    case Kind::kFixedArray: {
      auto* list = static_cast<arrow::FixedSizeListBuilder*>(builder);
      ARROW_RETURN_NOT_OK(list->Append());
      return AppendItems(type.components[0], value.items, list->value_builder());
    }
    case Kind::kTuple: {
      auto* tuple = static_cast<arrow::StructBuilder*>(builder);
      ARROW_RETURN_NOT_OK(tuple->Append());
      for (size_t i = 0; i < type.components.size(); ++i) {
        ARROW_RETURN_NOT_OK(AppendValue(type.components[i], value.items[i],
                                        tuple->field_builder(static_cast<int>(i))));
      }
      return arrow::Status::OK();
    }
  }
  return arrow::Status::Invalid("unknown solidity type");
}

arrow::Status AppendTopic(const SolType& type, std::string_view word,
                          arrow::ArrayBuilder* builder) {
  if (word.size() != kAbiWordBytes) return arrow::Status::Invalid("a topic is 32 bytes");
  if (type.IsValueType())
    return AppendValue(type, SolValue{std::string(word), {}}, builder);
  return static_cast<arrow::FixedSizeBinaryBuilder*>(builder)->Append(word);
}

}  // namespace ampdelta::evm

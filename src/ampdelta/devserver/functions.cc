#include "ampdelta/devserver/functions.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <arrow/array.h>
#include <arrow/array/builder_binary.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/decimal.h>

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/numbers.h"

namespace ampdelta::devserver {
namespace {

// shift_units' bound on |units| (Amp's MAX_UNITS).
constexpr int64_t kMaxUnits = 32;

// A decimal number as sign, digits and the power of ten they are scaled by.
struct DecimalText {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};

// `[+-]digits[.digits][(e|E)[+-]digits]`, at least one digit.
std::optional<DecimalText> ParseDecimalText(std::string_view text) {
  DecimalText out;
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    out.negative = text[i] == '-';
    ++i;
  }
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      out.digits.push_back(c);
      if (point) --out.exponent;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (out.digits.empty()) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::string_view rest = text.substr(i + 1);
    // One sign at most: ParseInt64 alone would take the '-' of "e+-5".
    if (!rest.empty() && rest[0] == '+') rest.remove_prefix(1);
    if (rest.empty() || (rest[0] == '+') || (rest[0] == '-' && text[i + 1] == '+')) {
      return std::nullopt;
    }
    auto exponent = ParseInt64(rest);
    if (!exponent || *exponent > 1'000'000 || *exponent < -1'000'000) return std::nullopt;
    out.exponent += *exponent;
    i = text.size();
  }
  if (i != text.size()) return std::nullopt;
  return out;
}

// Plain text without exponent or trailing zeros, as bigdecimal's
// normalized().to_plain_string() writes it.
std::string PlainText(DecimalText number) {
  auto& digits = number.digits;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) return "0";
  while (digits.back() == '0') {
    digits.pop_back();
    ++number.exponent;
  }
  std::string out = number.negative ? "-" : "";
  if (number.exponent >= 0) {
    return out + digits + std::string(static_cast<size_t>(number.exponent), '0');
  }
  const auto fraction = static_cast<size_t>(-number.exponent);
  if (digits.size() > fraction) {
    return out + digits.substr(0, digits.size() - fraction) + "." +
           digits.substr(digits.size() - fraction);
  }
  return out + "0." + std::string(fraction - digits.size(), '0') + digits;
}

// An integer value of any width as its exact decimal text; nullopt for other types.
std::optional<std::string> IntegerText(const arrow::Array& values, int64_t row) {
  switch (values.type_id()) {
    case arrow::Type::INT8:
      return std::to_string(static_cast<const arrow::Int8Array&>(values).Value(row));
    case arrow::Type::INT16:
      return std::to_string(static_cast<const arrow::Int16Array&>(values).Value(row));
    case arrow::Type::INT32:
      return std::to_string(static_cast<const arrow::Int32Array&>(values).Value(row));
    case arrow::Type::INT64:
      return std::to_string(static_cast<const arrow::Int64Array&>(values).Value(row));
    case arrow::Type::UINT8:
      return std::to_string(static_cast<const arrow::UInt8Array&>(values).Value(row));
    case arrow::Type::UINT16:
      return std::to_string(static_cast<const arrow::UInt16Array&>(values).Value(row));
    case arrow::Type::UINT32:
      return std::to_string(static_cast<const arrow::UInt32Array&>(values).Value(row));
    case arrow::Type::UINT64:
      return std::to_string(static_cast<const arrow::UInt64Array&>(values).Value(row));
    default:
      return std::nullopt;
  }
}

// A float in its shortest round-trip form.
template <typename Float>
arrow::Result<std::string> FloatText(Float value, const arrow::DataType& type) {
  if (!std::isfinite(value)) {
    return FunctionError("shift_units", "failed to parse " + type.ToString() + ": " +
                                            std::to_string(value) + " is not a number");
  }
  std::array<char, 64> buffer{};
  auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), result.ptr);
}

// A decimal's digits scaled by its (non-negative) scale, as decimal text.
template <typename Decimal>
std::string ScaledText(const Decimal& value, int32_t scale) {
  return value.ToIntegerString() + (scale > 0 ? "e-" + std::to_string(scale) : "");
}

// A value of the first argument as decimal text: integers exactly, floats in their
// shortest round-trip form, decimals scaled (a negative scale is ignored, as in Amp).
arrow::Result<std::optional<std::string>> ValueText(const arrow::Array& values,
                                                    int64_t row) {
  if (values.IsNull(row)) return std::nullopt;
  switch (values.type_id()) {
    case arrow::Type::FLOAT:
      return FloatText(static_cast<const arrow::FloatArray&>(values).Value(row),
                       *values.type());
    case arrow::Type::DOUBLE:
      return FloatText(static_cast<const arrow::DoubleArray&>(values).Value(row),
                       *values.type());
    case arrow::Type::DECIMAL128:
      return ScaledText(
          arrow::Decimal128(
              static_cast<const arrow::Decimal128Array&>(values).GetValue(row)),
          static_cast<const arrow::Decimal128Type&>(*values.type()).scale());
    case arrow::Type::DECIMAL256:
      return ScaledText(
          arrow::Decimal256(
              static_cast<const arrow::Decimal256Array&>(values).GetValue(row)),
          static_cast<const arrow::Decimal256Type&>(*values.type()).scale());
    case arrow::Type::STRING:
      return std::string(static_cast<const arrow::StringArray&>(values).GetView(row));
    default:
      return IntegerText(values, row);  // the binder admits integers only besides
  }
}

// A value of the second argument; a null one counts as 1, as in Amp.
arrow::Result<int64_t> Units(const arrow::Array& units, int64_t row) {
  if (units.IsNull(row)) return 1;
  if (units.type_id() == arrow::Type::STRING) {
    const std::string text(static_cast<const arrow::StringArray&>(units).GetView(row));
    auto parsed = ParseInt64(text);
    if (!parsed)
      return FunctionError("shift_units", "failed to parse integer: '" + text + "'");
    return *parsed;
  }
  const std::string text = IntegerText(units, row).value_or("?");
  auto parsed = ParseInt64(text);
  if (!parsed) {  // a uint64 above the largest int64
    return FunctionError("shift_units",
                         "units must be between -32 and 32 (got " + text + ")");
  }
  return *parsed;
}

bool IsOneOf(const arrow::DataType& type, std::initializer_list<arrow::Type::type> ids) {
  for (auto id : ids) {
    if (type.id() == id) return true;
  }
  return false;
}

class ShiftUnits : public BoundFunction {
 public:
  std::shared_ptr<arrow::DataType> type() const override { return arrow::utf8(); }

  arrow::Result<arrow::Datum> Call(const std::vector<arrow::Datum>& args,
                                   int64_t rows) const override {
    const bool scalars = args[0].is_scalar() && args[1].is_scalar();
    ARROW_ASSIGN_OR_RAISE(auto arrays, ArgumentArrays(args, scalars ? 1 : rows));
    arrow::StringBuilder out;
    for (int64_t row = 0; row < arrays[0]->length(); ++row) {
      ARROW_ASSIGN_OR_RAISE(auto text, ValueText(*arrays[0], row));
      ARROW_ASSIGN_OR_RAISE(const int64_t units, Units(*arrays[1], row));
      if (!text) {
        if (scalars) {
          return FunctionError("shift_units", "value must be a non-null numeric type");
        }
        ARROW_RETURN_NOT_OK(out.AppendNull());
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(auto shifted, ShiftDecimalText(*text, units));
      ARROW_RETURN_NOT_OK(out.Append(shifted));
    }
    ARROW_ASSIGN_OR_RAISE(auto result, out.Finish());
    if (scalars) return result->GetScalar(0);
    return result;
  }
};

arrow::Result<std::unique_ptr<BoundFunction>> BindShiftUnits(
    const std::string& /*name*/, const std::vector<ArgumentInfo>& args) {
  if (args.size() != 2) {
    return FunctionError("shift_units",
                         "expected 2 arguments, but got " + std::to_string(args.size()));
  }
  using T = arrow::Type;
  if (!IsOneOf(*args[0].type, {T::INT8, T::INT16, T::INT32, T::INT64, T::UINT8, T::UINT16,
                               T::UINT32, T::UINT64, T::FLOAT, T::DOUBLE, T::DECIMAL128,
                               T::DECIMAL256, T::STRING})) {
    return FunctionError("shift_units",
                         "expected numeric type or Utf8 for first argument, got " +
                             args[0].type->ToString());
  }
  if (!IsOneOf(*args[1].type, {T::INT8, T::INT16, T::INT32, T::INT64, T::UINT8, T::UINT16,
                               T::UINT32, T::UINT64, T::STRING})) {
    return FunctionError(
        "shift_units",
        "expected numeric type for second argument, got " + args[1].type->ToString());
  }
  return std::make_unique<ShiftUnits>();
}

}  // namespace

arrow::Status FunctionError(std::string_view function, const std::string& what) {
  return arrow::Status::Invalid("invalid query: ", function, ": ", what);
}

arrow::Result<std::vector<std::shared_ptr<arrow::Array>>> ArgumentArrays(
    const std::vector<arrow::Datum>& args, int64_t rows) {
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const auto& arg : args) {
    if (arg.is_array()) {
      arrays.push_back(arg.make_array());
    } else {
      ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*arg.scalar(), rows));
      arrays.push_back(std::move(array));
    }
  }
  return arrays;
}

arrow::Result<std::string> ShiftDecimalText(std::string_view value, int64_t units) {
  if (units > kMaxUnits || units < -kMaxUnits) {
    return FunctionError("shift_units", "units must be between -32 and 32 (got " +
                                            std::to_string(units) + ")");
  }
  auto number = ParseDecimalText(value);
  if (!number) {
    return FunctionError("shift_units", "failed to convert String to BigDecimal: '" +
                                            std::string(value) + "' is not a number");
  }
  number->exponent += units;
  return PlainText(std::move(*number));
}

namespace {

const ScalarFunction* FindFunction(std::string_view name) {
  static const ScalarFunction kShiftUnits{"shift_units", BindShiftUnits};
  if (name == kShiftUnits.name) return &kShiftUnits;
  for (const auto& function : EvmFunctions()) {
    if (function.name == name) return &function;
  }
  return nullptr;
}

}  // namespace

bool IsScalarFunction(std::string_view name) { return FindFunction(name) != nullptr; }

arrow::Result<std::unique_ptr<BoundFunction>> BindFunction(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  const ScalarFunction* function = FindFunction(name);
  if (function == nullptr) {
    return arrow::Status::Invalid("invalid query: unsupported SQL construct: function ",
                                  AsciiUpper(name), "()");
  }
  return function->bind(name, args);
}

}  // namespace ampdelta::devserver

// Amp's EVM functions on the dev server (docs/evm-functions.md has the mapping and the
// ampd sources): each binds its arguments as ampd plans them — signatures and Solidity
// types must be string literals, parsed once — and calls the evm module per batch.

#include <functional>

#include <arrow/array.h>
#include <arrow/array/builder_binary.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/devserver/functions.h"
#include "ampdelta/evm/abi_encode.h"
#include "ampdelta/evm/call_decoder.h"
#include "ampdelta/evm/event_decoder.h"
#include "ampdelta/evm/signature.h"
#include "ampdelta/util/hex.h"

namespace ampdelta::devserver {
namespace {

using CallFn = std::function<arrow::Result<arrow::Datum>(
    const std::vector<arrow::Datum>& args, int64_t rows)>;

// A function bound to its result type and a closure over what binding parsed.
class EvmFunction : public BoundFunction {
 public:
  EvmFunction(std::string name, std::shared_ptr<arrow::DataType> type, CallFn call)
      : name_(std::move(name)), type_(std::move(type)), call_(std::move(call)) {}

  std::shared_ptr<arrow::DataType> type() const override { return type_; }

  arrow::Result<arrow::Datum> Call(const std::vector<arrow::Datum>& args,
                                   int64_t rows) const override {
    auto result = call_(args, rows);
    if (result.ok() || result.status().message().rfind("invalid query: ", 0) == 0) {
      return result;
    }
    return FunctionError(name_, result.status().message());
  }

 private:
  std::string name_;
  std::shared_ptr<arrow::DataType> type_;
  CallFn call_;
};

std::unique_ptr<BoundFunction> Make(const std::string& name,
                                    std::shared_ptr<arrow::DataType> type, CallFn call) {
  return std::make_unique<EvmFunction>(name, std::move(type), std::move(call));
}

arrow::Status CheckCount(const std::string& name, const std::vector<ArgumentInfo>& args,
                         size_t expected) {
  if (args.size() == expected) return arrow::Status::OK();
  return FunctionError(name, "expected " + std::to_string(expected) + " argument" +
                                 (expected == 1 ? "" : "s") + ", but got " +
                                 std::to_string(args.size()));
}

// The text of a string-literal argument; `not_literal` is ampd's message when it is not
// a literal at all.
arrow::Result<std::string> StringLiteral(const std::string& name, const ArgumentInfo& arg,
                                         const std::string& not_literal) {
  if (arg.literal == nullptr) return FunctionError(name, not_literal);
  if (arg.literal->kind != sql::Literal::Kind::kString) {
    return FunctionError(name, "expected Utf8, got " + arg.type->ToString());
  }
  return arg.literal->text;
}

// Whether the argument has `type`, or is a NULL literal (a null of that type).
bool Accepts(const ArgumentInfo& arg, const std::shared_ptr<arrow::DataType>& type) {
  return arg.type->Equals(*type) || arg.type->id() == arrow::Type::NA;
}

arrow::Status CheckType(const std::string& name, const ArgumentInfo& arg, size_t index,
                        const std::shared_ptr<arrow::DataType>& type) {
  if (Accepts(arg, type)) return arrow::Status::OK();
  return FunctionError(name, "argument " + std::to_string(index + 1) + " must be " +
                                 type->ToString() + ", got " + arg.type->ToString());
}

// Arguments as arrays of `rows` values, NULL literals as nulls of `types[i]`.
arrow::Result<std::vector<std::shared_ptr<arrow::Array>>> TypedArrays(
    const std::vector<arrow::Datum>& args, int64_t rows,
    const std::vector<std::shared_ptr<arrow::DataType>>& types) {
  ARROW_ASSIGN_OR_RAISE(auto arrays, ArgumentArrays(args, rows));
  for (size_t i = 0; i < arrays.size() && i < types.size(); ++i) {
    if (arrays[i]->type_id() == arrow::Type::NA) {
      ARROW_ASSIGN_OR_RAISE(arrays[i], arrow::MakeArrayOfNull(types[i], rows));
    }
  }
  return arrays;
}

arrow::Result<std::unique_ptr<BoundFunction>> BindDecodeLog(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  ARROW_RETURN_NOT_OK(CheckCount(name, args, 5));
  const std::vector<std::shared_ptr<arrow::DataType>> types = {
      arrow::fixed_size_binary(32), arrow::fixed_size_binary(32),
      arrow::fixed_size_binary(32), arrow::binary()};
  for (size_t i = 0; i < types.size(); ++i) {
    ARROW_RETURN_NOT_OK(CheckType(name, args[i], i, types[i]));
  }
  ARROW_ASSIGN_OR_RAISE(
      auto text,
      StringLiteral(name, args[4], "expected a string literal for the signature"));
  auto event = evm::ParseEventSignature(text);
  if (!event.ok()) {
    return FunctionError(name, "parse event signature: " + event.status().message());
  }
  auto type = evm::DecodedEventType(*event);
  if (!type.ok()) return FunctionError(name, type.status().message());
  return Make(name, *type,
              [event = *event, types](const std::vector<arrow::Datum>& args,
                                      int64_t rows) -> arrow::Result<arrow::Datum> {
                ARROW_ASSIGN_OR_RAISE(auto arrays, TypedArrays(args, rows, types));
                return evm::DecodeLogs(event, *arrays[0], *arrays[1], *arrays[2],
                                       *arrays[3], arrow::default_memory_pool());
              });
}

arrow::Result<std::unique_ptr<BoundFunction>> BindTopic(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  ARROW_RETURN_NOT_OK(CheckCount(name, args, 1));
  ARROW_ASSIGN_OR_RAISE(
      auto text, StringLiteral(name, args[0],
                               "expected scalar argument for the signature but got " +
                                   args[0].type->ToString()));
  auto event = evm::ParseEventSignature(text);
  if (!event.ok()) {
    return FunctionError(name, "parse event signature: " + event.status().message());
  }
  if (event->anonymous) {
    return FunctionError(name, "anonymous event " + event->name + " has no topic0");
  }
  const auto topic = event->Topic0();
  auto scalar = std::make_shared<arrow::FixedSizeBinaryScalar>(
      arrow::Buffer::FromString(std::string(topic.begin(), topic.end())),
      arrow::fixed_size_binary(32));
  return Make(name, scalar->type, [scalar](const std::vector<arrow::Datum>&, int64_t) {
    return arrow::Result<arrow::Datum>(arrow::Datum(scalar));
  });
}

arrow::Result<std::unique_ptr<BoundFunction>> BindEncodeHex(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  ARROW_RETURN_NOT_OK(CheckCount(name, args, 1));
  if (args[0].literal == nullptr) {
    return FunctionError(name,
                         "expected scalar argument but got " + args[0].type->ToString());
  }
  if (args[0].literal->kind == sql::Literal::Kind::kNull) {
    return FunctionError(name, "input cannot be null");
  }
  ARROW_ASSIGN_OR_RAISE(auto text, StringLiteral(name, args[0], ""));
  std::string_view hex = text;
  if (hex.size() >= 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) {
    hex.remove_prefix(2);
  }
  auto bytes = FromHex(hex);
  if (!bytes.ok()) {
    return FunctionError(name, "invalid hex string: " + bytes.status().message());
  }
  if (bytes->size() != 20 && bytes->size() != 32) {
    return FunctionError(name,
                         "expected 20 or 32 bytes, got " + std::to_string(bytes->size()));
  }
  auto type = arrow::fixed_size_binary(static_cast<int32_t>(bytes->size()));
  auto scalar = std::make_shared<arrow::FixedSizeBinaryScalar>(
      arrow::Buffer::FromString(std::move(*bytes)), type);
  return Make(name, type, [scalar](const std::vector<arrow::Datum>&, int64_t) {
    return arrow::Result<arrow::Datum>(arrow::Datum(scalar));
  });
}

arrow::Result<std::unique_ptr<BoundFunction>> BindDecodeHex(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  ARROW_RETURN_NOT_OK(CheckCount(name, args, 1));
  const auto& type = *args[0].type;
  if (type.id() != arrow::Type::FIXED_SIZE_BINARY ||
      (static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width() != 20 &&
       static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width() != 32)) {
    return FunctionError(
        name,
        "expected FixedSizeBinary(20) or FixedSizeBinary(32), got " + type.ToString());
  }
  return Make(name, arrow::utf8(),
              [name](const std::vector<arrow::Datum>& args,
                     int64_t) -> arrow::Result<arrow::Datum> {
                if (!args[0].is_array()) {
                  return FunctionError(
                      name, "expected Array, but got " + args[0].type()->ToString());
                }
                const auto values = args[0].make_array();
                const auto& binary =
                    static_cast<const arrow::FixedSizeBinaryArray&>(*values);
                arrow::StringBuilder out;
                for (int64_t row = 0; row < binary.length(); ++row) {
                  if (binary.IsNull(row)) {
                    ARROW_RETURN_NOT_OK(out.AppendNull());
                  } else {
                    ARROW_RETURN_NOT_OK(out.Append(ToHex0x(binary.GetView(row))));
                  }
                }
                return out.Finish();
              });
}

arrow::Result<evm::SolType> ParseTypeArgument(const std::string& name,
                                              const std::string& text) {
  auto type = evm::ParseSolType(text);
  if (!type.ok()) {
    return FunctionError(name,
                         "failed to parse Solidity type: " + type.status().message());
  }
  return type;
}

// The (data, literal) arguments of evm_decode_type and evm_decode_params: the literal's
// text.
arrow::Result<std::string> DataAndLiteral(const std::string& name,
                                          const std::vector<ArgumentInfo>& args,
                                          const std::string& not_literal) {
  ARROW_RETURN_NOT_OK(CheckCount(name, args, 2));
  if (args[0].type->id() == arrow::Type::NA) {
    return FunctionError(name, "expected Binary scalar, but got Binary");
  }
  ARROW_RETURN_NOT_OK(CheckType(name, args[0], 0, arrow::binary()));
  return StringLiteral(name, args[1], not_literal);
}

// A function of its first argument's values alone (the second is a literal).
using OfValues = std::function<arrow::Result<std::shared_ptr<arrow::Array>>(
    const arrow::Array& values)>;

std::unique_ptr<BoundFunction> MakeOfFirst(const std::string& name,
                                           std::shared_ptr<arrow::DataType> type,
                                           OfValues of_values) {
  return Make(
      name, std::move(type),
      [of_values = std::move(of_values)](const std::vector<arrow::Datum>& args,
                                         int64_t rows) -> arrow::Result<arrow::Datum> {
        ARROW_ASSIGN_OR_RAISE(auto arrays, ArgumentArrays({args[0]}, rows));
        return of_values(*arrays[0]);
      });
}

arrow::Result<std::unique_ptr<BoundFunction>> BindDecodeType(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  ARROW_ASSIGN_OR_RAISE(
      auto text,
      DataAndLiteral(name, args, "expected scalar argument for the Solidity type"));
  ARROW_ASSIGN_OR_RAISE(auto type, ParseTypeArgument(name, text));
  auto arrow_type = evm::ArrowTypeOf(type);
  if (!arrow_type.ok()) return FunctionError(name, arrow_type.status().message());
  return MakeOfFirst(name, *arrow_type, [type](const arrow::Array& data) {
    return evm::DecodeValues(type, data, arrow::default_memory_pool());
  });
}

arrow::Result<std::unique_ptr<BoundFunction>> BindEncodeType(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  if (args.size() != 2) {
    return FunctionError(
        name, "expected at 2 arguments, but got " + std::to_string(args.size()));
  }
  ARROW_ASSIGN_OR_RAISE(
      auto text, StringLiteral(name, args[1],
                               "expected scalar argument for the Solidity type but got " +
                                   args[1].type->ToString()));
  ARROW_ASSIGN_OR_RAISE(auto type, ParseTypeArgument(name, text));
  if (args[0].type->id() == arrow::Type::NA) {
    return FunctionError(name,
                         "Unsupported type Null for Solidity type " + type.Canonical());
  }
  return MakeOfFirst(name, arrow::binary(), [type](const arrow::Array& values) {
    return evm::EncodeValues(type, values, arrow::default_memory_pool());
  });
}

arrow::Result<evm::FunctionSignature> ParseFunctionArgument(const std::string& name,
                                                            const std::string& text) {
  auto function = evm::ParseFunctionSignature(text);
  if (!function.ok()) {
    return FunctionError(name,
                         "parse function signature: " + function.status().message());
  }
  for (const auto& input : function->inputs) {
    if (input.name.empty()) {
      return FunctionError(name,
                           "function " + function->name + " has unnamed input parameter");
    }
  }
  return function;
}

arrow::Result<std::unique_ptr<BoundFunction>> BindDecodeParams(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  ARROW_ASSIGN_OR_RAISE(
      auto text,
      DataAndLiteral(name, args, "expected a string literal for the signature"));
  ARROW_ASSIGN_OR_RAISE(auto function, ParseFunctionArgument(name, text));
  auto type = evm::FunctionParamsType(function);
  if (!type.ok()) return FunctionError(name, type.status().message());
  return MakeOfFirst(name, *type, [function](const arrow::Array& data) {
    return evm::DecodeCalls(function, data, arrow::default_memory_pool());
  });
}

arrow::Result<std::unique_ptr<BoundFunction>> BindEncodeParams(
    const std::string& name, const std::vector<ArgumentInfo>& args) {
  if (args.empty()) {
    return FunctionError(
        name, "expected at least 1 argument (Solidity function signature), but got 0");
  }
  const ArgumentInfo& signature = args.back();
  ARROW_ASSIGN_OR_RAISE(
      auto text,
      StringLiteral(
          name, signature,
          "expected scalar argument for the Solidity function signature but got " +
              signature.type->ToString()));
  ARROW_ASSIGN_OR_RAISE(auto function, ParseFunctionArgument(name, text));
  const size_t values = args.size() - 1;
  if (values != function.inputs.size()) {
    return FunctionError(name, "expected " + std::to_string(function.inputs.size()) +
                                   " arguments for the function signature but got " +
                                   std::to_string(values));
  }
  for (size_t i = 0; i < values; ++i) {
    if (args[i].type->id() == arrow::Type::NA) {
      return FunctionError(name, "Unsupported type Null for Solidity type " +
                                     function.inputs[i].type.Canonical());
    }
  }
  return Make(name, arrow::binary(),
              [function](const std::vector<arrow::Datum>& args,
                         int64_t rows) -> arrow::Result<arrow::Datum> {
                ARROW_ASSIGN_OR_RAISE(
                    auto arrays,
                    ArgumentArrays(
                        std::vector<arrow::Datum>(args.begin(), args.end() - 1), rows));
                return evm::EncodeCalls(function, arrays, rows,
                                        arrow::default_memory_pool());
              });
}

}  // namespace

const std::vector<ScalarFunction>& EvmFunctions() {
  static const std::vector<ScalarFunction> kFunctions = {
      {"evm_decode_log", BindDecodeLog},
      {"evm_decode", BindDecodeLog},
      {"evm_topic", BindTopic},
      {"evm_encode_hex", BindEncodeHex},
      {"evm_decode_hex", BindDecodeHex},
      {"evm_decode_type", BindDecodeType},
      {"evm_encode_type", BindEncodeType},
      {"evm_decode_params", BindDecodeParams},
      {"evm_encode_params", BindEncodeParams},
  };
  return kFunctions;
}

}  // namespace ampdelta::devserver

#include "ampdelta/evm/call_decoder.h"

#include <cstring>

#include <arrow/array.h>
#include <arrow/array/builder_base.h>
#include <arrow/array/builder_nested.h>
#include <arrow/type.h>

#include "ampdelta/evm/abi_decode.h"

namespace ampdelta::evm {
namespace {

constexpr size_t kSelectorSize = 4;

arrow::Status CheckBinary(const arrow::Array& data) {
  if (data.type_id() != arrow::Type::BINARY) {
    return arrow::Status::TypeError("data must be Binary, not ", data.type()->ToString());
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Array>> DecodeValues(const SolType& type,
                                                          const arrow::Array& data,
                                                          arrow::MemoryPool* pool) {
  ARROW_RETURN_NOT_OK(CheckBinary(data));
  ARROW_ASSIGN_OR_RAISE(auto arrow_type, ArrowTypeOf(type));
  std::unique_ptr<arrow::ArrayBuilder> builder;
  ARROW_RETURN_NOT_OK(arrow::MakeBuilder(pool, arrow_type, &builder));
  const auto& binary = static_cast<const arrow::BinaryArray&>(data);
  for (int64_t row = 0; row < binary.length(); ++row) {
    arrow::Result<std::vector<SolValue>> values =
        binary.IsNull(row) ? arrow::Status::Invalid("no data")
                           : DecodeSequence({&type}, binary.GetView(row));
    if (values.ok()) {
      ARROW_RETURN_NOT_OK(AppendValue(type, (*values)[0], builder.get()));
    } else {
      ARROW_RETURN_NOT_OK(builder->AppendNull());
    }
  }
  return builder->Finish();
}

arrow::Result<std::shared_ptr<arrow::DataType>> FunctionParamsType(
    const FunctionSignature& function) {
  arrow::FieldVector fields;
  for (const auto& input : function.inputs) {
    if (input.name.empty()) {
      return arrow::Status::Invalid("function ", function.name,
                                    " has unnamed input parameter");
    }
    ARROW_ASSIGN_OR_RAISE(auto type, ArrowTypeOf(input.type));
    fields.push_back(arrow::field(input.name, std::move(type)));
  }
  return arrow::struct_(std::move(fields));
}

arrow::Result<std::shared_ptr<arrow::Array>> DecodeCalls(
    const FunctionSignature& function, const arrow::Array& data,
    arrow::MemoryPool* pool) {
  ARROW_RETURN_NOT_OK(CheckBinary(data));
  ARROW_ASSIGN_OR_RAISE(auto type, FunctionParamsType(function));
  std::unique_ptr<arrow::ArrayBuilder> builder;
  ARROW_RETURN_NOT_OK(arrow::MakeBuilder(pool, type, &builder));
  auto* record = static_cast<arrow::StructBuilder*>(builder.get());
  std::vector<const SolType*> types;
  for (const auto& input : function.inputs) types.push_back(&input.type);
  const auto selector = function.Selector();
  const auto& binary = static_cast<const arrow::BinaryArray&>(data);
  for (int64_t row = 0; row < binary.length(); ++row) {
    const std::string_view call = binary.IsNull(row) ? "" : binary.GetView(row);
    const bool selected = binary.IsValid(row) && call.size() >= kSelectorSize &&
                          std::memcmp(call.data(), selector.data(), kSelectorSize) == 0;
    arrow::Result<std::vector<SolValue>> values =
        selected ? DecodeSequence(types, call.substr(kSelectorSize))
                 : arrow::Status::Invalid("not a call of ", function.name);
    if (!values.ok()) {
      ARROW_RETURN_NOT_OK(record->AppendNull());
      continue;
    }
    ARROW_RETURN_NOT_OK(record->Append());
    for (size_t i = 0; i < types.size(); ++i) {
      ARROW_RETURN_NOT_OK(AppendValue(*types[i], (*values)[i],
                                      record->field_builder(static_cast<int>(i))));
    }
  }
  return builder->Finish();
}

}  // namespace ampdelta::evm

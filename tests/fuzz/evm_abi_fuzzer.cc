// libFuzzer target: the Solidity ABI reader behind the dev server's EVM functions. The
// input is `signature\ndata`: the text is parsed as a type, an event and a function; the
// data is decoded as the event's body and as the function's calldata, and the Arrow
// arrays built from it must validate. A hostile log or calldata may hold any bytes.

#include <cstdint>
#include <memory>
#include <string>

#include <arrow/array.h>
#include <arrow/array/builder_base.h>
#include <arrow/memory_pool.h>

#include "ampdelta/evm/abi_decode.h"
#include "ampdelta/evm/signature.h"
#include "ampdelta/evm/sol_type.h"
#include "tests/fuzz/fuzz_support.h"

namespace evm = ampdelta::evm;

namespace {

// Decode `data` as `params` and convert every value; the arrays must be valid Arrow.
void DecodeAndConvert(const std::vector<evm::SolParam>& params, std::string_view data) {
  std::vector<const evm::SolType*> types;
  for (const auto& param : params) types.push_back(&param.type);
  auto values = evm::DecodeSequence(types, data);
  if (!values.ok()) return;
  AMPDELTA_FUZZ_CHECK(values->size() == types.size(), "one value per type");
  for (size_t i = 0; i < types.size(); ++i) {
    auto arrow_type = evm::ArrowTypeOf(*types[i]);
    if (!arrow_type.ok()) continue;
    std::unique_ptr<arrow::ArrayBuilder> builder;
    AMPDELTA_FUZZ_CHECK(
        arrow::MakeBuilder(arrow::default_memory_pool(), *arrow_type, &builder).ok(),
        "a builder for every mapped type");
    AMPDELTA_FUZZ_CHECK(evm::AppendValue(*types[i], (*values)[i], builder.get()).ok(),
                        "a decoded value converts");
    auto array = builder->Finish();
    AMPDELTA_FUZZ_CHECK(array.ok() && (*array)->ValidateFull().ok(),
                        "the converted array is valid");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = ampdelta::fuzz::AsText(data, size);
  const size_t newline = bytes.find('\n');
  const std::string_view text = bytes.substr(0, newline);
  const std::string_view body =
      newline == std::string_view::npos ? std::string_view() : bytes.substr(newline + 1);

  if (auto type = evm::ParseSolType(text); type.ok()) {
    auto again = evm::ParseSolType(type->Canonical());
    AMPDELTA_FUZZ_CHECK(again.ok() && again->Canonical() == type->Canonical(),
                        "a canonical type parses to itself");
    DecodeAndConvert({evm::SolParam{*type, "", false}}, body);
  }
  if (auto event = evm::ParseEventSignature(text); event.ok()) {
    (void)event->Topic0();
    std::vector<evm::SolParam> body_params;
    for (const auto* param : event->Body()) body_params.push_back(*param);
    DecodeAndConvert(body_params, body);
  }
  if (auto function = evm::ParseFunctionSignature(text); function.ok()) {
    (void)function->Selector();
    DecodeAndConvert(function->inputs, body.size() >= 4 ? body.substr(4) : body);
  }
  return 0;
}

#include "ampdelta/evm/signature.h"

#include "ampdelta/evm/sol_parser.h"
#include "ampdelta/util/keccak.h"

namespace ampdelta::evm {
namespace {

// Amp's limit: topic0 is the signature, topics 1 to 3 the indexed parameters.
constexpr size_t kMaxIndexed = 3;

std::string CanonicalCall(const std::string& name, const std::vector<SolParam>& params) {
  std::string out = name + "(";
  for (size_t i = 0; i < params.size(); ++i) {
    if (i > 0) out += ",";
    out += params[i].type.Canonical();
  }
  return out + ")";
}

bool IsModifier(std::string_view word) {
  return word == "external" || word == "public" || word == "internal" ||
         word == "private" || word == "view" || word == "pure" || word == "payable" ||
         word == "nonpayable" || word == "virtual" || word == "override";
}

}  // namespace

std::string EventSignature::Canonical() const { return CanonicalCall(name, params); }

std::array<uint8_t, 32> EventSignature::Topic0() const { return Keccak256(Canonical()); }

std::vector<const SolParam*> EventSignature::Indexed() const {
  std::vector<const SolParam*> out;
  for (const auto& param : params) {
    if (param.indexed) out.push_back(&param);
  }
  return out;
}

std::vector<const SolParam*> EventSignature::Body() const {
  std::vector<const SolParam*> out;
  for (const auto& param : params) {
    if (!param.indexed) out.push_back(&param);
  }
  return out;
}

arrow::Result<EventSignature> ParseEventSignature(std::string_view text) {
  SolParser parser(text);
  EventSignature event;
  parser.ConsumeWord("event");
  event.name = std::string(parser.Identifier());
  if (event.name.empty()) return parser.Error("expected the event's name");
  ARROW_ASSIGN_OR_RAISE(event.params, parser.Params(/*allow_indexed=*/true));
  event.anonymous = parser.ConsumeWord("anonymous");
  parser.Consume(';');
  ARROW_RETURN_NOT_OK(parser.ExpectEnd());
  const size_t indexed = event.Indexed().size();
  if (indexed > kMaxIndexed) {
    return arrow::Status::Invalid("event can only have 3 indexed parameters but has ",
                                  indexed);
  }
  return event;
}

std::string FunctionSignature::Canonical() const { return CanonicalCall(name, inputs); }

std::array<uint8_t, 4> FunctionSignature::Selector() const {
  const auto hash = Keccak256(Canonical());
  return {hash[0], hash[1], hash[2], hash[3]};
}

arrow::Result<FunctionSignature> ParseFunctionSignature(std::string_view text) {
  SolParser parser(text);
  FunctionSignature function;
  parser.ConsumeWord("function");
  function.name = std::string(parser.Identifier());
  if (function.name.empty()) return parser.Error("expected the function's name");
  ARROW_ASSIGN_OR_RAISE(function.inputs, parser.Params(/*allow_indexed=*/false));
  while (true) {
    const std::string_view word = parser.Identifier();
    if (word.empty()) break;
    if (word == "returns") {
      ARROW_ASSIGN_OR_RAISE(function.outputs, parser.Params(/*allow_indexed=*/false));
    } else if (!IsModifier(word)) {
      return parser.Error("unexpected '" + std::string(word) + "'");
    }
  }
  parser.Consume(';');
  ARROW_RETURN_NOT_OK(parser.ExpectEnd());
  return function;
}

}  // namespace ampdelta::evm

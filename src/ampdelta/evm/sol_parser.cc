#include "ampdelta/evm/sol_parser.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace ampdelta::evm {
namespace {

// Deeper nesting than any real ABI, shallow enough that recursion cannot exhaust the
// stack.
constexpr int kMaxDepth = 32;
// Larger fixed arrays, or fixed arrays of them, would make one decoded value (or the
// nulls standing for a value that does not decode) bigger than any log or calldata.
constexpr size_t kMaxStaticValues = 1 << 16;

// How many values a value of `type` holds in place (a dynamic array counts as one),
// saturating above kMaxStaticValues.
size_t StaticValues(const SolType& type) {
  switch (type.kind) {
    case SolType::Kind::kFixedArray: {
      const size_t item = StaticValues(type.components[0]);
      return item != 0 && type.size > kMaxStaticValues / item ? kMaxStaticValues + 1
                                                              : 1 + type.size * item;
    }
    case SolType::Kind::kTuple: {
      size_t total = 1;
      for (const auto& component : type.components) {
        total = std::min(total + StaticValues(component), kMaxStaticValues + 1);
      }
      return total;
    }
    default:
      return 1;
  }
}

bool IsIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

bool IsIdentifierChar(char c) { return IsIdentifierStart(c) || (c >= '0' && c <= '9'); }

// The number after a prefix (`256` of `uint256`); false when it is not all digits.
bool Suffix(std::string_view digits, size_t* value) {
  if (digits.empty() || digits.size() > 6) return false;
  auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), *value);
  return error == std::errc() && end == digits.data() + digits.size() && digits[0] != '0';
}

// Data locations and other words a function parameter may carry before its name.
bool IsLocation(std::string_view word) {
  return word == "memory" || word == "calldata" || word == "storage" || word == "payable";
}

}  // namespace

void SolParser::SkipSpace() {
  while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                 text_[pos_] == '\n' || text_[pos_] == '\r')) {
    ++pos_;
  }
}

bool SolParser::AtEnd() {
  SkipSpace();
  return pos_ == text_.size();
}

arrow::Status SolParser::ExpectEnd() {
  if (!AtEnd()) return Error("unexpected text");
  return arrow::Status::OK();
}

arrow::Status SolParser::Error(std::string_view what) const {
  return arrow::Status::Invalid(what, " at position ", pos_, " of '", text_, "'");
}

bool SolParser::Consume(char c) {
  SkipSpace();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

std::string_view SolParser::Identifier() {
  SkipSpace();
  if (pos_ >= text_.size() || !IsIdentifierStart(text_[pos_])) return {};
  const size_t start = pos_;
  while (pos_ < text_.size() && IsIdentifierChar(text_[pos_])) ++pos_;
  return text_.substr(start, pos_ - start);
}

bool SolParser::ConsumeWord(std::string_view word) {
  const size_t saved = pos_;
  if (Identifier() == word) return true;
  pos_ = saved;
  return false;
}

arrow::Result<SolType> SolParser::ElementaryType(std::string_view word) {
  using Kind = SolType::Kind;
  SolType type;
  size_t n = 0;
  if (word == "bool") {
    type.kind = Kind::kBool;
  } else if (word == "address") {
    type.kind = Kind::kAddress;
  } else if (word == "string") {
    type.kind = Kind::kString;
  } else if (word == "bytes") {
    type.kind = Kind::kBytes;
  } else if (word == "function") {
    type.kind = Kind::kFunction;
  } else if (word == "int" || word == "uint") {
    type.kind = word == "int" ? Kind::kInt : Kind::kUint;
    type.bits = 256;
  } else if (word.substr(0, 5) == "bytes" && Suffix(word.substr(5), &n) && n <= 32) {
    type.kind = Kind::kFixedBytes;
    type.size = n;
  } else if ((word.substr(0, 3) == "int" && Suffix(word.substr(3), &n)) ||
             (word.substr(0, 4) == "uint" && Suffix(word.substr(4), &n))) {
    if (n % 8 != 0 || n > 256) return Error("invalid integer size " + std::to_string(n));
    type.kind = word[0] == 'i' ? Kind::kInt : Kind::kUint;
    type.bits = static_cast<int>(n);
  } else {
    return Error("unknown type '" + std::string(word) + "'");
  }
  return type;
}

arrow::Result<SolType> SolParser::TupleType() {
  SolType tuple;
  tuple.kind = SolType::Kind::kTuple;
  if (Consume(')')) return tuple;
  do {
    ARROW_ASSIGN_OR_RAISE(auto component, Type());
    Identifier();  // a component's name: not part of the type
    tuple.components.push_back(std::move(component));
  } while (Consume(','));
  if (!Consume(')')) return Error("expected ',' or ')' in a tuple");
  return CheckStaticSize(std::move(tuple));
}

arrow::Result<SolType> SolParser::BaseType() {
  if (Consume('(')) return TupleType();
  const std::string_view word = Identifier();
  if (word.empty()) return Error("expected a type");
  if (word == "tuple" && Consume('(')) return TupleType();
  return ElementaryType(word);
}

arrow::Result<SolType> SolParser::CheckStaticSize(SolType type) const {
  if (StaticValues(type) > kMaxStaticValues) {
    return Error("the type holds more than " + std::to_string(kMaxStaticValues) +
                 " values in place");
  }
  return type;
}

arrow::Result<SolType> SolParser::Type() {
  if (++depth_ > kMaxDepth) return Error("types nested too deeply");
  ARROW_ASSIGN_OR_RAISE(auto type, BaseType());
  const int outer_depth = depth_ - 1;
  while (Consume('[')) {
    // Each array dimension is a level of nesting too (of Arrow lists, and of recursion).
    if (++depth_ > kMaxDepth) return Error("types nested too deeply");
    SolType array;
    array.components.push_back(std::move(type));
    if (Consume(']')) {
      array.kind = SolType::Kind::kArray;
    } else {
      SkipSpace();
      const size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      size_t n = 0;
      if (!Suffix(text_.substr(start, pos_ - start), &n) || n > kMaxStaticValues)
        return Error("invalid array size");
      if (!Consume(']')) return Error("expected ']'");
      array.kind = SolType::Kind::kFixedArray;
      array.size = n;
    }
    ARROW_ASSIGN_OR_RAISE(type, CheckStaticSize(std::move(array)));
  }
  depth_ = outer_depth;
  return type;
}

arrow::Result<std::vector<SolParam>> SolParser::Params(bool allow_indexed) {
  if (!Consume('(')) return Error("expected '('");
  std::vector<SolParam> params;
  if (Consume(')')) return params;
  do {
    SolParam param;
    ARROW_ASSIGN_OR_RAISE(param.type, Type());
    std::string_view word = Identifier();
    while (!word.empty() && (IsLocation(word) || (allow_indexed && word == "indexed"))) {
      if (word == "indexed" && param.indexed) return Error("'indexed' twice");
      if (word == "indexed") param.indexed = true;
      word = Identifier();
    }
    param.name = std::string(word);
    params.push_back(std::move(param));
  } while (Consume(','));
  if (!Consume(')')) return Error("expected ',' or ')' in a parameter list");
  return params;
}

// Declared in sol_type.h, defined here so the type's unit need not include its parser.
arrow::Result<SolType> ParseSolType(std::string_view text) {
  SolParser parser(text);
  ARROW_ASSIGN_OR_RAISE(auto type, parser.Type());
  ARROW_RETURN_NOT_OK(parser.ExpectEnd());
  return type;
}

}  // namespace ampdelta::evm

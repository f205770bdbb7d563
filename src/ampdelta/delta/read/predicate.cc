#include "ampdelta/delta/read/predicate.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/type_widening.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

namespace cp = arrow::compute;
using nlohmann::json;

arrow::Status BadPredicate(const std::string& text, const std::string& why) {
  return InvalidInputError("invalid predicate '", text, "': ", why);
}

struct Token {
  enum Kind { kWord, kQuoted, kNumber, kString, kOp, kEnd } kind;
  std::string text;
};

arrow::Result<std::vector<Token>> Tokenize(const std::string& text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '_' || text[j] == '.'))
        ++j;
      tokens.push_back({Token::kWord, text.substr(i, j - i)});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '-' && i + 1 < text.size() &&
                std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      size_t j = i + 1;
      while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '.' || text[j] == 'e' || text[j] == 'E'))
        ++j;
      tokens.push_back({Token::kNumber, text.substr(i, j - i)});
      i = j;
    } else if (c == '\'' || c == '"' || c == '`') {
      std::string value;
      size_t j = i + 1;
      bool closed = false;
      while (j < text.size()) {
        if (text[j] == c) {
          if (j + 1 < text.size() && text[j + 1] == c) {
            value.push_back(c);
            j += 2;
            continue;
          }
          closed = true;
          break;
        }
        value.push_back(text[j++]);
      }
      if (!closed) return BadPredicate(text, "unterminated quote");
      tokens.push_back({c == '\'' ? Token::kString : Token::kQuoted, value});
      i = j + 1;
    } else {
      static const char* kOps[] = {"<=", ">=", "<>", "!=", "=", "<", ">"};
      bool found = false;
      for (const char* op : kOps) {
        if (text.compare(i, std::strlen(op), op) == 0) {
          tokens.push_back({Token::kOp, op});
          i += std::strlen(op);
          found = true;
          break;
        }
      }
      if (!found)
        return BadPredicate(text, std::string("unexpected character '") + c + "'");
    }
  }
  tokens.push_back({Token::kEnd, ""});
  return tokens;
}

const char* FunctionFor(const std::string& op) {
  if (op == "=") return "equal";
  if (op == "!=" || op == "<>") return "not_equal";
  if (op == "<") return "less";
  if (op == "<=") return "less_equal";
  if (op == ">") return "greater";
  return "greater_equal";
}

arrow::Result<std::shared_ptr<arrow::Scalar>> BindLiteral(const std::string& text,
                                                          const Token& token,
                                                          const arrow::Field& field) {
  const auto& type = field.type();
  if (token.kind == Token::kWord) {
    const std::string word = AsciiUpper(token.text);
    if ((word == "TRUE" || word == "FALSE") && type->id() == arrow::Type::BOOL) {
      return arrow::MakeScalar(word == "TRUE");
    }
    return BadPredicate(text, "'" + token.text + "' is not a literal");
  }
  if (token.kind != Token::kNumber && token.kind != Token::kString) {
    return BadPredicate(text, "expected a literal after the operator");
  }
  if (type->id() == arrow::Type::STRING && token.kind != Token::kString) {
    return BadPredicate(text,
                        "column '" + field.name() + "' is a string: quote the value");
  }
  if (type->id() == arrow::Type::BINARY && token.kind != Token::kString) {
    // A number never equals bytes; comparing them would silently match nothing.
    return BadPredicate(text,
                        "column '" + field.name() +
                            "' is binary: a number never matches it (quote the value)");
  }
  auto parsed = ParsePartitionValue(token.text, type);
  if (!parsed.ok()) {
    return BadPredicate(text, "'" + token.text + "' is not a valid " + type->ToString() +
                                  " for column '" + field.name() + "'");
  }
  return *parsed;
}

// Compare a scalar with a stats JSON value of the same column; nullopt when unknown.
std::optional<int> CompareToStat(const arrow::Scalar& value, const json& stat,
                                 const arrow::DataType& type, bool is_max) {
  std::shared_ptr<arrow::Scalar> bound;
  if (type.id() == arrow::Type::TIMESTAMP || type.id() == arrow::Type::DATE32) {
    if (!stat.is_string()) return std::nullopt;
    auto parsed = ParsePartitionValue(stat.get<std::string>(), type.GetSharedPtr());
    if (!parsed.ok()) return std::nullopt;
    bound = *parsed;
    if (type.id() == arrow::Type::TIMESTAMP && is_max) {
      // Stats keep milliseconds: the true max may be up to 999 µs above it.
      auto& ts = static_cast<arrow::TimestampScalar&>(*bound);
      ts.value += 999;
    }
  } else if (arrow::is_integer(type.id()) || arrow::is_floating(type.id())) {
    if (!stat.is_number()) return std::nullopt;
    auto parsed = arrow::Scalar::Parse(type.GetSharedPtr(), stat.dump());
    if (!parsed.ok()) return std::nullopt;
    bound = *parsed;
  } else {
    return std::nullopt;  // strings are truncated, decimals may be rounded: don't trust
  }
  auto less =
      cp::CallFunction("less", {arrow::Datum(value.GetSharedPtr()), arrow::Datum(bound)});
  auto greater = cp::CallFunction(
      "greater", {arrow::Datum(value.GetSharedPtr()), arrow::Datum(bound)});
  if (!less.ok() || !greater.ok()) return std::nullopt;
  if (static_cast<const arrow::BooleanScalar&>(*less->scalar()).value) return -1;
  if (static_cast<const arrow::BooleanScalar&>(*greater->scalar()).value) return 1;
  return 0;
}

}  // namespace

Predicate::Term Predicate::MakeTerm(const arrow::Field& field, std::string function,
                                    std::shared_ptr<arrow::Scalar> value) {
  return Term{field.name(),        PhysicalName(field), field.type(),
              std::move(function), std::move(value),    !WasWidened(field)};
}

arrow::Result<Predicate> Predicate::Parse(const std::string& text,
                                          const std::shared_ptr<arrow::Schema>& schema) {
  ARROW_ASSIGN_OR_RAISE(auto tokens, Tokenize(text));
  Predicate predicate;
  predicate.text_ = text;
  size_t pos = 0;
  auto column = [&]() -> arrow::Result<std::shared_ptr<arrow::Field>> {
    const Token& token = tokens[pos];
    if (token.kind != Token::kWord && token.kind != Token::kQuoted) {
      return BadPredicate(text, "expected a column name, found '" + token.text + "'");
    }
    ++pos;
    // Column names are case-insensitive in Delta.
    const int index = FindFieldIgnoreCase(*schema, token.text);
    auto field = index >= 0 ? schema->field(index) : nullptr;
    if (field == nullptr) {
      std::string names;
      for (const auto& f : schema->fields())
        names += (names.empty() ? "" : ", ") + f->name();
      return BadPredicate(text,
                          "no column '" + token.text + "' (columns: " + names + ")");
    }
    return field;
  };
  while (true) {
    if (tokens[pos].kind == Token::kEnd) return BadPredicate(text, "empty condition");
    ARROW_ASSIGN_OR_RAISE(auto field, column());
    const Token& next = tokens[pos];
    if (next.kind == Token::kWord && AsciiUpper(next.text) == "IS") {
      ++pos;
      bool negated = false;
      if (tokens[pos].kind == Token::kWord && AsciiUpper(tokens[pos].text) == "NOT") {
        negated = true;
        ++pos;
      }
      if (tokens[pos].kind != Token::kWord || AsciiUpper(tokens[pos].text) != "NULL") {
        return BadPredicate(text, "expected NULL after IS");
      }
      ++pos;
      predicate.terms_.push_back(
          MakeTerm(*field, negated ? "is_valid" : "is_null", nullptr));
    } else if (next.kind == Token::kWord && AsciiUpper(next.text) == "BETWEEN") {
      ++pos;
      ARROW_ASSIGN_OR_RAISE(auto low, BindLiteral(text, tokens[pos++], *field));
      if (tokens[pos].kind != Token::kWord || AsciiUpper(tokens[pos].text) != "AND") {
        return BadPredicate(text, "expected AND in BETWEEN");
      }
      ++pos;
      ARROW_ASSIGN_OR_RAISE(auto high, BindLiteral(text, tokens[pos++], *field));
      predicate.terms_.push_back(MakeTerm(*field, "greater_equal", low));
      predicate.terms_.push_back(MakeTerm(*field, "less_equal", high));
    } else if (next.kind == Token::kOp) {
      ++pos;
      ARROW_ASSIGN_OR_RAISE(auto value, BindLiteral(text, tokens[pos++], *field));
      predicate.terms_.push_back(MakeTerm(*field, FunctionFor(next.text), value));
    } else {
      return BadPredicate(text, "expected an operator after '" + field->name() + "'");
    }
    if (tokens[pos].kind == Token::kEnd) break;
    if (tokens[pos].kind == Token::kWord && AsciiUpper(tokens[pos].text) == "AND") {
      ++pos;
      continue;
    }
    return BadPredicate(text, "only AND is supported between conditions, found '" +
                                  tokens[pos].text + "'");
  }
  return predicate;
}

std::vector<std::string> Predicate::columns() const {
  std::vector<std::string> out;
  for (const auto& term : terms_) {
    if (std::find(out.begin(), out.end(), term.column) == out.end())
      out.push_back(term.column);
  }
  return out;
}

arrow::Result<std::shared_ptr<arrow::Array>> Predicate::Evaluate(
    const arrow::RecordBatch& batch) const {
  ARROW_ASSIGN_OR_RAISE(auto mask, EvaluateKleene(batch));
  // Null (unknown) never matches.
  ARROW_ASSIGN_OR_RAISE(
      arrow::Datum filled,
      cp::CallFunction("coalesce", {mask, arrow::Datum(arrow::MakeScalar(false))}));
  return filled.make_array();
}

arrow::Result<std::shared_ptr<arrow::Array>> Predicate::EvaluateKleene(
    const arrow::RecordBatch& batch) const {
  arrow::Datum mask;
  for (const auto& term : terms_) {
    auto column = batch.GetColumnByName(term.column);
    if (column == nullptr)
      return arrow::Status::Invalid("batch has no column '", term.column, "'");
    arrow::Datum part;
    if (term.value == nullptr) {
      ARROW_ASSIGN_OR_RAISE(part, cp::CallFunction(term.function, {column}));
    } else {
      ARROW_ASSIGN_OR_RAISE(
          part, cp::CallFunction(term.function, {column, arrow::Datum(term.value)}));
    }
    if (mask.is_value()) {
      ARROW_ASSIGN_OR_RAISE(mask, cp::CallFunction("and_kleene", {mask, part}));
    } else {
      mask = part;
    }
  }
  if (mask.is_scalar()) {
    ARROW_ASSIGN_OR_RAISE(auto repeated,
                          arrow::MakeArrayFromScalar(*mask.scalar(), batch.num_rows()));
    return repeated;
  }
  return mask.make_array();
}

FileMatch Predicate::ClassifyTerm(const Term& term, const Add& file, bool is_partition,
                                  const void* stats_ptr) const {
  if (is_partition) {
    const std::optional<std::string> raw =
        FindPartitionValue(file.partition_values, term.key);
    auto value = ParsePartitionValue(raw, term.type);
    if (!value.ok()) return FileMatch::kSome;
    auto array = arrow::MakeArrayFromScalar(**value, 1);
    if (!array.ok()) return FileMatch::kSome;
    arrow::Result<arrow::Datum> result =
        term.value == nullptr
            ? cp::CallFunction(term.function, {*array})
            : cp::CallFunction(term.function, {*array, arrow::Datum(term.value)});
    if (!result.ok()) return FileMatch::kSome;
    auto matched = result->make_array();
    const auto& booleans = static_cast<const arrow::BooleanArray&>(*matched);
    return booleans.IsValid(0) && booleans.Value(0) ? FileMatch::kAll : FileMatch::kNone;
  }
  const json& stats = *static_cast<const json*>(stats_ptr);
  if (!stats.is_object() || !stats.contains("numRecords")) return FileMatch::kSome;
  const int64_t rows =
      stats["numRecords"].is_number_integer() ? stats["numRecords"].get<int64_t>() : -1;
  std::optional<int64_t> nulls;
  if (stats.contains("nullCount") && stats["nullCount"].contains(term.key) &&
      stats["nullCount"][term.key].is_number_integer()) {
    nulls = stats["nullCount"][term.key].get<int64_t>();
  }
  if (term.function == "is_null" || term.function == "is_valid") {
    if (!nulls || rows < 0) return FileMatch::kSome;
    const bool all_null = *nulls == rows;
    const bool none_null = *nulls == 0;
    if (term.function == "is_null")
      return none_null ? FileMatch::kNone : all_null ? FileMatch::kAll : FileMatch::kSome;
    return all_null ? FileMatch::kNone : none_null ? FileMatch::kAll : FileMatch::kSome;
  }
  if (rows >= 0 && nulls && *nulls == rows)
    return FileMatch::kNone;  // all null: no match
  const json* min = stats.contains("minValues") && stats["minValues"].contains(term.key)
                        ? &stats["minValues"][term.key]
                        : nullptr;
  const json* max = stats.contains("maxValues") && stats["maxValues"].contains(term.key)
                        ? &stats["maxValues"][term.key]
                        : nullptr;
  if (min == nullptr || max == nullptr || !term.trusts_min_max) return FileMatch::kSome;
  // c_min = sign(value - min), c_max = sign(value - max)
  auto c_min = CompareToStat(*term.value, *min, *term.type, false);
  auto c_max = CompareToStat(*term.value, *max, *term.type, true);
  if (!c_min || !c_max) return FileMatch::kSome;
  const bool no_nulls = nulls && *nulls == 0;
  auto all_if = [&](bool all) {
    return all && no_nulls ? FileMatch::kAll : FileMatch::kSome;
  };
  const std::string& f = term.function;
  if (f == "equal") {
    if (*c_min < 0 || *c_max > 0) return FileMatch::kNone;
    return all_if(*c_min == 0 && *c_max == 0);
  }
  if (f == "not_equal") {
    if (*c_min < 0 || *c_max > 0) return all_if(true);
    return FileMatch::kSome;
  }
  if (f == "less") {  // col < value
    if (*c_min <= 0) return FileMatch::kNone;
    return all_if(*c_max > 0);
  }
  if (f == "less_equal") {
    if (*c_min < 0) return FileMatch::kNone;
    return all_if(*c_max >= 0);
  }
  if (f == "greater") {  // col > value
    if (*c_max >= 0) return FileMatch::kNone;
    return all_if(*c_min < 0);
  }
  if (f == "greater_equal") {
    if (*c_max > 0) return FileMatch::kNone;
    return all_if(*c_min <= 0);
  }
  return FileMatch::kSome;
}

FileMatch Predicate::Classify(const Add& file,
                              const std::vector<std::string>& partition_columns) const {
  json stats = file.stats ? json::parse(*file.stats, nullptr, false) : json();
  if (file.deletion_vector) stats = json();  // deleted rows make bounds loose
  FileMatch overall = FileMatch::kAll;
  for (const auto& term : terms_) {
    const bool is_partition = IsPartitionColumn(partition_columns, term.column);
    const FileMatch match = ClassifyTerm(term, file, is_partition, &stats);
    if (match == FileMatch::kNone) return FileMatch::kNone;
    if (match == FileMatch::kSome) overall = FileMatch::kSome;
  }
  return overall;
}

}  // namespace ampdelta::delta

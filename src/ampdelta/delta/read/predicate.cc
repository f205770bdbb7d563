#include "ampdelta/delta/read/predicate.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/type_widening.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

namespace cp = arrow::compute;

arrow::Status BadPredicate(const std::string& text, const std::string& why) {
  return InvalidInputError("invalid predicate '", text, "': ", why);
}

struct Token {
  enum Kind { kWord, kQuoted, kNumber, kString, kOp, kPunct, kEnd } kind;
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
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      // A minus is a number's sign, with or without spaces after it: Spark stores
      // `tick >= -887272` as `tick >= - 887272` (its tokens joined by spaces).
      std::string number;
      size_t j = i;
      if (c == '-') {
        number = "-";
        ++j;
        while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
        if (j == text.size() || !std::isdigit(static_cast<unsigned char>(text[j]))) {
          return BadPredicate(text, "a '-' must be a number's sign");
        }
      }
      const size_t digits = j;
      while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '.' || text[j] == 'e' || text[j] == 'E'))
        ++j;
      tokens.push_back({Token::kNumber, number + text.substr(digits, j - digits)});
      i = j;
    } else if (c == '(' || c == ')' || c == ',') {
      tokens.push_back({Token::kPunct, std::string(1, c)});
      ++i;
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
  if (token.kind == Token::kString && token.text.empty() &&
      type->id() != arrow::Type::STRING && type->id() != arrow::Type::BINARY) {
    // '' is a partition value's null: it would compare as unknown and match no row.
    return BadPredicate(
        text, "'' is not a " + type->ToString() + " (column '" + field.name() + "')");
  }
  auto parsed = ParsePartitionValue(token.text, type);
  if (parsed.ok()) return *parsed;
  if (token.kind == Token::kNumber &&
      (arrow::is_integer(type->id()) || arrow::is_decimal(type->id()))) {
    // A number its column's type cannot hold is compared in a wider type, as Spark's type
    // coercion widens the column (`n < 40000` on a SMALLINT, `n < 0.5` on an INT): a
    // whole number as a 64-bit integer, any other as the decimal it writes.
    if (token.text.find_first_of(".eE") == std::string::npos) {
      auto wide = ParsePartitionValue(token.text, arrow::int64());
      if (wide.ok()) return *wide;
    }
    arrow::Decimal128 value;
    int32_t precision = 0;
    int32_t scale = 0;
    if (arrow::Decimal128::FromString(token.text, &value, &precision, &scale).ok() &&
        scale >= 0 &&
        std::max(precision, scale + 1) <= arrow::Decimal128Type::kMaxPrecision) {
      ARROW_ASSIGN_OR_RAISE(
          auto decimal_type,
          arrow::Decimal128Type::Make(std::max(precision, scale + 1), scale));
      return std::make_shared<arrow::Decimal128Scalar>(value, decimal_type);
    }
  }
  return BadPredicate(text, "'" + token.text + "' is not a valid " + type->ToString() +
                                " for column '" + field.name() + "'");
}

// Compare a scalar with a stats JSON value of the same column; nullopt when unknown.
std::optional<int> CompareToStat(const arrow::Scalar& value, const FileStats::Json& stat,
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

// Recursive descent over Spark's boolean grammar, lowest precedence first:
// OR, AND, NOT, then a parenthesised condition or one comparison.
class Predicate::Parser {
 public:
  // A condition as the parser builds it: its row expression and, when it is a comparison
  // or a conjunction of them, the comparisons (for file skipping).
  struct Parsed {
    cp::Expression expression;
    std::vector<Predicate::Term> terms;
    // Some part of it is no comparison (an OR, a NOT): it classifies no file by itself.
    bool opaque = false;
  };

  Parser(const std::string& text, std::vector<Token> tokens,
         const std::shared_ptr<arrow::Schema>& schema)
      : text_(text), tokens_(std::move(tokens)), schema_(schema) {}

  arrow::Result<Parsed> Condition() {
    if (Peek().kind == Token::kEnd) return BadPredicate(text_, "empty condition");
    ARROW_ASSIGN_OR_RAISE(Parsed parsed, Or());
    if (Peek().kind != Token::kEnd) {
      return BadPredicate(text_, "unexpected '" + Peek().text + "'");
    }
    return parsed;
  }

  std::vector<std::string> columns() const { return columns_; }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  bool PeekWord(const char* word) const {
    return Peek().kind == Token::kWord && AsciiUpper(Peek().text) == word;
  }
  bool TakeWord(const char* word) {
    if (!PeekWord(word)) return false;
    ++pos_;
    return true;
  }
  bool TakePunct(const char* punct) {
    if (Peek().kind != Token::kPunct || Peek().text != punct) return false;
    ++pos_;
    return true;
  }

  arrow::Result<Parsed> Or() {
    ARROW_ASSIGN_OR_RAISE(Parsed left, And());
    while (TakeWord("OR")) {
      ARROW_ASSIGN_OR_RAISE(Parsed right, And());
      left = Parsed{cp::call("or_kleene", {left.expression, right.expression}), {}, true};
    }
    return left;
  }

  arrow::Result<Parsed> And() {
    ARROW_ASSIGN_OR_RAISE(Parsed left, Not());
    while (TakeWord("AND")) {
      ARROW_ASSIGN_OR_RAISE(Parsed right, Not());
      left.expression = cp::call("and_kleene", {left.expression, right.expression});
      left.terms.insert(left.terms.end(), right.terms.begin(), right.terms.end());
      left.opaque = left.opaque || right.opaque;
    }
    return left;
  }

  arrow::Result<Parsed> Not() {
    // Each NOT and parenthesis nests the parser and the expression one level deeper: a
    // bound keeps a hostile condition from exhausting the stack.
    if (++depth_ > kMaxDepth) {
      return BadPredicate(text_, "nested more than " + std::to_string(kMaxDepth) +
                                     " levels deep (NOT and parentheses)");
    }
    arrow::Result<Parsed> parsed = Nested();
    --depth_;
    return parsed;
  }

  arrow::Result<Parsed> Nested() {
    if (TakeWord("NOT")) {
      ARROW_ASSIGN_OR_RAISE(Parsed inner, Not());
      return Parsed{cp::call("invert", {inner.expression}), {}, true};
    }
    if (TakePunct("(")) {
      ARROW_ASSIGN_OR_RAISE(Parsed inner, Or());
      if (!TakePunct(")")) return BadPredicate(text_, "missing ')'");
      return inner;
    }
    if (++comparisons_ > kMaxComparisons) {
      return BadPredicate(text_, "more than " + std::to_string(kMaxComparisons) +
                                     " comparisons (an IN list counts as one)");
    }
    return Comparison();
  }

  // x IN (a, b, …): SQL's three values (null when x is null, else whether a value equals
  // it), as one set lookup however long the list. A literal the column's type cannot hold
  // can equal none of its values.
  arrow::Result<Parsed> InList(const arrow::Field& field) {
    std::unique_ptr<arrow::ArrayBuilder> builder;
    ARROW_RETURN_NOT_OK(
        arrow::MakeBuilder(arrow::default_memory_pool(), field.type(), &builder));
    do {
      ARROW_ASSIGN_OR_RAISE(auto value, Literal(field));
      // A checked cast: a value the column's type cannot hold exactly (65536 for a
      // SMALLINT, 5.5 for an INT) equals none of its values; a wrapping cast would match
      // another.
      auto cast = cp::Cast(arrow::Datum(value), field.type(), cp::CastOptions::Safe());
      if (cast.ok()) ARROW_RETURN_NOT_OK(builder->AppendScalar(*cast->scalar()));
    } while (TakePunct(","));
    ARROW_ASSIGN_OR_RAISE(auto values, builder->Finish());
    const cp::Expression column = cp::field_ref(field.name());
    const cp::Expression found =
        cp::call("is_in", {column}, cp::SetLookupOptions(arrow::Datum(values)));
    return Parsed{cp::call("if_else",
                           {cp::call("is_null", {column}),
                            cp::literal(arrow::MakeNullScalar(arrow::boolean())), found}),
                  {},
                  true};
  }

  arrow::Result<std::shared_ptr<arrow::Field>> Column() {
    const Token& token = Peek();
    if (token.kind != Token::kWord && token.kind != Token::kQuoted) {
      return BadPredicate(text_, "expected a column name, found '" + token.text + "'");
    }
    ++pos_;
    // Column names are case-insensitive in Delta.
    const int index = FindFieldIgnoreCase(*schema_, token.text);
    if (index < 0) {
      std::string names;
      for (const auto& f : schema_->fields())
        names += (names.empty() ? "" : ", ") + f->name();
      return BadPredicate(text_,
                          "no column '" + token.text + "' (columns: " + names + ")");
    }
    auto field = schema_->field(index);
    if (std::find(columns_.begin(), columns_.end(), field->name()) == columns_.end()) {
      columns_.push_back(field->name());
    }
    return field;
  }

  arrow::Result<std::shared_ptr<arrow::Scalar>> Literal(const arrow::Field& field) {
    return BindLiteral(text_, tokens_[pos_++], field);
  }

  static bool IsLiteral(const Token& token) {
    return token.kind == Token::kNumber || token.kind == Token::kString ||
           (token.kind == Token::kWord &&
            (AsciiUpper(token.text) == "TRUE" || AsciiUpper(token.text) == "FALSE"));
  }

  // One term as a row expression and a file-skipping term.
  static Parsed Compare(const arrow::Field& field, const std::string& function,
                        std::shared_ptr<arrow::Scalar> value) {
    Parsed parsed;
    std::vector<cp::Expression> args{cp::field_ref(field.name())};
    if (value != nullptr) args.push_back(cp::literal(value));
    parsed.expression = cp::call(function, std::move(args));
    parsed.terms.push_back(MakeTerm(field, function, std::move(value)));
    return parsed;
  }

  static Parsed Both(Parsed low, Parsed high) {
    low.expression = cp::call("and_kleene", {low.expression, high.expression});
    low.terms.insert(low.terms.end(), high.terms.begin(), high.terms.end());
    return low;
  }

  static Parsed Negated(Parsed inner) {
    return Parsed{cp::call("invert", {inner.expression}), {}, true};
  }

  arrow::Result<Parsed> Comparison() {
    // `literal <op> column` reads as `column <reversed op> literal`.
    if (IsLiteral(Peek()) && tokens_[pos_ + 1].kind == Token::kOp) {
      const size_t literal = pos_;
      pos_ += 2;
      ARROW_ASSIGN_OR_RAISE(auto field, Column());
      ARROW_ASSIGN_OR_RAISE(auto value, BindLiteral(text_, tokens_[literal], *field));
      return Compare(*field, FunctionFor(Reversed(tokens_[literal + 1].text)), value);
    }
    ARROW_ASSIGN_OR_RAISE(auto field, Column());
    if (TakeWord("IS")) {
      const bool negated = TakeWord("NOT");
      if (!TakeWord("NULL")) return BadPredicate(text_, "expected NULL after IS");
      return Compare(*field, negated ? "is_valid" : "is_null", nullptr);
    }
    const bool negated = TakeWord("NOT");
    if (TakeWord("BETWEEN")) {
      ARROW_ASSIGN_OR_RAISE(auto low, Literal(*field));
      if (!TakeWord("AND")) return BadPredicate(text_, "expected AND in BETWEEN");
      ARROW_ASSIGN_OR_RAISE(auto high, Literal(*field));
      Parsed between = Both(Compare(*field, "greater_equal", low),
                            Compare(*field, "less_equal", high));
      return negated ? Negated(std::move(between)) : between;
    }
    if (TakeWord("IN")) {
      if (!TakePunct("(")) return BadPredicate(text_, "expected '(' after IN");
      ARROW_ASSIGN_OR_RAISE(Parsed in, InList(*field));
      if (!TakePunct(")")) return BadPredicate(text_, "missing ')' after the IN list");
      return negated ? Negated(std::move(in)) : in;
    }
    if (negated) return BadPredicate(text_, "expected BETWEEN or IN after NOT");
    if (Peek().kind != Token::kOp) {
      return BadPredicate(text_, "expected an operator after '" + field->name() + "'");
    }
    const std::string op = tokens_[pos_++].text;
    ARROW_ASSIGN_OR_RAISE(auto value, Literal(*field));
    return Compare(*field, FunctionFor(op), value);
  }

  static std::string Reversed(const std::string& op) {
    if (op == "<") return ">";
    if (op == "<=") return ">=";
    if (op == ">") return "<";
    if (op == ">=") return "<=";
    return op;
  }

  const std::string& text_;
  std::vector<Token> tokens_;
  std::shared_ptr<arrow::Schema> schema_;
  size_t pos_ = 0;
  std::vector<std::string> columns_;
  static constexpr int kMaxDepth = 100;
  static constexpr int kMaxComparisons = 1000;
  int depth_ = 0;
  int comparisons_ = 0;
};

arrow::Result<Predicate> Predicate::Parse(const std::string& text,
                                          const std::shared_ptr<arrow::Schema>& schema) {
  ARROW_ASSIGN_OR_RAISE(auto tokens, Tokenize(text));
  Parser parser(text, std::move(tokens), schema);
  ARROW_ASSIGN_OR_RAISE(Parser::Parsed parsed, parser.Condition());
  Predicate predicate;
  predicate.text_ = text;
  predicate.expression_ = std::move(parsed.expression);
  predicate.terms_ = std::move(parsed.terms);
  predicate.opaque_ = parsed.opaque;
  predicate.columns_ = parser.columns();
  return predicate;
}

std::vector<std::string> Predicate::columns() const { return columns_; }

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
  for (const auto& column : columns_) {
    if (batch.GetColumnByName(column) == nullptr)
      return arrow::Status::Invalid("batch has no column '", column, "'");
  }
  ARROW_ASSIGN_OR_RAISE(auto bound, expression_.Bind(*batch.schema()));
  const auto input =
      arrow::RecordBatch::Make(batch.schema(), batch.num_rows(), batch.columns());
  ARROW_ASSIGN_OR_RAISE(
      arrow::Datum mask,
      cp::ExecuteScalarExpression(bound, *batch.schema(), arrow::Datum(input)));
  if (mask.is_scalar()) {
    ARROW_ASSIGN_OR_RAISE(auto repeated,
                          arrow::MakeArrayFromScalar(*mask.scalar(), batch.num_rows()));
    return repeated;
  }
  return mask.make_array();
}

FileMatch Predicate::ClassifyTerm(const Term& term, const Add& file, bool is_partition,
                                  const FileStats& stats) const {
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
  if (!stats.num_records()) return FileMatch::kSome;
  const int64_t rows = *stats.num_records();
  const std::optional<int64_t> nulls = stats.NullCount({term.key});
  if (term.function == "is_null" || term.function == "is_valid") {
    if (!nulls) return FileMatch::kSome;
    const bool all_null = *nulls == rows;
    const bool none_null = *nulls == 0;
    if (term.function == "is_null")
      return none_null ? FileMatch::kNone : all_null ? FileMatch::kAll : FileMatch::kSome;
    return all_null ? FileMatch::kNone : none_null ? FileMatch::kAll : FileMatch::kSome;
  }
  if (nulls && *nulls == rows) return FileMatch::kNone;  // all null: no match
  const FileStats::Json* min = stats.Find(StatsSection::kMinValues, {term.key});
  const FileStats::Json* max = stats.Find(StatsSection::kMaxValues, {term.key});
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
  // Deleted rows make the bounds and counts loose.
  const FileStats stats = file.deletion_vector ? FileStats() : FileStats::Of(file);
  // A condition ANDed beside the terms may exclude rows the terms keep: never all.
  FileMatch overall = opaque_ ? FileMatch::kSome : FileMatch::kAll;
  for (const auto& term : terms_) {
    const bool is_partition = IsPartitionColumn(partition_columns, term.column);
    const FileMatch match = ClassifyTerm(term, file, is_partition, stats);
    if (match == FileMatch::kNone) return FileMatch::kNone;
    if (match == FileMatch::kSome) overall = FileMatch::kSome;
  }
  return overall;
}

}  // namespace ampdelta::delta

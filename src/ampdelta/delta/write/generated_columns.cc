#include "ampdelta/delta/write/generated_columns.h"

#include <cctype>
#include <optional>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

// An expression over one column: a column, or a cast or function of an expression.
struct GeneratedColumns::Expression {
  std::string column;                     // set for a column
  std::string function;                   // "cast", "year", …; empty for a column
  std::shared_ptr<arrow::DataType> type;  // what it evaluates to
  std::shared_ptr<const Expression> argument;
};

namespace {

namespace cp = arrow::compute;
using Expression = GeneratedColumns::Expression;

constexpr const char* kGenerationExpression = "delta.generationExpression";

// Tokens of an expression: names (a backquoted one keeps its case and may hold anything
// but a backquote) and the punctuation ( ) ,.
struct Token {
  std::string text;
  bool quoted = false;
};

std::optional<std::vector<Token>> Tokenize(const std::string& text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')' || c == ',') {
      tokens.push_back({std::string(1, c), false});
      ++i;
    } else if (c == '`') {
      const size_t end = text.find('`', i + 1);
      if (end == std::string::npos) return std::nullopt;
      tokens.push_back({text.substr(i + 1, end - i - 1), true});
      i = end + 1;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = i;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
        ++end;
      }
      tokens.push_back({text.substr(i, end - i), false});
      i = end;
    } else {
      return std::nullopt;  // operators, literals: outside what ampdelta evaluates
    }
  }
  return tokens;
}

bool IsTimestamp(const arrow::DataType& type) {
  return type.id() == arrow::Type::TIMESTAMP;
}
bool IsDateLike(const arrow::DataType& type) {
  return IsTimestamp(type) || type.id() == arrow::Type::DATE32;
}

std::shared_ptr<arrow::DataType> CastTarget(const std::string& name) {
  const std::string upper = AsciiUpper(name);
  if (upper == "DATE") return arrow::date32();
  if (upper == "BIGINT" || upper == "LONG") return arrow::int64();
  if (upper == "INT" || upper == "INTEGER") return arrow::int32();
  if (upper == "SMALLINT" || upper == "SHORT") return arrow::int16();
  if (upper == "TINYINT" || upper == "BYTE") return arrow::int8();
  return nullptr;
}

int IntegerWidth(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT8:
      return 1;
    case arrow::Type::INT16:
      return 2;
    case arrow::Type::INT32:
      return 4;
    case arrow::Type::INT64:
      return 8;
    default:
      return 0;
  }
}

// What a cast of `from` to `to` evaluates as Spark does, or null: dates from dates and
// timestamps, and integers that widen (a narrowing cast overflows by Spark's ANSI rules).
std::shared_ptr<arrow::DataType> CastResult(const arrow::DataType& from,
                                            const std::shared_ptr<arrow::DataType>& to) {
  if (to->id() == arrow::Type::DATE32) return IsDateLike(from) ? to : nullptr;
  const int width = IntegerWidth(from);
  return width > 0 && width <= IntegerWidth(*to) ? to : nullptr;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const arrow::Schema& schema)
      : tokens_(std::move(tokens)), schema_(schema) {}

  arrow::Result<std::shared_ptr<const Expression>> ParseAll() {
    ARROW_ASSIGN_OR_RAISE(auto parsed, ParseExpression());
    if (position_ != tokens_.size()) return Unsupported("text after the expression");
    return parsed;
  }

 private:
  arrow::Result<std::shared_ptr<const Expression>> ParseExpression() {
    if (position_ >= tokens_.size()) return Unsupported("an incomplete expression");
    const Token name = tokens_[position_++];
    if (name.quoted || !Next("(")) return ColumnNamed(name.text);
    const std::string function = AsciiLower(name.text);
    ARROW_ASSIGN_OR_RAISE(auto argument, ParseExpression());
    auto expression = std::make_shared<Expression>();
    expression->argument = argument;
    const auto& from = *argument->type;
    if (function == "cast") {
      if (!NextWord("AS") || position_ >= tokens_.size()) return Unsupported("CAST");
      const std::string target = tokens_[position_++].text;
      auto to = CastTarget(target);
      expression->type = to ? CastResult(from, to) : nullptr;
      if (!expression->type) {
        return Unsupported("CAST of a " + DeltaTypeName(from) + " AS " + target);
      }
      expression->function = "cast";
    } else if (function == "to_date" || function == "date") {
      if (!IsDateLike(from))
        return Unsupported(function + " of a " + DeltaTypeName(from));
      expression->function = "cast";
      expression->type = arrow::date32();
    } else if (function == "year" || function == "month" || function == "day" ||
               function == "dayofmonth" || (function == "hour" && IsTimestamp(from))) {
      if (!IsDateLike(from))
        return Unsupported(function + " of a " + DeltaTypeName(from));
      expression->function = function == "dayofmonth" ? "day" : function;
      expression->type = arrow::int32();
    } else {
      return Unsupported("the function " + name.text);
    }
    if (!Next(")")) return Unsupported("a function of more than one argument");
    return expression;
  }

  arrow::Result<std::shared_ptr<const Expression>> ColumnNamed(const std::string& name) {
    const int index = FindFieldIgnoreCase(schema_, name);
    if (index < 0) return Unsupported("no column " + name);
    auto expression = std::make_shared<Expression>();
    expression->column = schema_.field(index)->name();
    expression->type = schema_.field(index)->type();
    return expression;
  }

  bool Next(const char* text) {
    if (position_ >= tokens_.size() || tokens_[position_].quoted ||
        tokens_[position_].text != text) {
      return false;
    }
    ++position_;
    return true;
  }
  bool NextWord(const char* word) {
    if (position_ >= tokens_.size() || tokens_[position_].quoted ||
        AsciiUpper(tokens_[position_].text) != word) {
      return false;
    }
    ++position_;
    return true;
  }

  static arrow::Status Unsupported(const std::string& what) {
    return arrow::Status::NotImplemented(what);
  }

  std::vector<Token> tokens_;
  const arrow::Schema& schema_;
  size_t position_ = 0;
};

arrow::Result<std::shared_ptr<arrow::Array>> Evaluate(const Expression& expression,
                                                      const arrow::RecordBatch& batch) {
  if (expression.function.empty()) {
    const int index = FindFieldIgnoreCase(*batch.schema(), expression.column);
    return batch.column(index);
  }
  ARROW_ASSIGN_OR_RAISE(auto argument, Evaluate(*expression.argument, batch));
  if (expression.function == "cast") {
    ARROW_ASSIGN_OR_RAISE(auto cast, cp::Cast(argument, expression.type));
    return cast.make_array();
  }
  ARROW_ASSIGN_OR_RAISE(auto fields, cp::CallFunction(expression.function, {argument}));
  ARROW_ASSIGN_OR_RAISE(auto narrowed, cp::Cast(fields, expression.type));
  return narrowed.make_array();
}

std::string ValueText(const arrow::Array& array, int64_t row) {
  auto scalar = array.GetScalar(row);
  return scalar.ok() ? EscapeForMessage((*scalar)->ToString()) : "?";
}

}  // namespace

GeneratedColumns::GeneratedColumns(std::shared_ptr<arrow::Schema> table_schema,
                                   std::shared_ptr<arrow::Schema> relaxed,
                                   std::vector<Column> columns)
    : table_schema_(std::move(table_schema)),
      relaxed_(std::move(relaxed)),
      columns_(std::move(columns)) {}

arrow::Result<std::shared_ptr<const GeneratedColumns>> GeneratedColumns::Make(
    const std::shared_ptr<arrow::Schema>& table_schema,
    const arrow::Schema& source_schema, bool rewrites_rows) {
  std::vector<Column> columns;
  std::shared_ptr<arrow::Schema> relaxed = table_schema;
  for (int index = 0; index < table_schema->num_fields(); ++index) {
    const auto& field = table_schema->field(index);
    const auto text = FieldMetadataValue(*field, kGenerationExpression);
    if (!text) continue;
    // Field metadata holds JSON text: the expression is a JSON string.
    const auto json = json_util::ParseJson(*text);
    const std::string expression = json.is_string() ? json.get<std::string>() : *text;
    auto tokens = Tokenize(expression);
    arrow::Result<std::shared_ptr<const Expression>> parsed =
        tokens ? Parser(*tokens, *table_schema).ParseAll()
               : arrow::Status::NotImplemented("operators or literals");
    if (parsed.ok() && !(*parsed)->function.empty() &&
        !arrow::compute::CanCast(*(*parsed)->type, *field->type())) {
      parsed = arrow::Status::NotImplemented("a ", DeltaTypeName(*(*parsed)->type),
                                             " for a ", DeltaTypeName(*field->type()));
    }
    if (!parsed.ok()) {
      return MakeError(
          ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
          "ampdelta cannot write this table: it cannot evaluate the generated "
          "column ",
          EscapeForMessage(field->name()), " (", EscapeForMessage(expression),
          "): ", parsed.status().message(),
          "; it evaluates a column, CAST AS DATE or a wider integer, TO_DATE, "
          "DATE, YEAR, MONTH, DAY, DAYOFMONTH and HOUR");
    }
    const bool given =
        !rewrites_rows && FindFieldIgnoreCase(source_schema, field->name()) >= 0;
    columns.push_back(Column{index, expression, *std::move(parsed), given});
    ARROW_ASSIGN_OR_RAISE(relaxed, relaxed->SetField(index, field->WithNullable(true)));
  }
  return std::make_shared<const GeneratedColumns>(table_schema, relaxed,
                                                  std::move(columns));
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> GeneratedColumns::Conform(
    const std::shared_ptr<arrow::RecordBatch>& batch) const {
  ARROW_ASSIGN_OR_RAISE(auto conformed, ConformBatch(batch, relaxed_));
  auto columns = conformed->columns();
  for (const auto& column : columns_) {
    const auto& field = table_schema_->field(column.index);
    if (FindFieldIgnoreCase(*batch->schema(), field->name()) >= 0) {
      if (column.given) ARROW_RETURN_NOT_OK(Check(column, *conformed));
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto computed, Evaluate(*column.parsed, *conformed));
    auto typed = cp::Cast(computed, field->type());
    if (!typed.ok()) {
      // A value of the expression the column's type cannot hold (a long past an int).
      return InvalidInputError(
          "generated column ", EscapeForMessage(field->name()), " (",
          EscapeForMessage(column.expression), ") computes a value its type ",
          DeltaTypeName(*field->type()), " cannot hold: ", typed.status().message(),
          "; the table was not changed");
    }
    columns[static_cast<size_t>(column.index)] = typed->make_array();
  }
  for (const auto& column : columns_) {
    const auto& field = table_schema_->field(column.index);
    if (!field->nullable() &&
        columns[static_cast<size_t>(column.index)]->null_count() > 0) {
      return InvalidInputError("generated column ", EscapeForMessage(field->name()), " (",
                               EscapeForMessage(column.expression),
                               ") is not nullable but computes to null for some rows");
    }
  }
  return arrow::RecordBatch::Make(table_schema_, conformed->num_rows(),
                                  std::move(columns));
}

arrow::Status GeneratedColumns::Check(const Column& column,
                                      const arrow::RecordBatch& batch) const {
  ARROW_ASSIGN_OR_RAISE(auto expected, Evaluate(*column.parsed, batch));
  const auto& given = *batch.column(column.index);
  ARROW_ASSIGN_OR_RAISE(auto typed, cp::Cast(expected, given.type()));
  const auto& want = *typed.make_array();
  for (int64_t row = 0; row < given.length(); ++row) {
    // Null-safe equality (<=>): two nulls agree.
    if (given.RangeEquals(want, row, row + 1, row)) continue;
    const auto& name = table_schema_->field(column.index)->name();
    return InvalidInputError("generated column ", EscapeForMessage(name), " (",
                             EscapeForMessage(column.expression), ") is given ",
                             ValueText(given, row), " in row ", row,
                             " of the batch, but the expression gives ",
                             ValueText(want, row), "; nothing was written");
  }
  return arrow::Status::OK();
}

}  // namespace ampdelta::delta

#include "ampdelta/devserver/sql.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "ampdelta/devserver/functions.h"
#include "ampdelta/devserver/query_error.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/hex.h"
#include "ampdelta/util/numbers.h"

namespace ampdelta::devserver::sql {
namespace {

enum class TokenKind : uint8_t {
  kIdentifier,  // bare word (keywords included)
  kQuoted,      // "quoted identifier"
  kInteger,
  kFloat,
  kString,  // 'text'
  kHex,     // x'00ff'
  kSymbol,  // ( ) [ ] , . * ; = < > <= >= <> != + - / %
  kEnd,
};

struct Token {
  TokenKind kind;
  std::string text;
  size_t offset;
};

arrow::Result<std::vector<Token>> Tokenize(const std::string& text) {
  std::vector<Token> tokens;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '-' && i + 1 < n && text[i + 1] == '-') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    const size_t start = i;
    if ((c == 'x' || c == 'X') && i + 1 < n && text[i + 1] == '\'') {
      size_t close = text.find('\'', i + 2);
      if (close == std::string::npos) return InvalidQuery("unterminated hex literal");
      tokens.push_back({TokenKind::kHex, text.substr(i + 2, close - i - 2), start});
      i = close + 1;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < n &&
             (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
        ++i;
      }
      tokens.push_back({TokenKind::kIdentifier, text.substr(start, i - start), start});
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      bool is_float = false;
      while (i < n &&
             (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
        if (text[i] == '.') {
          if (is_float) {
            return InvalidQuery("malformed number near '" +
                                text.substr(start, i - start + 1) + "'");
          }
          is_float = true;
        }
        ++i;
      }
      if (i < n &&
          (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
        return InvalidQuery("malformed number near '" +
                            text.substr(start, i - start + 1) + "'");
      }
      tokens.push_back({is_float ? TokenKind::kFloat : TokenKind::kInteger,
                        text.substr(start, i - start), start});
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string value;
      ++i;
      bool closed = false;
      while (i < n) {
        if (text[i] == c) {
          if (i + 1 < n && text[i + 1] == c) {  // doubled quote escapes itself
            value.push_back(c);
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        value.push_back(text[i++]);
      }
      if (!closed) {
        return InvalidQuery(std::string("unterminated ") +
                            (c == '\'' ? "string literal" : "quoted identifier"));
      }
      tokens.push_back(
          {c == '\'' ? TokenKind::kString : TokenKind::kQuoted, value, start});
      continue;
    }
    static const char* kTwoChar[] = {"<=", ">=", "<>", "!=", "||"};
    bool matched = false;
    for (const char* symbol : kTwoChar) {
      if (text.compare(i, 2, symbol) == 0) {
        tokens.push_back({TokenKind::kSymbol, symbol, start});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string("()[],.*;=<>+-/%").find(c) != std::string::npos) {
      tokens.push_back({TokenKind::kSymbol, std::string(1, c), start});
      ++i;
      continue;
    }
    return InvalidQuery(std::string("unexpected character '") + c + "'");
  }
  tokens.push_back({TokenKind::kEnd, "", n});
  return tokens;
}

// Keywords that end an expression or a clause; never taken as aliases.
const std::set<std::string>& ReservedWords() {
  static const std::set<std::string> words = {
      "SELECT", "FROM",      "WHERE",  "AND",      "OR",      "NOT",    "BETWEEN",
      "LIMIT",  "SETTINGS",  "AS",     "ORDER",    "GROUP",   "HAVING", "JOIN",
      "INNER",  "LEFT",      "RIGHT",  "FULL",     "CROSS",   "ON",     "UNION",
      "EXCEPT", "INTERSECT", "WITH",   "DISTINCT", "IN",      "LIKE",   "IS",
      "NULL",   "CASE",      "OFFSET", "WINDOW",   "QUALIFY", "USING",  "NATURAL",
      "OUTER",  "BY",        "TRUE",   "FALSE",    "ILIKE",   "OVER",   "VALUES"};
  return words;
}

// Constructs recognised only to be rejected by name.
std::optional<std::string> UnsupportedClause(const std::string& upper_word) {
  static const std::set<std::string> clauses = {
      "ORDER",  "GROUP",  "HAVING",  "JOIN",    "INNER",     "LEFT",   "RIGHT",
      "FULL",   "CROSS",  "UNION",   "EXCEPT",  "INTERSECT", "WITH",   "DISTINCT",
      "OR",     "NOT",    "IN",      "LIKE",    "ILIKE",     "IS",     "CASE",
      "OFFSET", "WINDOW", "QUALIFY", "NATURAL", "OVER",      "VALUES", "USING"};
  if (clauses.count(upper_word) == 0) return std::nullopt;
  if (upper_word == "ORDER") return std::string("ORDER BY");
  if (upper_word == "GROUP") return std::string("GROUP BY");
  if (upper_word == "INNER" || upper_word == "LEFT" || upper_word == "RIGHT" ||
      upper_word == "FULL" || upper_word == "CROSS" || upper_word == "NATURAL") {
    return std::string("JOIN");
  }
  return upper_word;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  arrow::Result<SelectStatement> ParseStatement() {
    ARROW_ASSIGN_OR_RAISE(SelectStatement statement, ParseSelect(/*nested=*/false));
    if (IsSymbol(";")) Advance();
    if (Peek().kind != TokenKind::kEnd) return UnexpectedHere();
    return statement;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& Advance() { return tokens_[std::min(pos_++, tokens_.size() - 1)]; }
  bool IsSymbol(const char* symbol, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kSymbol && Peek(ahead).text == symbol;
  }
  bool IsKeyword(const char* keyword, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kIdentifier &&
           AsciiUpper(Peek(ahead).text) == keyword;
  }

  arrow::Status UnexpectedHere() const {
    const Token& token = Peek();
    if (token.kind == TokenKind::kEnd) return InvalidQuery("unexpected end of query");
    if (token.kind == TokenKind::kIdentifier) {
      if (auto clause = UnsupportedClause(AsciiUpper(token.text))) {
        return InvalidQuery("unsupported SQL construct: " + *clause);
      }
    }
    if (token.kind == TokenKind::kSymbol &&
        std::string("+-/%||").find(token.text) != std::string::npos) {
      return InvalidQuery("unsupported SQL construct: arithmetic operator '" +
                          token.text + "'");
    }
    return InvalidQuery("unexpected '" + token.text + "' at offset " +
                        std::to_string(token.offset));
  }

  arrow::Status Expect(const char* symbol) {
    if (!IsSymbol(symbol)) return UnexpectedHere();
    Advance();
    return arrow::Status::OK();
  }

  arrow::Status ExpectKeyword(const char* keyword) {
    if (!IsKeyword(keyword)) return UnexpectedHere();
    Advance();
    return arrow::Status::OK();
  }

  // An identifier (bare or quoted) that is not a reserved word.
  arrow::Result<std::string> ParseName(const char* what) {
    const Token& token = Peek();
    if (token.kind == TokenKind::kQuoted) {
      Advance();
      return token.text;
    }
    if (token.kind == TokenKind::kIdentifier &&
        ReservedWords().count(AsciiUpper(token.text)) == 0) {
      Advance();
      // Unquoted identifiers are case-insensitive: fold to lower case, as DataFusion
      // does.
      return AsciiLower(token.text);
    }
    if (token.kind == TokenKind::kIdentifier) {
      if (auto clause = UnsupportedClause(AsciiUpper(token.text))) {
        return InvalidQuery("unsupported SQL construct: " + *clause);
      }
    }
    return InvalidQuery(std::string("expected ") + what + ", found '" + token.text + "'");
  }

  // A column reference: `name` or `qualifier.name`.
  arrow::Result<std::string> ParseColumnRef() {
    ARROW_ASSIGN_OR_RAISE(std::string name, ParseName("a column name"));
    if (IsSymbol(".")) {
      Advance();
      ARROW_ASSIGN_OR_RAISE(std::string column, ParseName("a column name"));
      qualifiers_.push_back(name);
      return column;
    }
    return name;
  }

  // `col, col, …` (at least one).
  arrow::Result<std::vector<std::string>> ParseColumnList() {
    std::vector<std::string> columns;
    do {
      if (!columns.empty()) Advance();  // the comma
      ARROW_ASSIGN_OR_RAISE(std::string column, ParseColumnRef());
      columns.push_back(std::move(column));
    } while (IsSymbol(","));
    return columns;
  }

  arrow::Result<std::string> ParseOptionalAlias() {
    if (IsKeyword("AS")) {
      Advance();
      return ParseName("an alias");
    }
    const Token& token = Peek();
    if (token.kind == TokenKind::kQuoted ||
        (token.kind == TokenKind::kIdentifier &&
         ReservedWords().count(AsciiUpper(token.text)) == 0)) {
      return ParseName("an alias");
    }
    return std::string();
  }

  arrow::Result<SelectItem> ParseSelectItem() {
    SelectItem item;
    if (IsSymbol("*")) {
      Advance();
      item.kind = SelectItem::Kind::kStar;
      return item;
    }
    const Token& token = Peek();
    if (token.kind == TokenKind::kIdentifier && IsSymbol("(", 1) &&
        IsScalarFunction(AsciiLower(token.text))) {
      return ParseExpressionItem();
    }
    if (token.kind == TokenKind::kIdentifier && IsSymbol("(", 1)) {
      const std::string function = AsciiUpper(token.text);
      Advance();
      Advance();
      item.kind = SelectItem::Kind::kAggregate;
      if (function == "MIN") {
        item.function = AggregateFn::kMin;
      } else if (function == "MAX") {
        item.function = AggregateFn::kMax;
      } else if (function == "COUNT") {
        item.function = AggregateFn::kCount;
      } else {
        return InvalidQuery("unsupported SQL construct: function " + function + "()");
      }
      if (IsKeyword("DISTINCT"))
        return InvalidQuery("unsupported SQL construct: DISTINCT");
      if (IsSymbol("*")) {
        if (item.function != AggregateFn::kCount) {
          return InvalidQuery(function + "(*) is not valid; name a column");
        }
        Advance();
      } else {
        ARROW_ASSIGN_OR_RAISE(item.column, ParseColumnRef());
      }
      ARROW_RETURN_NOT_OK(Expect(")"));
      ARROW_ASSIGN_OR_RAISE(item.alias, ParseOptionalAlias());
      return item;
    }
    if (token.kind == TokenKind::kIdentifier && IsSymbol(".", 1) && IsSymbol("*", 2)) {
      Advance();
      Advance();
      Advance();
      item.kind = SelectItem::Kind::kStar;
      return item;
    }
    if (token.kind == TokenKind::kInteger || token.kind == TokenKind::kString ||
        token.kind == TokenKind::kFloat) {
      return InvalidQuery("unsupported SQL construct: literal in select list");
    }
    if (IsSymbol("[", 1) || (IsSymbol(".", 1) && IsSymbol("[", 3))) {
      return ParseExpressionItem();
    }
    ARROW_ASSIGN_OR_RAISE(item.column, ParseColumnRef());
    if (Peek().kind == TokenKind::kSymbol &&
        std::string("+-/%||*").find(Peek().text) != std::string::npos && !IsSymbol(",")) {
      return InvalidQuery("unsupported SQL construct: arithmetic operator '" +
                          Peek().text + "'");
    }
    ARROW_ASSIGN_OR_RAISE(item.alias, ParseOptionalAlias());
    return item;
  }

  static bool IsAggregate(const std::string& name) {
    const std::string upper = AsciiUpper(name);
    return upper == "MIN" || upper == "MAX" || upper == "COUNT";
  }

  arrow::Result<SelectItem> ParseExpressionItem() {
    SelectItem item;
    item.kind = SelectItem::Kind::kExpression;
    ARROW_ASSIGN_OR_RAISE(Expression expression, ParseExpression());
    item.expression = std::make_shared<const Expression>(std::move(expression));
    ARROW_ASSIGN_OR_RAISE(item.alias, ParseOptionalAlias());
    return item;
  }

  // A column, literal or call, then any number of `['field']`.
  arrow::Result<Expression> ParseExpression() {
    ARROW_RETURN_NOT_OK(Nest());
    ARROW_ASSIGN_OR_RAISE(Expression expression, ParsePrimary());
    while (IsSymbol("[")) {
      Advance();
      if (Peek().kind != TokenKind::kString) {
        return InvalidQuery(
            "a struct field is named by a string literal, e.g. ['value']");
      }
      Expression field;
      field.kind = Expression::Kind::kField;
      field.name = Advance().text;
      field.args.push_back(std::move(expression));
      expression = std::move(field);
      ARROW_RETURN_NOT_OK(Expect("]"));
    }
    --depth_;
    return expression;
  }

  arrow::Result<Expression> ParsePrimary() {
    Expression expression;
    const Token& token = Peek();
    if (token.kind == TokenKind::kIdentifier && IsSymbol("(", 1)) {
      if (!IsScalarFunction(AsciiLower(token.text)) && !IsAggregate(token.text)) {
        return InvalidQuery("unsupported SQL construct: function " +
                            AsciiUpper(token.text) + "()");
      }
      if (IsAggregate(token.text)) {
        return InvalidQuery("unsupported SQL construct: aggregate " +
                            AsciiUpper(token.text) + "() inside an expression");
      }
      expression.kind = Expression::Kind::kCall;
      expression.name = AsciiLower(Advance().text);
      Advance();  // (
      while (!IsSymbol(")")) {
        if (!expression.args.empty()) ARROW_RETURN_NOT_OK(Expect(","));
        ARROW_ASSIGN_OR_RAISE(Expression arg, ParseExpression());
        expression.args.push_back(std::move(arg));
      }
      Advance();  // )
      return expression;
    }
    if (token.kind == TokenKind::kIdentifier && AsciiUpper(token.text) == "NULL") {
      Advance();
      expression.literal.kind = Literal::Kind::kNull;
      return expression;
    }
    if (token.kind == TokenKind::kIdentifier || token.kind == TokenKind::kQuoted) {
      const std::string upper = AsciiUpper(token.text);
      if (token.kind == TokenKind::kQuoted || (upper != "TRUE" && upper != "FALSE")) {
        expression.kind = Expression::Kind::kColumn;
        ARROW_ASSIGN_OR_RAISE(expression.name, ParseColumnRef());
        return expression;
      }
    }
    ARROW_ASSIGN_OR_RAISE(expression.literal, ParseLiteral());
    return expression;
  }

  arrow::Result<Literal> ParseLiteral() {
    Literal literal;
    bool negative = false;
    if (IsSymbol("-")) {
      Advance();
      negative = true;
    }
    const Token& token = Peek();
    switch (token.kind) {
      case TokenKind::kInteger:
        literal.kind = Literal::Kind::kInteger;
        literal.text = (negative ? "-" : "") + token.text;
        break;
      case TokenKind::kFloat:
        literal.kind = Literal::Kind::kFloat;
        literal.text = (negative ? "-" : "") + token.text;
        break;
      case TokenKind::kString:
        if (negative) return InvalidQuery("'-' before a string literal");
        literal.kind = Literal::Kind::kString;
        literal.text = token.text;
        break;
      case TokenKind::kHex: {
        if (negative) return InvalidQuery("'-' before a hex literal");
        auto bytes = FromHex(token.text);
        if (!bytes.ok()) return InvalidQuery("bad hex literal x'" + token.text + "'");
        literal.kind = Literal::Kind::kHexBytes;
        literal.text = *bytes;
        break;
      }
      case TokenKind::kIdentifier: {
        const std::string word = AsciiUpper(token.text);
        if (!negative && (word == "TRUE" || word == "FALSE")) {
          literal.kind = Literal::Kind::kBoolean;
          literal.boolean = word == "TRUE";
          break;
        }
        if (!negative && word == "NULL") {
          return InvalidQuery("unsupported SQL construct: comparison with NULL");
        }
        return InvalidQuery(
            "unsupported SQL construct: comparison between columns or with '" +
            token.text + "'");
      }
      default:
        return UnexpectedHere();
    }
    Advance();
    return literal;
  }

  arrow::Status ParseCondition(std::vector<Comparison>* out) {
    if (IsSymbol("(")) {
      ARROW_RETURN_NOT_OK(Nest());
      Advance();
      ARROW_RETURN_NOT_OK(ParseConjunction(out));
      --depth_;
      return Expect(")");
    }
    if (IsKeyword("NOT")) return InvalidQuery("unsupported SQL construct: NOT");
    ARROW_ASSIGN_OR_RAISE(std::string column, ParseColumnRef());
    if (IsKeyword("BETWEEN")) {
      Advance();
      ARROW_ASSIGN_OR_RAISE(Literal low, ParseLiteral());
      ARROW_RETURN_NOT_OK(ExpectKeyword("AND"));
      ARROW_ASSIGN_OR_RAISE(Literal high, ParseLiteral());
      out->push_back({column, CompareOp::kGe, std::move(low), nullptr});
      out->push_back({column, CompareOp::kLe, std::move(high), nullptr});
      return arrow::Status::OK();
    }
    static const std::pair<const char*, CompareOp> kOps[] = {
        {"=", CompareOp::kEq}, {"!=", CompareOp::kNe}, {"<>", CompareOp::kNe},
        {"<", CompareOp::kLt}, {"<=", CompareOp::kLe}, {">", CompareOp::kGt},
        {">=", CompareOp::kGe}};
    for (const auto& [symbol, op] : kOps) {
      if (IsSymbol(symbol)) {
        Advance();
        if (Peek().kind == TokenKind::kIdentifier && IsSymbol("(", 1)) {
          ARROW_ASSIGN_OR_RAISE(Expression computed, ParseExpression());
          out->push_back({column, op, Literal{},
                          std::make_shared<const Expression>(std::move(computed))});
          return arrow::Status::OK();
        }
        ARROW_ASSIGN_OR_RAISE(Literal value, ParseLiteral());
        out->push_back({column, op, std::move(value), nullptr});
        return arrow::Status::OK();
      }
    }
    return UnexpectedHere();
  }

  arrow::Status ParseConjunction(std::vector<Comparison>* out) {
    ARROW_RETURN_NOT_OK(ParseCondition(out));
    while (IsKeyword("AND")) {
      Advance();
      ARROW_RETURN_NOT_OK(ParseCondition(out));
    }
    if (IsKeyword("OR")) return InvalidQuery("unsupported SQL construct: OR");
    return arrow::Status::OK();
  }

  arrow::Result<TableName> ParseTableName() {
    TableName name;
    std::vector<std::string> parts;
    ARROW_ASSIGN_OR_RAISE(std::string first, ParseName("a table name"));
    parts.push_back(first);
    while (IsSymbol(".")) {
      Advance();
      ARROW_ASSIGN_OR_RAISE(std::string part, ParseName("a table name"));
      parts.push_back(part);
    }
    if (parts.size() != 2) {
      return InvalidQuery(
          "table reference must be <dataset>.<table>, e.g. "
          "\"acme/eth_mainnet\".blocks");
    }
    name.dataset = parts[0];
    name.table = parts[1];
    return name;
  }

  arrow::Result<SelectStatement> ParseSelect(bool nested) {
    SelectStatement statement;
    if (IsKeyword("WITH")) return InvalidQuery("unsupported SQL construct: WITH");
    if (!IsKeyword("SELECT")) {
      if (Peek().kind == TokenKind::kEnd) return InvalidQuery("query is empty");
      return InvalidQuery("expected SELECT, found '" + Peek().text + "'");
    }
    Advance();
    if (IsKeyword("DISTINCT")) {
      Advance();
      if (IsKeyword("ON")) {
        Advance();
        ARROW_RETURN_NOT_OK(Expect("("));
        ARROW_ASSIGN_OR_RAISE(statement.distinct_on, ParseColumnList());
        ARROW_RETURN_NOT_OK(Expect(")"));
      } else {
        statement.distinct = true;
      }
    }
    do {
      if (!statement.items.empty()) Advance();  // the comma
      ARROW_ASSIGN_OR_RAISE(SelectItem item, ParseSelectItem());
      statement.items.push_back(std::move(item));
    } while (IsSymbol(","));
    if (!IsKeyword("FROM")) {
      if (Peek().kind == TokenKind::kEnd) {
        return InvalidQuery("unsupported SQL construct: SELECT without FROM");
      }
      return UnexpectedHere();
    }
    Advance();
    if (IsSymbol("(")) {
      ARROW_RETURN_NOT_OK(Nest());
      Advance();
      // Qualifiers seen so far belong to this query, not to the subquery.
      std::vector<std::string> outer_qualifiers = std::move(qualifiers_);
      qualifiers_.clear();
      ARROW_ASSIGN_OR_RAISE(SelectStatement inner, ParseSelect(/*nested=*/true));
      qualifiers_ = std::move(outer_qualifiers);
      --depth_;
      ARROW_RETURN_NOT_OK(Expect(")"));
      statement.from = std::make_shared<SelectStatement>(std::move(inner));
    } else {
      ARROW_ASSIGN_OR_RAISE(statement.from, ParseTableName());
    }
    ARROW_ASSIGN_OR_RAISE(statement.from_alias, ParseOptionalAlias());
    if (IsSymbol(",")) return InvalidQuery("unsupported SQL construct: JOIN");
    if (IsKeyword("WHERE")) {
      Advance();
      ARROW_RETURN_NOT_OK(ParseConjunction(&statement.where));
    }
    if (IsKeyword("GROUP") && IsKeyword("BY", 1)) {
      Advance();
      Advance();
      ARROW_ASSIGN_OR_RAISE(statement.group_by, ParseColumnList());
    }
    if (IsKeyword("LIMIT")) {
      Advance();
      if (Peek().kind != TokenKind::kInteger)
        return InvalidQuery("LIMIT needs an integer");
      const std::string& digits = Advance().text;
      statement.limit = ParseUint64(digits);
      if (!statement.limit) return InvalidQuery("LIMIT " + digits + " is out of range");
    }
    if (IsKeyword("SETTINGS")) {
      if (nested) return InvalidQuery("SETTINGS is only allowed on the outermost query");
      Advance();
      do {
        if (!statement.settings.empty()) Advance();  // the comma
        ARROW_ASSIGN_OR_RAISE(std::string key, ParseName("a setting name"));
        ARROW_RETURN_NOT_OK(Expect("="));
        const Token& value = Advance();
        if (value.kind == TokenKind::kEnd)
          return InvalidQuery("setting '" + key + "' has no value");
        // A string keeps its quotes: `stream = 'true'` is not the Boolean ampd requires.
        statement.settings[key] =
            value.kind == TokenKind::kIdentifier ? AsciiLower(value.text)
            : value.kind == TokenKind::kString   ? "'" + value.text + "'"
                                                 : value.text;
      } while (IsSymbol(","));
    }
    for (const auto& qualifier : qualifiers_) {
      if (qualifier != statement.from_alias &&
          !(std::holds_alternative<TableName>(statement.from) &&
            qualifier == std::get<TableName>(statement.from).table)) {
        return InvalidQuery("unknown table qualifier '" + qualifier + "'");
      }
    }
    qualifiers_.clear();
    if (!nested && Peek().kind != TokenKind::kEnd && !IsSymbol(";"))
      return UnexpectedHere();
    return statement;
  }

  // Parentheses and subqueries recurse; a bound keeps hostile text from exhausting the
  // stack (real queries nest a few levels). An error ends the whole parse, so only the
  // successful paths step back out.
  arrow::Status Nest() {
    if (++depth_ > kMaxNesting) {
      return InvalidQuery("the query nests deeper than " + std::to_string(kMaxNesting) +
                          " levels of parentheses");
    }
    return arrow::Status::OK();
  }

  static constexpr int kMaxNesting = 64;

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<std::string> qualifiers_;
};

}  // namespace

bool SelectStatement::streaming() const {
  auto it = settings.find("stream");
  return it != settings.end() && it->second == "true";
}

arrow::Result<SelectStatement> Parse(const std::string& text) {
  ARROW_ASSIGN_OR_RAISE(std::vector<Token> tokens, Tokenize(text));
  Parser parser(std::move(tokens));
  return parser.ParseStatement();
}

std::string Expression::DisplayName() const {
  switch (kind) {
    case Kind::kColumn:
      return name;
    case Kind::kField:
      return args[0].DisplayName() + "[" + name + "]";
    case Kind::kCall: {
      std::string out = name + "(";
      for (size_t i = 0; i < args.size(); ++i) {
        if (i > 0) out += ",";
        out += args[i].DisplayName();
      }
      return out + ")";
    }
    case Kind::kLiteral:
      switch (literal.kind) {
        case Literal::Kind::kInteger:
          return "Int64(" + literal.text + ")";
        case Literal::Kind::kFloat:
          return "Float64(" + literal.text + ")";
        case Literal::Kind::kString:
          return "Utf8(\"" + literal.text + "\")";
        case Literal::Kind::kBoolean:
          return std::string("Boolean(") + (literal.boolean ? "true" : "false") + ")";
        case Literal::Kind::kHexBytes:
          return "Binary(\"" + ToHex(literal.text) + "\")";
        case Literal::Kind::kNull:
          return "NULL";
      }
  }
  return name;
}

const char* CompareOpName(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "=";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "?";
}

}  // namespace ampdelta::devserver::sql

#pragma once

/// \file sql.h
/// \brief Parser for the SQL subset the dev server answers (product.md §11).
///
/// Supported: `SELECT [DISTINCT | DISTINCT ON (col, …)]` of columns (optionally
/// `AS alias`), `*`, `MIN/MAX/COUNT` aggregates, scalar function calls (Amp's EVM
/// functions, docs/evm-functions.md) whose arguments are columns, literals or calls, and
/// struct fields `expr['name']`; `FROM "ns/name".table`, `dataset.table`
/// or a parenthesised subquery with an optional alias; `WHERE` with comparisons, `BETWEEN
/// … AND …` and `AND` (a comparison's right side a literal or a call of literals); `GROUP
/// BY col, …`; `LIMIT n`; `SETTINGS key = value, …`. Anything else fails with an `invalid
/// query:` message that names the construct.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/devserver/sql_literal.h"

namespace ampdelta::devserver::sql {

/// \brief A scalar expression: a column, a literal, a function call (`evm_topic('…')`) or
/// a field of a struct (`expr['name']`).
struct Expression {
  enum class Kind : uint8_t { kColumn, kLiteral, kCall, kField };
  Kind kind = Kind::kLiteral;
  /// The column's name, the function's name (lower case) or the field's name.
  std::string name;
  Literal literal;
  /// A call's arguments; a field access's one struct expression.
  std::vector<Expression> args;

  /// \brief The name DataFusion gives the result column when no alias is given, e.g.
  /// `evm_topic(Utf8("Sync(uint112,uint112)"))`, `decoded[value]`.
  std::string DisplayName() const;
};

/// \brief Comparison operators.
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

/// \brief `column <op> literal` or `column <op> f(literals…)` (a call of constants, e.g.
/// `topic0 = evm_topic('…')`, in `computed`). BETWEEN is parsed into two comparisons.
struct Comparison {
  std::string column;
  CompareOp op = CompareOp::kEq;
  Literal value;
  std::shared_ptr<const Expression> computed;
};

/// \brief Aggregate functions.
enum class AggregateFn : uint8_t { kMin, kMax, kCount };

/// \brief One item of the select list.
struct SelectItem {
  enum class Kind : uint8_t { kColumn, kStar, kAggregate, kExpression };
  Kind kind = Kind::kColumn;
  /// A function call or field access (kExpression).
  std::shared_ptr<const Expression> expression;
  /// Column name (empty for `*` and `COUNT(*)`).
  std::string column;
  AggregateFn function = AggregateFn::kCount;
  /// Output name given with AS, or empty.
  std::string alias;
};

struct SelectStatement;

/// \brief A table reference `dataset.table`.
struct TableName {
  std::string dataset;
  std::string table;
};

/// \brief A parsed SELECT.
struct SelectStatement {
  std::vector<SelectItem> items;
  std::variant<TableName, std::shared_ptr<SelectStatement>> from;
  /// Alias of the FROM item, or empty.
  std::string from_alias;
  std::vector<Comparison> where;
  /// `GROUP BY` columns, in order.
  std::vector<std::string> group_by;
  /// `SELECT DISTINCT` (every selected column is the key).
  bool distinct = false;
  /// `SELECT DISTINCT ON (…)`: the first row of each key.
  std::vector<std::string> distinct_on;
  std::optional<uint64_t> limit;
  /// Lower-case keys; values as written (lower-cased for booleans).
  std::map<std::string, std::string> settings;

  /// \brief Return true when `SETTINGS stream = true` is present.
  bool streaming() const;
};

/// \brief Parse one statement (a trailing `;` is allowed).
///
/// \return the statement, or Invalid("invalid query: …") naming what is wrong
arrow::Result<SelectStatement> Parse(const std::string& text);

/// \brief Return the SQL spelling of an operator ("=", "<", …).
const char* CompareOpName(CompareOp op);

}  // namespace ampdelta::devserver::sql

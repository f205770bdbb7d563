#pragma once

/// \file expression.h
/// \brief Scalar expressions of a query (columns, literals, function calls, struct
/// fields) bound to the schema of the rows they read.

#include <memory>
#include <string>

#include <arrow/compute/api.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/devserver/sql.h"

namespace ampdelta::devserver {

/// \brief An expression bound to an input schema. Immutable.
class BoundExpression {
 public:
  virtual ~BoundExpression() = default;
  /// \brief The result's type, named as DataFusion names an unaliased result.
  const std::shared_ptr<arrow::Field>& field() const { return field_; }
  /// \brief The value for each row of `batch`: an array, or a scalar for all of them.
  virtual arrow::Result<arrow::Datum> Evaluate(const arrow::RecordBatch& batch) const = 0;
  /// \brief The literal the expression is, if it is one.
  virtual const sql::Literal* literal() const { return nullptr; }

 protected:
  std::shared_ptr<arrow::Field> field_;
};

/// \brief Bind `expression` to `input` (`source_name` names it in messages).
/// \return Invalid("invalid query: …") naming an unknown column, function or field
arrow::Result<std::shared_ptr<const BoundExpression>> BindExpression(
    const sql::Expression& expression, const arrow::Schema& input,
    const std::string& source_name);

/// \brief The value of an expression that reads no column, e.g. `evm_topic('…')`.
/// \return Invalid when it reads a column
arrow::Result<std::shared_ptr<arrow::Scalar>> EvaluateConstant(
    const BoundExpression& expression);

}  // namespace ampdelta::devserver

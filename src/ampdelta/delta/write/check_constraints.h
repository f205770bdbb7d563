#pragma once

/// \file check_constraints.h
/// \brief CHECK constraints (PROTOCOL.md "Check Constraints", writer feature
/// `checkConstraints`): a table's `delta.constraints.<name>` properties, as Spark's
/// `ALTER TABLE … ADD CONSTRAINT` records them, enforced on every row a write adds.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/read/predicate.h"

namespace ampdelta::delta {

/// \brief One constraint, bound to the table schema.
struct CheckConstraint {
  std::string name;
  std::string expression;
  Predicate predicate;
};

/// \brief The table's constraints (from its configuration), bound to `schema`.
/// \return NotImplemented (unsupported feature) naming a constraint whose expression is
///   outside what ampdelta evaluates (Predicate::Parse: comparisons of a column with a
///   literal, BETWEEN, IS [NOT] NULL, joined by AND), so that no write skips it
arrow::Result<std::vector<CheckConstraint>> TableConstraints(
    const std::map<std::string, std::string>& configuration,
    const std::shared_ptr<arrow::Schema>& schema);

/// \brief Check every row of `batch` (in the table schema) against `constraints`. A row
/// violates one when the expression is false; null (unknown) passes, as in SQL.
/// \return Invalid naming the constraint, its expression, the row and the values of the
///   columns it reads
arrow::Status CheckRows(const std::vector<CheckConstraint>& constraints,
                        const arrow::RecordBatch& batch);

}  // namespace ampdelta::delta

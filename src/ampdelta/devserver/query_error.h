#pragma once

/// \file query_error.h
/// \brief The dev server's one error for a query it refuses, shared by the SQL parser,
/// the expression evaluator and the query planner (sql.cc, expression.cc, query.cc).

#include <string>

#include <arrow/status.h>

namespace ampdelta::devserver {

/// \brief Invalid("invalid query: <what>"), ampd's wording (ampd-fidelity.md).
inline arrow::Status InvalidQuery(const std::string& what) {
  return arrow::Status::Invalid("invalid query: ", what);
}

}  // namespace ampdelta::devserver

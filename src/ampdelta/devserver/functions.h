#pragma once

/// \file functions.h
/// \brief The scalar functions the dev server's SQL knows: Amp's EVM functions
/// (evm_decode_log, evm_topic, …, docs/evm-functions.md) and shift_units, with ampd's
/// names, argument and result types, null behaviour and error wording.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/compute/api.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/devserver/sql_literal.h"

namespace ampdelta::devserver {

/// \brief An argument as a function sees it when the query is bound: its type, and its
/// value when it is a literal (signatures and Solidity types must be).
struct ArgumentInfo {
  std::shared_ptr<arrow::DataType> type;
  const sql::Literal* literal = nullptr;
};

/// \brief A function bound to its arguments' types. Immutable.
class BoundFunction {
 public:
  virtual ~BoundFunction() = default;
  /// \brief The result type.
  virtual std::shared_ptr<arrow::DataType> type() const = 0;
  /// \brief The result for `rows` rows; each argument is an array of `rows` values or a
  /// scalar standing for all of them.
  virtual arrow::Result<arrow::Datum> Call(const std::vector<arrow::Datum>& args,
                                           int64_t rows) const = 0;
};

/// \brief Whether `name` (lower case) is a scalar function the dev server knows.
bool IsScalarFunction(std::string_view name);

/// \brief Bind the function `name` (lower case) to its arguments.
/// \return Invalid("invalid query: <function>: …") with ampd's wording for a wrong
///   argument count or type, a signature that is not a literal or does not parse
arrow::Result<std::unique_ptr<BoundFunction>> BindFunction(
    const std::string& name, const std::vector<ArgumentInfo>& args);

/// \brief A function's name (lower case) and how it binds to its arguments.
struct ScalarFunction {
  using Binder = arrow::Result<std::unique_ptr<BoundFunction>> (*)(
      const std::string& name, const std::vector<ArgumentInfo>& args);
  std::string_view name;
  Binder bind;
};

/// \brief The EVM functions (evm_functions.cc).
const std::vector<ScalarFunction>& EvmFunctions();

/// \brief `value` × 10^`units` as shift_units writes it: exact, plain (no exponent),
/// trailing zeros dropped. `value` is decimal text (`-1.5`, `2e3`).
arrow::Result<std::string> ShiftDecimalText(std::string_view value, int64_t units);

/// \brief Every argument as an array of `rows` values (scalars repeated).
arrow::Result<std::vector<std::shared_ptr<arrow::Array>>> ArgumentArrays(
    const std::vector<arrow::Datum>& args, int64_t rows);

/// \brief Invalid("invalid query: <function>: <what>").
arrow::Status FunctionError(std::string_view function, const std::string& what);

}  // namespace ampdelta::devserver

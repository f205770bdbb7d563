#include "ampdelta/delta/write/check_constraints.h"

#include <map>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

constexpr std::string_view kConstraintPrefix = "delta.constraints.";

// `column=value, …` of the columns a constraint reads, at `row`.
std::string RowValues(const CheckConstraint& constraint, const arrow::RecordBatch& batch,
                      int64_t row) {
  std::string out;
  for (const auto& column : constraint.predicate.columns()) {
    const auto array = batch.GetColumnByName(column);
    if (array == nullptr) continue;
    auto value = array->GetScalar(row);
    out += (out.empty() ? "" : ", ") + column + "=" +
           (value.ok() ? EscapeForMessage((*value)->ToString()) : "?");
  }
  return out;
}

arrow::Status CannotEvaluate(const std::string& name, const std::string& expression,
                             const std::string& why) {
  return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                   "ampdelta cannot write this table: it cannot evaluate its CHECK "
                   "constraint ",
                   name, " (", EscapeForMessage(expression), ") as Spark does (", why,
                   "), and no row may skip it");
}

// Where Spark's SQL and ampdelta's predicates could disagree on a row, the constraint is
// refused rather than risk a row Spark would reject (or the reverse): string escapes,
// floats (Spark orders NaN above every number and compares float with double literals as
// doubles) and time-zone-aware timestamps (Spark reads a literal in its session zone).
arrow::Status CheckSparkAgrees(const std::string& name, const std::string& expression,
                               const Predicate& predicate, const arrow::Schema& schema) {
  if (expression.find('\\') != std::string::npos ||
      expression.find("''") != std::string::npos) {
    return CannotEvaluate(name, expression, "a string literal with an escape");
  }
  for (const auto& column : predicate.columns()) {
    const int index = FindFieldIgnoreCase(schema, column);
    if (index < 0) continue;
    const auto& type = *schema.field(index)->type();
    const bool floating =
        type.id() == arrow::Type::FLOAT || type.id() == arrow::Type::DOUBLE;
    const bool zoned = type.id() == arrow::Type::TIMESTAMP &&
                       !static_cast<const arrow::TimestampType&>(type).timezone().empty();
    if (floating || zoned) {
      return CannotEvaluate(name, expression,
                            "column " + column + " is a " + DeltaTypeName(type));
    }
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::vector<CheckConstraint>> TableConstraints(
    const std::map<std::string, std::string>& configuration,
    const std::shared_ptr<arrow::Schema>& schema) {
  std::vector<CheckConstraint> out;
  for (const auto& [key, expression] : configuration) {
    if (key.rfind(kConstraintPrefix, 0) != 0) continue;
    const std::string name = key.substr(kConstraintPrefix.size());
    auto predicate = Predicate::Parse(expression, schema);
    if (!predicate.ok()) {
      return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                       "ampdelta cannot write this table: it cannot evaluate its CHECK "
                       "constraint ",
                       name, " (", EscapeForMessage(expression),
                       "), and no row may skip it: ", predicate.status().message(),
                       "; ampdelta evaluates comparisons of a column with a literal, "
                       "BETWEEN and IS [NOT] NULL joined by AND");
    }
    ARROW_RETURN_NOT_OK(CheckSparkAgrees(name, expression, *predicate, *schema));
    out.push_back(CheckConstraint{name, expression, *std::move(predicate)});
  }
  return out;
}

arrow::Status CheckRows(const std::vector<CheckConstraint>& constraints,
                        const arrow::RecordBatch& batch) {
  for (const auto& constraint : constraints) {
    ARROW_ASSIGN_OR_RAISE(auto result, constraint.predicate.EvaluateKleene(batch));
    const auto& holds = static_cast<const arrow::BooleanArray&>(*result);
    if (holds.false_count() == 0) continue;
    for (int64_t row = 0; row < holds.length(); ++row) {
      if (holds.IsValid(row) && !holds.Value(row)) {
        return InvalidInputError("CHECK constraint ", constraint.name, " (",
                                 EscapeForMessage(constraint.expression),
                                 ") is violated by row ", row,
                                 " of the batch: ", RowValues(constraint, batch, row),
                                 "; nothing was written");
      }
    }
  }
  return arrow::Status::OK();
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/write/check_constraints.h"

#include <map>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>

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

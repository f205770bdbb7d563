#include "ampdelta/delta/write/identity_columns.h"

#include <algorithm>

#include <arrow/array/builder_primitive.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

constexpr const char* kStart = "delta.identity.start";
constexpr const char* kStep = "delta.identity.step";
constexpr const char* kHighWaterMark = "delta.identity.highWaterMark";
constexpr const char* kAllowExplicitInsert = "delta.identity.allowExplicitInsert";

arrow::Status CannotHonour(const std::string& column, const std::string& why) {
  return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                   "ampdelta cannot write this table: identity column ",
                   EscapeForMessage(column), " ", why);
}

arrow::Result<std::optional<int64_t>> NumberEntry(const arrow::Field& field,
                                                  const char* key) {
  const auto text = FieldMetadataValue(field, key);
  if (!text) return std::optional<int64_t>{};
  const auto value = ParseInt64(*text);
  if (!value) {
    return CannotHonour(field.name(), std::string("has ") + key + " = " +
                                          EscapeForMessage(*text) +
                                          ", which is not a long");
  }
  return value;
}

arrow::Result<IdentityColumn> ParseIdentity(const arrow::Field& field) {
  IdentityColumn column;
  column.name = field.name();
  if (field.type()->id() != arrow::Type::INT64) {
    return CannotHonour(field.name(), "is a " + DeltaTypeName(*field.type()) +
                                          " (identity columns are longs)");
  }
  ARROW_ASSIGN_OR_RAISE(auto start, NumberEntry(field, kStart));
  ARROW_ASSIGN_OR_RAISE(auto step, NumberEntry(field, kStep));
  ARROW_ASSIGN_OR_RAISE(column.high_water_mark, NumberEntry(field, kHighWaterMark));
  if (!start || !step || *step == 0) {
    return CannotHonour(field.name(), "has no start, no step or a step of 0");
  }
  column.start = *start;
  column.step = *step;
  const auto explicit_insert = FieldMetadataValue(field, kAllowExplicitInsert);
  column.allow_explicit_insert = explicit_insert && *explicit_insert == "true";
  return column;
}

// The first value `start + k * step` (k >= 0) beyond the high-water mark; nullopt when
// it is past a long.
std::optional<int64_t> FirstValue(const IdentityColumn& column) {
  if (!column.high_water_mark) return column.start;
  const __int128 start = column.start;
  const __int128 step = column.step;
  const __int128 mark = *column.high_water_mark;
  const __int128 beyond = step > 0 ? mark - start : start - mark;  // in steps' direction
  const __int128 k = beyond < 0 ? 0 : beyond / (step > 0 ? step : -step) + 1;
  const __int128 value = start + k * step;
  if (value > INT64_MAX || value < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(value);
}

std::shared_ptr<arrow::Field> WithEntry(const std::shared_ptr<arrow::Field>& field,
                                        const char* key, int64_t value) {
  auto metadata = field->metadata() ? field->metadata()->Copy()
                                    : std::make_shared<arrow::KeyValueMetadata>();
  ARROW_UNUSED(metadata->Set(key, std::to_string(value)));
  return field->WithMetadata(std::move(metadata));
}

// The further of two marks in the direction of `step`.
int64_t Further(int64_t step, int64_t a, int64_t b) {
  return step > 0 ? std::max(a, b) : std::min(a, b);
}

}  // namespace

arrow::Result<std::vector<IdentityColumn>> IdentityColumnsOf(
    const arrow::Schema& schema) {
  std::vector<IdentityColumn> out;
  for (const auto& field : schema.fields()) {
    if (!FieldMetadataValue(*field, kStart)) continue;
    ARROW_ASSIGN_OR_RAISE(auto column, ParseIdentity(*field));
    out.push_back(std::move(column));
  }
  return out;
}

arrow::Result<std::shared_ptr<arrow::Schema>> KeepHighWaterMarks(
    const std::shared_ptr<arrow::Schema>& schema, const arrow::Schema& kept) {
  std::shared_ptr<arrow::Schema> out = schema;
  for (int index = 0; index < schema->num_fields(); ++index) {
    const auto& field = *schema->field(index);
    if (!FieldMetadataValue(field, kStart)) continue;
    // The same column in `kept`: by physical name, which a rename leaves as it was.
    const auto& kept_fields = kept.fields();
    const auto other =
        std::find_if(kept_fields.begin(), kept_fields.end(), [&](const auto& candidate) {
          return PhysicalName(*candidate) == PhysicalName(field) &&
                 FieldMetadataValue(*candidate, kStart);
        });
    if (other == kept_fields.end()) continue;
    ARROW_ASSIGN_OR_RAISE(auto column, ParseIdentity(field));
    ARROW_ASSIGN_OR_RAISE(auto kept_column, ParseIdentity(**other));
    if (!kept_column.high_water_mark) continue;
    const int64_t mark =
        column.high_water_mark
            ? Further(column.step, *column.high_water_mark, *kept_column.high_water_mark)
            : *kept_column.high_water_mark;
    ARROW_ASSIGN_OR_RAISE(
        out, out->SetField(index, WithEntry(out->field(index), kHighWaterMark, mark)));
  }
  return out;
}

arrow::Result<IdentityAssigner> IdentityAssigner::Make(const arrow::Schema& table_schema,
                                                       const arrow::Schema& source_schema,
                                                       bool rewrites_rows) {
  ARROW_ASSIGN_OR_RAISE(auto columns, IdentityColumnsOf(table_schema));
  IdentityAssigner assigner;
  for (auto& column : columns) {
    const bool provided = FindFieldIgnoreCase(source_schema, column.name) >= 0;
    if (provided && !rewrites_rows && !column.allow_explicit_insert) {
      return InvalidInputError(
          "column ", EscapeForMessage(column.name),
          " is GENERATED ALWAYS AS IDENTITY: the table assigns its values and a write "
          "may not provide them; leave ",
          EscapeForMessage(column.name), " out of the query; the table was not changed");
    }
    if (provided) continue;
    const auto first = FirstValue(column);
    assigner.generators_.push_back(Generator{std::move(column), first, std::nullopt});
  }
  return assigner;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> IdentityAssigner::Fill(
    const std::shared_ptr<arrow::RecordBatch>& batch) {
  std::shared_ptr<arrow::RecordBatch> out = batch;
  const int64_t rows = batch->num_rows();
  for (auto& generator : generators_) {
    if (FindFieldIgnoreCase(*batch->schema(), generator.column.name) >= 0) continue;
    const __int128 last =
        generator.next ? static_cast<__int128>(*generator.next) +
                             static_cast<__int128>(rows - 1) * generator.column.step
                       : static_cast<__int128>(INT64_MAX) + 1;
    if (rows > 0 && (last > INT64_MAX || last < INT64_MIN)) {
      return InvalidInputError("identity column ",
                               EscapeForMessage(generator.column.name),
                               " ran out of values: ", rows,
                               " more would pass the range of a long; the table was not "
                               "changed");
    }
    // Step by step: every value lies between the first and the last, both longs, where
    // row * step alone may not.
    arrow::Int64Builder values;
    ARROW_RETURN_NOT_OK(values.Reserve(rows));
    __int128 value = rows > 0 ? *generator.next : 0;
    for (int64_t row = 0; row < rows; ++row, value += generator.column.step) {
      values.UnsafeAppend(static_cast<int64_t>(value));
    }
    ARROW_ASSIGN_OR_RAISE(auto array, values.Finish());
    if (rows > 0) {
      generator.last = static_cast<int64_t>(last);
      const __int128 next = last + generator.column.step;
      generator.next = next > INT64_MAX || next < INT64_MIN
                           ? std::nullopt
                           : std::optional<int64_t>(static_cast<int64_t>(next));
    }
    ARROW_ASSIGN_OR_RAISE(
        out, out->AddColumn(out->num_columns(),
                            arrow::field(generator.column.name, arrow::int64()), array));
  }
  return out;
}

std::vector<std::string> IdentityAssigner::generated_columns() const {
  std::vector<std::string> names;
  for (const auto& generator : generators_) names.push_back(generator.column.name);
  return names;
}

bool IdentityAssigner::assigned() const {
  return std::any_of(
      generators_.begin(), generators_.end(),
      [](const Generator& generator) { return generator.last.has_value(); });
}

arrow::Result<std::shared_ptr<arrow::Schema>> IdentityAssigner::AdvanceHighWaterMarks(
    const std::shared_ptr<arrow::Schema>& table_schema) const {
  std::shared_ptr<arrow::Schema> out = table_schema;
  for (const auto& generator : generators_) {
    if (!generator.last) continue;
    const int index = FindFieldIgnoreCase(*out, generator.column.name);
    if (index < 0) continue;
    ARROW_ASSIGN_OR_RAISE(
        out, out->SetField(
                 index, WithEntry(out->field(index), kHighWaterMark, *generator.last)));
  }
  return out;
}

}  // namespace ampdelta::delta

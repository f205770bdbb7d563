#include "ampdelta/delta/log/partitioning.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <arrow/array.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/decimal.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/percent_encoding.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/time_format.h"
#include "ampdelta/util/utf8.h"

namespace ampdelta::delta {
namespace {

constexpr const char* kHiveNull = "__HIVE_DEFAULT_PARTITION__";

}  // namespace

std::string EscapePartitionPathValue(const std::string& value) {
  return PercentEncode(value, PercentEscape::kPartitionFolder);
}

bool IsPartitionColumn(const std::vector<std::string>& columns,
                       const std::string& column) {
  return std::any_of(columns.begin(), columns.end(), [&](const std::string& candidate) {
    return EqualsIgnoreAsciiCase(candidate, column);
  });
}

std::optional<std::string> FindPartitionValue(const NullableStringMap& values,
                                              const std::string& column) {
  auto it = values.find(column);
  if (it != values.end()) return it->second;
  for (const auto& [key, value] : values) {
    if (EqualsIgnoreAsciiCase(key, column)) return value;
  }
  return std::nullopt;
}

std::optional<std::string> FindPartitionValue(const NullableStringMap& values,
                                              const arrow::Field& field) {
  const std::string physical = PhysicalName(field);
  if (physical != field.name()) {
    auto value = FindPartitionValue(values, physical);
    if (value || values.count(physical) != 0) return value;
  }
  return FindPartitionValue(values, field.name());
}

std::string PartitionFolder(const std::vector<std::string>& columns,
                            const NullableStringMap& values) {
  std::string out;
  for (const auto& column : columns) {
    auto it = values.find(column);
    const bool null = it == values.end() || !it->second || it->second->empty();
    if (!out.empty()) out += '/';
    out += EscapePartitionPathValue(column) + "=" +
           (null ? std::string(kHiveNull) : EscapePartitionPathValue(*it->second));
  }
  return out;
}

bool IsPartitionableType(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::BOOL:
    case arrow::Type::STRING:
    case arrow::Type::DATE32:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::DECIMAL128:
      return true;
    default:
      return false;
  }
}

arrow::Result<std::optional<std::string>> SerializePartitionValue(
    const arrow::Array& array, int64_t row) {
  if (array.IsNull(row)) return std::nullopt;
  switch (array.type_id()) {
    case arrow::Type::INT8:
      return std::to_string(static_cast<const arrow::Int8Array&>(array).Value(row));
    case arrow::Type::INT16:
      return std::to_string(static_cast<const arrow::Int16Array&>(array).Value(row));
    case arrow::Type::INT32:
      return std::to_string(static_cast<const arrow::Int32Array&>(array).Value(row));
    case arrow::Type::INT64:
      return std::to_string(static_cast<const arrow::Int64Array&>(array).Value(row));
    case arrow::Type::BOOL:
      return std::string(
          static_cast<const arrow::BooleanArray&>(array).Value(row) ? "true" : "false");
    case arrow::Type::STRING: {
      // An empty string means null in partitionValues (PROTOCOL.md "Partition Value
      // Serialization"); writing "" makes Spark read it back as a literal empty string.
      std::string value(static_cast<const arrow::StringArray&>(array).GetView(row));
      if (value.empty()) return std::nullopt;
      // partitionValues is JSON, whose strings are Unicode: refuse here, before any file
      // of the load is written, rather than when the commit is encoded.
      if (!IsValidUtf8(value)) {
        return InvalidInputError("partition value '", EscapeNonUtf8(value.substr(0, 64)),
                                 "' is not valid UTF-8");
      }
      return value;
    }
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE: {
      const double value = array.type_id() == arrow::Type::FLOAT
                               ? static_cast<const arrow::FloatArray&>(array).Value(row)
                               : static_cast<const arrow::DoubleArray&>(array).Value(row);
      if (std::isnan(value)) return std::string("NaN");
      if (std::isinf(value)) return std::string(value > 0 ? "Infinity" : "-Infinity");
      char text[40];
      std::snprintf(text, sizeof(text), "%.17g", value);
      return std::string(text);
    }
    case arrow::Type::DECIMAL128:
      return static_cast<const arrow::Decimal128Array&>(array).FormatValue(row);
    case arrow::Type::DATE32:
      return FormatCivil(
          int64_t{static_cast<const arrow::Date32Array&>(array).Value(row)} * 86400,
          CivilFormat::kDate);
    case arrow::Type::TIMESTAMP: {
      const auto& type = static_cast<const arrow::TimestampType&>(*array.type());
      // Microseconds: Delta timestamps have no finer unit.
      const int64_t micros = ToMicros(
          static_cast<const arrow::TimestampArray&>(array).Value(row), type.unit());
      int64_t seconds = 0;
      int64_t fraction = 0;
      SplitEpoch(micros, 1'000'000, &seconds, &fraction);
      char frac[16];
      std::snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(fraction));
      if (type.timezone().empty())
        return FormatCivil(seconds, CivilFormat::kDateTime) + frac;
      return FormatCivil(seconds, CivilFormat::kIsoDateTime) + frac + "Z";
    }
    default:
      return InvalidInputError("cannot partition by a column of type ",
                               array.type()->ToString());
  }
}

arrow::Result<std::shared_ptr<arrow::Scalar>> ParsePartitionValue(
    const std::optional<std::string>& value,
    const std::shared_ptr<arrow::DataType>& type) {
  if (!value || (value->empty() && type->id() != arrow::Type::STRING)) {
    return arrow::MakeNullScalar(type);
  }
  if (type->id() == arrow::Type::TIMESTAMP) {
    // Accept "YYYY-MM-DD HH:MM:SS[.f]" and ISO-8601 "…T…[.f]Z" (both UTC for timestamp).
    std::string text = *value;
    for (char& c : text) {
      if (c == 'T') c = ' ';
    }
    const bool utc = !text.empty() && text.back() == 'Z';
    if (utc) text.pop_back();
    auto parsed = arrow::Scalar::Parse(arrow::timestamp(arrow::TimeUnit::MICRO), text);
    if (!parsed.ok()) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                       "bad timestamp partition value '", *value, "'");
    }
    return std::make_shared<arrow::TimestampScalar>(
        static_cast<const arrow::TimestampScalar&>(**parsed).value, type);
  }
  if (type->id() == arrow::Type::BINARY) {
    return std::make_shared<arrow::BinaryScalar>(arrow::Buffer::FromString(*value));
  }
  if (type->id() == arrow::Type::DECIMAL128) {
    // Exact: "1.5" into decimal(10,2) is 1.50; a value that would lose digits is an
    // error.
    const auto& decimal = static_cast<const arrow::Decimal128Type&>(*type);
    arrow::Decimal128 number;
    int32_t precision = 0;
    int32_t scale = 0;
    if (arrow::Decimal128::FromString(*value, &number, &precision, &scale).ok()) {
      // Arrow's Rescale reads past its table of powers of ten for a step of more than
      // 38 digits ("0e-20180512"); no value but zero survives such a step exactly.
      const int64_t step = static_cast<int64_t>(scale) - decimal.scale();
      if (std::abs(step) > arrow::Decimal128Type::kMaxPrecision) {
        if (number == arrow::Decimal128(0)) {
          return std::make_shared<arrow::Decimal128Scalar>(number, type);
        }
        return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                         "bad partition value '", *value, "' for type ",
                         type->ToString());
      }
      auto rescaled = number.Rescale(scale, decimal.scale());
      if (rescaled.ok() && rescaled->FitsInPrecision(decimal.precision())) {
        return std::make_shared<arrow::Decimal128Scalar>(*rescaled, type);
      }
    }
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                     "bad partition value '", *value, "' for type ", type->ToString());
  }
  auto parsed = arrow::Scalar::Parse(type, *value);
  if (!parsed.ok()) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                     "bad partition value '", *value, "' for type ", type->ToString());
  }
  return *parsed;
}

}  // namespace ampdelta::delta

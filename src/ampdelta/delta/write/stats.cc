#include "ampdelta/delta/write/stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/decimal.h>
#include <arrow/util/value_parsing.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/time_format.h"
#include "ampdelta/util/utf8.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

namespace cp = arrow::compute;

enum class Kind : uint8_t { kNone, kInt, kDouble, kDecimal, kString, kDate, kTimestamp };

Kind KindOf(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
      return Kind::kInt;
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
      return Kind::kDouble;
    case arrow::Type::DECIMAL128:
      return Kind::kDecimal;
    case arrow::Type::STRING:
      return Kind::kString;
    case arrow::Type::DATE32:
      return Kind::kDate;
    case arrow::Type::TIMESTAMP:
      return Kind::kTimestamp;
    default:
      return Kind::kNone;
  }
}

// One value of min or max, by kind.
struct Value {
  bool set = false;
  int64_t i = 0;
  double d = 0;
  arrow::Decimal128 dec;
  std::string s;
};

bool Less(Kind kind, const Value& a, const Value& b) {
  switch (kind) {
    case Kind::kInt:
    case Kind::kDate:
    case Kind::kTimestamp:
      return a.i < b.i;
    case Kind::kDouble:
      return a.d < b.d;
    case Kind::kDecimal:
      return a.dec < b.dec;
    case Kind::kString:
      return a.s < b.s;
    case Kind::kNone:
      break;
  }
  return false;
}

arrow::Result<Value> FromScalar(Kind kind, const arrow::Scalar& scalar) {
  Value value;
  value.set = scalar.is_valid;
  if (!scalar.is_valid) return value;
  switch (kind) {
    case Kind::kInt: {
      ARROW_ASSIGN_OR_RAISE(auto cast, scalar.CastTo(arrow::int64()));
      value.i = static_cast<const arrow::Int64Scalar&>(*cast).value;
      break;
    }
    case Kind::kDouble: {
      ARROW_ASSIGN_OR_RAISE(auto cast, scalar.CastTo(arrow::float64()));
      value.d = static_cast<const arrow::DoubleScalar&>(*cast).value;
      break;
    }
    case Kind::kDecimal:
      value.dec = static_cast<const arrow::Decimal128Scalar&>(scalar).value;
      break;
    case Kind::kString:
      value.s = static_cast<const arrow::StringScalar&>(scalar).value->ToString();
      break;
    case Kind::kDate:
      value.i = static_cast<const arrow::Date32Scalar&>(scalar).value;
      break;
    case Kind::kTimestamp: {
      const auto& type = static_cast<const arrow::TimestampType&>(*scalar.type);
      value.i =
          ToMicros(static_cast<const arrow::TimestampScalar&>(scalar).value, type.unit());
      break;
    }
    case Kind::kNone:
      value.set = false;
      break;
  }
  return value;
}

// Decode well-formed UTF-8 into code points (callers pass a ValidUtf8PrefixLength
// prefix).
std::vector<uint32_t> CodePoints(std::string_view text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    int length = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 1;
    if (i + static_cast<size_t>(length) > text.size()) length = 1;
    uint32_t cp = length == 1 ? c : (c & (0xff >> (length + 1)));
    for (int k = 1; k < length; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
    out.push_back(cp);
    i += static_cast<size_t>(length);
  }
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

std::string Prefix(const std::vector<uint32_t>& cps, size_t length) {
  std::string out;
  for (size_t i = 0; i < length && i < cps.size(); ++i) AppendUtf8(cps[i], &out);
  return out;
}

struct Leaf {
  std::vector<std::string> path;
  std::vector<int> indices;  // struct child indices from the top-level column
  std::shared_ptr<arrow::DataType> type;
  Kind kind = Kind::kNone;
  bool indexed = false;
  int64_t null_count = 0;
  Value min;
  Value max;
  bool minmax_valid = true;
};

// A token standing for a raw JSON number in the dumped text; the random part keeps it
// from colliding with any string value.
std::string Placeholder(std::vector<std::pair<std::string, std::string>>* decimals,
                        std::string digits) {
  static const std::string kTag = "@ampdelta-decimal-" + NewUuid() + "-";
  std::string token = kTag + std::to_string(decimals->size()) + "@";
  decimals->emplace_back(token, std::move(digits));
  return token;
}

std::string JoinPath(const std::vector<std::string>& path) {
  std::string out;
  for (const auto& part : path) out += (out.empty() ? "" : ".") + part;
  return out;
}

bool AllUtf8(const std::vector<std::string>& path) {
  return std::all_of(path.begin(), path.end(),
                     [](const std::string& part) { return IsValidUtf8(part); });
}

// String bounds that JSON can carry (its strings are Unicode) and that stay bounds.
//
// The minimum is the longest well-formed prefix cut to `prefix` characters: a prefix
// sorts at or before the value. The maximum, when longer than `prefix` characters, is its
// first `prefix` characters plus one above the character after them; that needs those
// characters to be well-formed, so a maximum with bad bytes within them has no bound
// JSON can express and is left out (readers then do not skip the file on it).
std::string StringMinBound(const std::string& min, size_t prefix) {
  const std::string_view valid(min.data(), ValidUtf8PrefixLength(min));
  return Prefix(CodePoints(valid), prefix);
}

std::optional<std::string> StringMaxBound(const std::string& max, size_t prefix) {
  const size_t valid_length = ValidUtf8PrefixLength(max);
  const auto cps = CodePoints(std::string_view(max.data(), valid_length));
  if (valid_length == max.size() && cps.size() <= prefix) return max;
  if (cps.size() <= prefix) return std::nullopt;  // bad bytes within the kept prefix
  const uint32_t next = cps[prefix];
  if (next >= 0x10ffff) return std::nullopt;  // nothing sorts above it
  std::string bound = Prefix(cps, prefix);
  AppendUtf8(next < 0x7f ? 0x7f : 0x10ffff, &bound);
  return bound;
}

using ojson = nlohmann::ordered_json;

// Set `value` at `path` (struct fields nested as objects) under `root`.
void PlaceAt(ojson* root, const std::vector<std::string>& path, ojson value) {
  ojson* node = root;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (!node->contains(path[i])) (*node)[path[i]] = ojson::object();
    node = &(*node)[path[i]];
  }
  (*node)[path.back()] = std::move(value);
}

void CollectLeafPaths(const arrow::Field& field, std::vector<std::string> path,
                      std::vector<std::pair<std::vector<std::string>, Kind>>* leaves) {
  path.push_back(field.name());
  if (field.type()->id() == arrow::Type::STRUCT) {
    for (const auto& child : field.type()->fields())
      CollectLeafPaths(*child, path, leaves);
    return;
  }
  leaves->emplace_back(std::move(path), KindOf(*field.type()));
}

// A date or timestamp bound as a number that orders as the value does: days since the
// epoch for a date, microseconds of the instant for a timestamp (its zone offset applied:
// Spark writes bounds in its session's zone, `…+01:00`; a timestamp_ntz bound has none
// and orders as its wall time). nullopt for text that is not such a bound, or one of a
// signed year (`-0044-03-15`), which Arrow's ISO 8601 parser does not read.
std::optional<int64_t> TemporalOrder(Kind kind, const ojson& bound) {
  if (!bound.is_string()) return std::nullopt;
  const auto& text = bound.get_ref<const std::string&>();
  if (kind == Kind::kDate) {
    std::chrono::duration<int32_t, std::ratio<86400>> days{};
    if (text.size() != 10 || !arrow::internal::ParseYYYY_MM_DD(text.data(), &days)) {
      return std::nullopt;
    }
    return days.count();
  }
  int64_t micros = 0;
  if (!arrow::internal::ParseTimestampISO8601(text.data(), text.size(),
                                              arrow::TimeUnit::MICRO, &micros)) {
    return std::nullopt;
  }
  return micros;
}

// Whether two bounds of the parts' statistics order against each other: numbers as
// numbers, strings as bytes, dates and timestamps as the values they write.
bool Comparable(Kind kind, const ojson& a, const ojson& b) {
  switch (kind) {
    case Kind::kInt:
      return a.is_number_integer() && b.is_number_integer();
    case Kind::kDouble:
      return a.is_number() && b.is_number();
    case Kind::kString:
      return a.is_string() && b.is_string();
    case Kind::kDate:
    case Kind::kTimestamp:
      return TemporalOrder(kind, a).has_value() && TemporalOrder(kind, b).has_value();
    case Kind::kDecimal:  // exact digits the JSON library would round through a double
    case Kind::kNone:
      break;
  }
  return false;
}

// a < b for two Comparable bounds.
bool Less(Kind kind, const ojson& a, const ojson& b) {
  if (kind == Kind::kDate || kind == Kind::kTimestamp) {
    return *TemporalOrder(kind, a) < *TemporalOrder(kind, b);
  }
  return a < b;
}

// The least (or greatest) bound of a leaf over the parts; nullopt when a part without a
// bound has values (its bound was not collected) or the bounds do not compare.
std::optional<ojson> MergedBound(const std::vector<FileStats>& parts,
                                 StatsSection section,
                                 const std::vector<std::string>& path, Kind kind,
                                 bool least) {
  std::optional<ojson> best;
  for (const FileStats& part : parts) {
    const ojson* bound = part.Find(section, path);
    if (bound == nullptr || bound->is_null()) {
      const std::optional<int64_t> nulls = part.NullCount(path);
      if (!nulls || nulls != part.num_records()) return std::nullopt;
      continue;
    }
    if (!best) {
      if (!Comparable(kind, *bound, *bound)) return std::nullopt;
      best = *bound;
      continue;
    }
    if (!Comparable(kind, *best, *bound)) return std::nullopt;
    if (least ? Less(kind, *bound, *best) : Less(kind, *best, *bound)) best = *bound;
  }
  return best;
}

}  // namespace

std::string MergeStats(const std::vector<std::optional<std::string>>& parts,
                       const arrow::Schema& schema, int64_t num_records) {
  std::vector<FileStats> parsed;
  for (const auto& part : parts) {
    parsed.emplace_back(part);
    if (!parsed.back().known()) return ojson{{"numRecords", num_records}}.dump();
  }
  std::vector<std::pair<std::vector<std::string>, Kind>> leaves;
  for (const auto& field : schema.fields()) CollectLeafPaths(*field, {}, &leaves);
  ojson min_values = ojson::object();
  ojson max_values = ojson::object();
  ojson null_count = ojson::object();
  for (const auto& leaf : leaves) {
    const std::vector<std::string>& path = leaf.first;
    const Kind kind = leaf.second;
    int64_t nulls = 0;
    const bool counted =
        std::all_of(parsed.begin(), parsed.end(), [&](const FileStats& part) {
          const std::optional<int64_t> count = part.NullCount(path);
          // A sum past int64 (hostile statistics) is not counted.
          return count && !__builtin_add_overflow(nulls, *count, &nulls);
        });
    if (counted) PlaceAt(&null_count, path, nulls);
    auto low = MergedBound(parsed, StatsSection::kMinValues, path, kind, /*least=*/true);
    auto high =
        MergedBound(parsed, StatsSection::kMaxValues, path, kind, /*least=*/false);
    if (low && high) {
      PlaceAt(&min_values, path, std::move(*low));
      PlaceAt(&max_values, path, std::move(*high));
    }
  }
  ojson out = {{"numRecords", num_records},
               {"minValues", std::move(min_values)},
               {"maxValues", std::move(max_values)},
               {"nullCount", std::move(null_count)}};
  return json_util::DumpJsonLossy(out);
}

std::string FormatStatsTimestamp(int64_t micros, bool utc) {
  int64_t seconds = 0;
  int64_t fraction = 0;
  SplitEpoch(micros, 1'000'000, &seconds, &fraction);
  char millis[24];
  std::snprintf(millis, sizeof(millis), ".%03lld",
                static_cast<long long>(fraction / 1000));
  return FormatCivil(seconds, CivilFormat::kIsoDateTime) + millis + (utc ? "Z" : "");
}

struct StatsCollector::Impl {
  StatsOptions options;
  std::vector<Leaf> leaves;
  int64_t num_records = 0;

  void Collect(const arrow::Field& field, std::vector<std::string> path,
               std::vector<int> indices) {
    path.push_back(field.name());
    if (field.type()->id() == arrow::Type::STRUCT) {
      for (int i = 0; i < field.type()->num_fields(); ++i) {
        std::vector<int> child = indices;
        child.push_back(i);
        Collect(*field.type()->field(i), path, child);
      }
      return;
    }
    Leaf leaf;
    leaf.path = std::move(path);
    leaf.indices = std::move(indices);
    leaf.type = field.type();
    leaf.kind = KindOf(*field.type());
    leaves.push_back(std::move(leaf));
  }
};

StatsCollector::StatsCollector(const std::shared_ptr<arrow::Schema>& schema,
                               const StatsOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  for (int i = 0; i < schema->num_fields(); ++i)
    impl_->Collect(*schema->field(i), {}, {i});
  for (size_t i = 0; i < impl_->leaves.size(); ++i) {
    Leaf& leaf = impl_->leaves[i];
    if (options.stats_columns) {
      const std::string name = JoinPath(leaf.path);
      for (const auto& wanted : *options.stats_columns) {
        // A named struct covers its leaves; column names are case-insensitive.
        if (EqualsIgnoreAsciiCase(name, wanted) ||
            (name.size() > wanted.size() && name[wanted.size()] == '.' &&
             EqualsIgnoreAsciiCase(std::string_view(name).substr(0, wanted.size()),
                                   wanted))) {
          leaf.indexed = true;
        }
      }
    } else {
      leaf.indexed = options.num_indexed_cols < 0 ||
                     static_cast<int64_t>(i) < options.num_indexed_cols;
    }
    for (const auto& column : options.always_indexed) {
      if (leaf.path.size() == 1 && EqualsIgnoreAsciiCase(leaf.path[0], column)) {
        leaf.indexed = true;
      }
    }
  }
}

StatsCollector::~StatsCollector() = default;
StatsCollector::StatsCollector(StatsCollector&&) noexcept = default;
StatsCollector& StatsCollector::operator=(StatsCollector&&) noexcept = default;

int64_t StatsCollector::num_records() const { return impl_->num_records; }

arrow::Status StatsCollector::Update(const arrow::RecordBatch& batch) {
  impl_->num_records += batch.num_rows();
  for (Leaf& leaf : impl_->leaves) {
    if (!leaf.indexed) continue;
    std::shared_ptr<arrow::Array> array = batch.column(leaf.indices.front());
    for (size_t k = 1; k < leaf.indices.size(); ++k) {
      // The flattened field folds the parent's nulls into the child.
      ARROW_ASSIGN_OR_RAISE(
          array, static_cast<const arrow::StructArray&>(*array).GetFlattenedField(
                     leaf.indices[k]));
    }
    leaf.null_count += array->null_count();
    if (leaf.kind == Kind::kNone || !leaf.minmax_valid) continue;
    if (array->null_count() == array->length()) continue;
    if (leaf.kind == Kind::kDouble) {
      ARROW_ASSIGN_OR_RAISE(arrow::Datum nan, cp::CallFunction("is_nan", {array}));
      ARROW_ASSIGN_OR_RAISE(arrow::Datum any, cp::Any(nan));
      if (any.scalar()->is_valid &&
          static_cast<const arrow::BooleanScalar&>(*any.scalar()).value) {
        leaf.minmax_valid = false;  // NaN has no place in min/max (Spark skips them)
        continue;
      }
    }
    ARROW_ASSIGN_OR_RAISE(arrow::Datum min_max, cp::MinMax(array));
    const auto& pair = static_cast<const arrow::StructScalar&>(*min_max.scalar());
    ARROW_ASSIGN_OR_RAISE(Value low, FromScalar(leaf.kind, *pair.value[0]));
    ARROW_ASSIGN_OR_RAISE(Value high, FromScalar(leaf.kind, *pair.value[1]));
    if (low.set && (!leaf.min.set || Less(leaf.kind, low, leaf.min)))
      leaf.min = std::move(low);
    if (high.set && (!leaf.max.set || Less(leaf.kind, leaf.max, high)))
      leaf.max = std::move(high);
  }
  return arrow::Status::OK();
}

std::string StatsCollector::ToJson() const {
  std::vector<std::pair<std::string, std::string>> decimals;  // placeholder -> digits
  ojson min_values = ojson::object();
  ojson max_values = ojson::object();
  ojson null_count = ojson::object();
  const auto place = PlaceAt;
  const size_t prefix =
      static_cast<size_t>(std::max(1, impl_->options.string_prefix_length));
  for (const Leaf& leaf : impl_->leaves) {
    // A column name that is not UTF-8 cannot be a JSON key; the table schema never has
    // one.
    if (!leaf.indexed || !AllUtf8(leaf.path)) continue;
    place(&null_count, leaf.path, leaf.null_count);
    if (leaf.kind == Kind::kNone || !leaf.minmax_valid || !leaf.min.set || !leaf.max.set)
      continue;
    ojson low;
    ojson high;
    switch (leaf.kind) {
      case Kind::kInt:
        low = leaf.min.i;
        high = leaf.max.i;
        break;
      case Kind::kDouble:
        if (std::isinf(leaf.min.d) || std::isinf(leaf.max.d)) continue;
        low = leaf.min.d;
        high = leaf.max.d;
        break;
      case Kind::kDecimal: {
        // Decimals are exact JSON numbers of up to 38 digits, which the JSON library
        // would round through a double: emit a placeholder and splice the digits in
        // afterwards.
        const int32_t scale =
            static_cast<const arrow::Decimal128Type&>(*leaf.type).scale();
        low = Placeholder(&decimals, leaf.min.dec.ToString(scale));
        high = Placeholder(&decimals, leaf.max.dec.ToString(scale));
        break;
      }
      case Kind::kDate:
        low = FormatCivil(leaf.min.i * 86400, CivilFormat::kDate);
        high = FormatCivil(leaf.max.i * 86400, CivilFormat::kDate);
        break;
      case Kind::kTimestamp: {
        const bool utc =
            !static_cast<const arrow::TimestampType&>(*leaf.type).timezone().empty();
        low = FormatStatsTimestamp(leaf.min.i, utc);
        high = FormatStatsTimestamp(leaf.max.i, utc);
        break;
      }
      case Kind::kString: {
        place(&min_values, leaf.path, StringMinBound(leaf.min.s, prefix));
        if (auto bound = StringMaxBound(leaf.max.s, prefix)) {
          place(&max_values, leaf.path, std::move(*bound));
        }
        continue;
      }
      case Kind::kNone:
        continue;
    }
    place(&min_values, leaf.path, std::move(low));
    place(&max_values, leaf.path, std::move(high));
  }
  ojson out = {{"numRecords", impl_->num_records},
               {"minValues", std::move(min_values)},
               {"maxValues", std::move(max_values)},
               {"nullCount", std::move(null_count)}};
  // Every key and string is UTF-8 by now; the lossy dump only guarantees no exception on
  // the writer threads that call this.
  std::string text = json_util::DumpJsonLossy(out);
  for (const auto& [placeholder, digits] : decimals) {
    const std::string quoted = "\"" + placeholder + "\"";
    const size_t at = text.find(quoted);
    if (at != std::string::npos) text.replace(at, quoted.size(), digits);
  }
  return text;
}

}  // namespace ampdelta::delta

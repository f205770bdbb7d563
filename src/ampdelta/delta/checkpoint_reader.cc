#include "ampdelta/delta/checkpoint_reader.h"

#include <ctime>
#include <functional>

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/scalar.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>

#include "ampdelta/delta/action_json.h"
#include "ampdelta/delta/action_json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;

std::string FormatTimestamp(int64_t value, const arrow::TimestampType& type) {
  int64_t per_second = 1;
  int64_t per_milli = 1;
  switch (type.unit()) {
    case arrow::TimeUnit::SECOND:
      per_second = 1;
      break;
    case arrow::TimeUnit::MILLI:
      per_second = 1'000;
      break;
    case arrow::TimeUnit::MICRO:
      per_second = 1'000'000;
      per_milli = 1'000;
      break;
    case arrow::TimeUnit::NANO:
      per_second = 1'000'000'000;
      per_milli = 1'000'000;
      break;
  }
  if (per_second == 1) per_milli = 1;
  int64_t seconds = value / per_second;
  int64_t remainder = value % per_second;
  if (remainder < 0) {
    remainder += per_second;
    seconds -= 1;
  }
  const int64_t millis = per_second >= 1000 ? remainder / per_milli : 0;
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[48];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof(out), "%s.%03lld%s", text, static_cast<long long>(millis),
                type.timezone().empty() ? "" : "Z");
  return out;
}

// Convert one value of an Arrow array to JSON, so that checkpoint rows can go through the
// same action parser as commit lines.
json ValueToJson(const arrow::Array& array, int64_t i) {
  if (array.IsNull(i)) return nullptr;
  switch (array.type_id()) {
    case arrow::Type::BOOL:
      return static_cast<const arrow::BooleanArray&>(array).Value(i);
    case arrow::Type::INT8:
      return static_cast<const arrow::Int8Array&>(array).Value(i);
    case arrow::Type::INT16:
      return static_cast<const arrow::Int16Array&>(array).Value(i);
    case arrow::Type::INT32:
      return static_cast<const arrow::Int32Array&>(array).Value(i);
    case arrow::Type::INT64:
      return static_cast<const arrow::Int64Array&>(array).Value(i);
    case arrow::Type::UINT32:
      return static_cast<const arrow::UInt32Array&>(array).Value(i);
    case arrow::Type::UINT64:
      return static_cast<const arrow::UInt64Array&>(array).Value(i);
    case arrow::Type::FLOAT:
      return static_cast<const arrow::FloatArray&>(array).Value(i);
    case arrow::Type::DOUBLE:
      return static_cast<const arrow::DoubleArray&>(array).Value(i);
    case arrow::Type::STRING:
      return std::string(static_cast<const arrow::StringArray&>(array).GetView(i));
    case arrow::Type::LARGE_STRING:
      return std::string(static_cast<const arrow::LargeStringArray&>(array).GetView(i));
    case arrow::Type::BINARY:
      return std::string(static_cast<const arrow::BinaryArray&>(array).GetView(i));
    case arrow::Type::DATE32: {
      const std::time_t t =
          static_cast<std::time_t>(static_cast<const arrow::Date32Array&>(array).Value(i)) * 86400;
      std::tm tm{};
      gmtime_r(&t, &tm);
      char text[16];
      std::strftime(text, sizeof(text), "%Y-%m-%d", &tm);
      return std::string(text);
    }
    case arrow::Type::TIMESTAMP:
      return FormatTimestamp(static_cast<const arrow::TimestampArray&>(array).Value(i),
                             static_cast<const arrow::TimestampType&>(*array.type()));
    case arrow::Type::DECIMAL128: {
      const auto& dec = static_cast<const arrow::Decimal128Array&>(array);
      json number = json::parse(dec.FormatValue(i), nullptr, false);
      return number.is_discarded() ? json(dec.FormatValue(i)) : number;
    }
    case arrow::Type::STRUCT: {
      const auto& st = static_cast<const arrow::StructArray&>(array);
      json out = json::object();
      for (int f = 0; f < st.num_fields(); ++f) {
        out[st.struct_type()->field(f)->name()] = ValueToJson(*st.field(f), i);
      }
      return out;
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapArray&>(array);
      json out = json::object();
      const int64_t begin = map.value_offset(i);
      const int64_t end = map.value_offset(i + 1);
      for (int64_t k = begin; k < end; ++k) {
        json key = ValueToJson(*map.keys(), k);
        out[key.is_string() ? key.get<std::string>() : key.dump()] =
            ValueToJson(*map.items(), k);
      }
      return out;
    }
    case arrow::Type::LIST: {
      const auto& list = static_cast<const arrow::ListArray&>(array);
      json out = json::array();
      for (int64_t k = list.value_offset(i); k < list.value_offset(i + 1); ++k) {
        out.push_back(ValueToJson(*list.values(), k));
      }
      return out;
    }
    default: {
      auto scalar = array.GetScalar(i);
      return scalar.ok() ? json((*scalar)->ToString()) : json(nullptr);
    }
  }
}

constexpr const char* kActionColumns[] = {"protocol", "metaData", "txn", "add", "remove",
                                          "domainMetadata", "checkpointMetadata", "sidecar"};

}  // namespace

arrow::Result<std::vector<Action>> ReadParquetActions(storage::ObjectStore& store,
                                                      const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto input, store.OpenInputFile(path));
  auto opened = parquet::arrow::OpenFile(input, arrow::default_memory_pool());
  if (!opened.ok()) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "checkpoint ", path,
                     " is not readable Parquet: ", opened.status().message());
  }
  std::unique_ptr<parquet::arrow::FileReader> reader = std::move(*opened);
  std::shared_ptr<arrow::Schema> schema;
  ARROW_RETURN_NOT_OK(reader->GetSchema(&schema));
  // Select only the action columns (by top-level field), skipping e.g. stats_parsed-only
  // tables' extra columns.
  // ReadTable takes leaf column indices: collect the leaves of each action's field.
  std::vector<int> leaves;
  std::vector<std::string> names;
  std::function<void(const parquet::arrow::SchemaField&)> collect =
      [&](const parquet::arrow::SchemaField& field) {
        if (field.is_leaf()) leaves.push_back(field.column_index);
        for (const auto& child : field.children) collect(child);
      };
  for (const char* name : kActionColumns) {
    const int index = schema->GetFieldIndex(name);
    if (index >= 0) {
      collect(reader->manifest().schema_fields[static_cast<size_t>(index)]);
      names.push_back(name);
    }
  }
  auto read = reader->ReadTable(leaves);
  if (!read.ok()) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "checkpoint ", path,
                     " cannot be read: ", read.status().message());
  }
  std::shared_ptr<arrow::Table> table = std::move(*read);
  std::vector<Action> actions;
  for (int c = 0; c < table->num_columns(); ++c) {
    const std::string& name = table->schema()->field(c)->name();
    for (const auto& chunk : table->column(c)->chunks()) {
      for (int64_t row = 0; row < chunk->length(); ++row) {
        if (chunk->IsNull(row)) continue;
        json body = ValueToJson(*chunk, row);
        if (name == "add" && body.is_object()) {
          if ((!body.contains("stats") || body["stats"].is_null()) && body.contains("stats_parsed") &&
              body["stats_parsed"].is_object()) {
            body["stats"] = body["stats_parsed"].dump();
          }
          body.erase("stats_parsed");
          body.erase("partitionValues_parsed");
        }
        // A checkpoint row can be all-null inside a non-null struct (writers differ).
        if (name == "add" || name == "remove") {
          if (!body.contains("path") || body["path"].is_null()) continue;
        }
        if (name == "txn" && (!body.contains("appId") || body["appId"].is_null())) continue;
        if (name == "protocol" && (!body.contains("minReaderVersion") ||
                                   body["minReaderVersion"].is_null())) {
          continue;
        }
        if (name == "metaData" && (!body.contains("id") || body["id"].is_null())) continue;
        auto action = internal::ActionFromJson(name, body, path);
        if (!action.ok()) return action.status();
        actions.push_back(std::move(*action));
      }
    }
  }
  return actions;
}

arrow::Result<std::vector<Action>> ReadCheckpoint(storage::ObjectStore& store,
                                                  const CheckpointFiles& checkpoint) {
  std::vector<Action> actions;
  for (const auto& file : checkpoint.files) {
    std::vector<Action> part;
    if (file.type == LogFileType::kUuidCheckpointJson) {
      ARROW_ASSIGN_OR_RAISE(auto data, store.Get(file.path));
      ARROW_ASSIGN_OR_RAISE(part, ParseCommit(data->ToString(), file.path));
    } else {
      ARROW_ASSIGN_OR_RAISE(part, ReadParquetActions(store, file.path));
    }
    for (auto& action : part) {
      if (const auto* sidecar = std::get_if<Sidecar>(&action)) {
        // Sidecar paths are relative to _delta_log/_sidecars/ unless absolute.
        const std::string path = sidecar->path.find(':') != std::string::npos ||
                                         sidecar->path.front() == '/'
                                     ? sidecar->path
                                     : std::string(kLogDir) + "/_sidecars/" + sidecar->path;
        ARROW_ASSIGN_OR_RAISE(auto files, ReadParquetActions(store, path));
        for (auto& file_action : files) actions.push_back(std::move(file_action));
        continue;
      }
      actions.push_back(std::move(action));
    }
  }
  return actions;
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/log/checkpoint_reader.h"

#include <ctime>
#include <functional>
#include <numeric>

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/memory_pool.h>
#include <arrow/scalar.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/action_json_internal.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/time_format.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;

// Stats-style text of a timestamp: ISO-8601 with milliseconds, `Z` when tz-aware.
std::string FormatTimestamp(int64_t value, const arrow::TimestampType& type) {
  int64_t seconds = 0;
  int64_t fraction = 0;
  const int64_t per_second = UnitsPerSecond(type.unit());
  SplitEpoch(value, per_second, &seconds, &fraction);
  char millis[24];
  std::snprintf(millis, sizeof(millis), ".%03lld",
                static_cast<long long>(fraction * 1000 / per_second));
  return FormatCivil(seconds, CivilFormat::kIsoDateTime) + millis +
         (type.timezone().empty() ? "" : "Z");
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
    case arrow::Type::DATE32:
      return FormatCivil(
          int64_t{static_cast<const arrow::Date32Array&>(array).Value(i)} * 86400,
          CivilFormat::kDate);
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
        out[key.is_string() ? key.get<std::string>() : json_util::DumpJsonLossy(key)] =
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

// Direct decoding of the file actions, which make up almost every checkpoint row: the
// generic JSON route below costs several times more on large tables. Returns false when a
// column has an unexpected type, and the caller falls back to the generic route.
class FileActionDecoder {
 public:
  bool Bind(const arrow::StructArray& array, bool is_add) {
    const auto& type = *array.struct_type();
    auto child = [&](const char* name) -> const arrow::Array* {
      const int index = type.GetFieldIndex(name);
      return index < 0 ? nullptr : array.field(index).get();
    };
    path_ = As<arrow::StringArray>(child("path"), arrow::Type::STRING);
    if (path_ == nullptr) return false;
    size_ = child("size");
    if (size_ != nullptr && size_->type_id() != arrow::Type::INT64) return false;
    time_ = child(is_add ? "modificationTime" : "deletionTimestamp");
    if (time_ != nullptr && time_->type_id() != arrow::Type::INT64) return false;
    data_change_ = child("dataChange");
    if (data_change_ != nullptr && data_change_->type_id() != arrow::Type::BOOL)
      return false;
    stats_ = child("stats");
    if (stats_ != nullptr && stats_->type_id() != arrow::Type::STRING) return false;
    partition_values_ = child("partitionValues");
    if (partition_values_ != nullptr && !IsStringMap(*partition_values_)) return false;
    tags_ = child("tags");
    if (tags_ != nullptr && !IsStringMap(*tags_)) return false;
    extended_ = child("extendedFileMetadata");
    if (extended_ != nullptr && extended_->type_id() != arrow::Type::BOOL) return false;
    base_row_id_ = child("baseRowId");
    if (base_row_id_ != nullptr && base_row_id_->type_id() != arrow::Type::INT64)
      return false;
    row_commit_version_ = child("defaultRowCommitVersion");
    if (row_commit_version_ != nullptr &&
        row_commit_version_->type_id() != arrow::Type::INT64) {
      return false;
    }
    dv_ = child("deletionVector");
    clustering_ = child("clusteringProvider");
    if (clustering_ != nullptr && clustering_->type_id() != arrow::Type::STRING)
      return false;
    return true;
  }

  // Decode row `i`; false when the row is not a real action (null path).
  arrow::Result<bool> DecodeAdd(int64_t i, Add* add, const std::string& source) const {
    if (path_->IsNull(i)) return false;
    add->path = std::string(path_->GetView(i));
    if (partition_values_) add->partition_values = Map(*partition_values_, i);
    add->size = Int(size_, i).value_or(0);
    add->modification_time = Int(time_, i).value_or(0);
    add->data_change = Bool(data_change_, i).value_or(true);
    add->stats = String(stats_, i);
    if (tags_ && tags_->IsValid(i)) add->tags = Map(*tags_, i);
    ARROW_ASSIGN_OR_RAISE(add->deletion_vector, Dv(i, source));
    add->base_row_id = Int(base_row_id_, i);
    add->default_row_commit_version = Int(row_commit_version_, i);
    add->clustering_provider = String(clustering_, i);
    return true;
  }

  arrow::Result<bool> DecodeRemove(int64_t i, Remove* remove,
                                   const std::string& source) const {
    if (path_->IsNull(i)) return false;
    remove->path = std::string(path_->GetView(i));
    remove->deletion_timestamp = Int(time_, i);
    remove->data_change = Bool(data_change_, i).value_or(true);
    remove->extended_file_metadata = Bool(extended_, i);
    if (partition_values_ && partition_values_->IsValid(i)) {
      remove->partition_values = Map(*partition_values_, i);
    }
    remove->size = Int(size_, i);
    remove->stats = String(stats_, i);
    if (tags_ && tags_->IsValid(i)) remove->tags = Map(*tags_, i);
    ARROW_ASSIGN_OR_RAISE(remove->deletion_vector, Dv(i, source));
    remove->base_row_id = Int(base_row_id_, i);
    remove->default_row_commit_version = Int(row_commit_version_, i);
    return true;
  }

 private:
  template <typename T>
  static const T* As(const arrow::Array* array, arrow::Type::type id) {
    return array != nullptr && array->type_id() == id ? static_cast<const T*>(array)
                                                      : nullptr;
  }
  static bool IsStringMap(const arrow::Array& array) {
    if (array.type_id() != arrow::Type::MAP) return false;
    const auto& map = static_cast<const arrow::MapType&>(*array.type());
    return map.key_type()->id() == arrow::Type::STRING &&
           map.item_type()->id() == arrow::Type::STRING;
  }
  static std::optional<int64_t> Int(const arrow::Array* array, int64_t i) {
    if (array == nullptr || array->IsNull(i)) return std::nullopt;
    return static_cast<const arrow::Int64Array*>(array)->Value(i);
  }
  static std::optional<bool> Bool(const arrow::Array* array, int64_t i) {
    if (array == nullptr || array->IsNull(i)) return std::nullopt;
    return static_cast<const arrow::BooleanArray*>(array)->Value(i);
  }
  static std::optional<std::string> String(const arrow::Array* array, int64_t i) {
    if (array == nullptr || array->IsNull(i)) return std::nullopt;
    return std::string(static_cast<const arrow::StringArray*>(array)->GetView(i));
  }
  static NullableStringMap Map(const arrow::Array& array, int64_t i) {
    NullableStringMap out;
    if (array.IsNull(i)) return out;
    const auto& map = static_cast<const arrow::MapArray&>(array);
    const auto& keys = static_cast<const arrow::StringArray&>(*map.keys());
    const auto& items = static_cast<const arrow::StringArray&>(*map.items());
    for (int64_t k = map.value_offset(i); k < map.value_offset(i + 1); ++k) {
      out[std::string(keys.GetView(k))] =
          items.IsNull(k) ? std::nullopt
                          : std::optional<std::string>(std::string(items.GetView(k)));
    }
    return out;
  }
  arrow::Result<std::optional<DeletionVectorDescriptor>> Dv(
      int64_t i, const std::string& source) const {
    if (dv_ == nullptr || dv_->IsNull(i)) return std::nullopt;
    json body = ValueToJson(*dv_, i);
    if (!body.contains("storageType") || body["storageType"].is_null())
      return std::nullopt;
    json line = {{"add", {{"path", "x"}, {"size", 0}, {"deletionVector", body}}}};
    ARROW_ASSIGN_OR_RAISE(auto action,
                          internal::ActionFromJson("add", line["add"], source));
    return std::get<Add>(action).deletion_vector;
  }

  const arrow::StringArray* path_ = nullptr;
  const arrow::Array* size_ = nullptr;
  const arrow::Array* time_ = nullptr;
  const arrow::Array* data_change_ = nullptr;
  const arrow::Array* stats_ = nullptr;
  const arrow::Array* partition_values_ = nullptr;
  const arrow::Array* tags_ = nullptr;
  const arrow::Array* extended_ = nullptr;
  const arrow::Array* base_row_id_ = nullptr;
  const arrow::Array* row_commit_version_ = nullptr;
  const arrow::Array* dv_ = nullptr;
  const arrow::Array* clustering_ = nullptr;
};

// The actions of one top-level column of a checkpoint batch (add, remove, txn, ...).
class ColumnActions {
 public:
  ColumnActions(std::string name, std::shared_ptr<arrow::Array> chunk)
      : name_(std::move(name)), chunk_(std::move(chunk)) {
    const bool file_action = name_ == "add" || name_ == "remove";
    fast_ =
        file_action && chunk_->type_id() == arrow::Type::STRUCT &&
        decoder_.Bind(static_cast<const arrow::StructArray&>(*chunk_), name_ == "add");
    // stats_parsed only (no JSON stats column) needs the generic route.
    has_stats_parsed_ = chunk_->type_id() == arrow::Type::STRUCT &&
                        static_cast<const arrow::StructType&>(*chunk_->type())
                                .GetFieldIndex("stats_parsed") >= 0;
  }

  arrow::Status Emit(int64_t row, const std::string& path, const ActionSink& sink) {
    if (chunk_->IsNull(row)) return arrow::Status::OK();
    const std::string& name = name_;
    if (fast_ && name == "add") {
      Add add;
      ARROW_ASSIGN_OR_RAISE(bool present, decoder_.DecodeAdd(row, &add, path));
      if (!present) return arrow::Status::OK();
      // Without JSON stats, stats_parsed takes the generic route.
      if (add.stats || !has_stats_parsed_) return sink(Action(std::move(add)));
    } else if (fast_ && name == "remove") {
      Remove remove;
      ARROW_ASSIGN_OR_RAISE(bool present, decoder_.DecodeRemove(row, &remove, path));
      if (present) return sink(Action(std::move(remove)));
      return arrow::Status::OK();
    }
    json body = ValueToJson(*chunk_, row);
    if (name == "add" && body.is_object()) {
      // Parquet strings need not be UTF-8, and JSON stats cannot hold such a bound:
      // the file then has no stats, which only costs data skipping.
      const bool no_stats = !body.contains("stats") || body["stats"].is_null();
      if (no_stats && body.contains("stats_parsed") && body["stats_parsed"].is_object() &&
          json_util::AllStringsUtf8(body["stats_parsed"])) {
        body["stats"] = json_util::DumpJsonLossy(body["stats_parsed"]);
      }
      body.erase("stats_parsed");
      body.erase("partitionValues_parsed");
    }
    // A checkpoint row can be all-null inside a non-null struct (writers differ).
    if (name == "add" || name == "remove") {
      if (!body.contains("path") || body["path"].is_null()) return arrow::Status::OK();
    }
    if (name == "txn" && (!body.contains("appId") || body["appId"].is_null()))
      return arrow::Status::OK();
    if (name == "protocol" &&
        (!body.contains("minReaderVersion") || body["minReaderVersion"].is_null())) {
      return arrow::Status::OK();
    }
    if (name == "metaData" && (!body.contains("id") || body["id"].is_null()))
      return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(Action action, internal::ActionFromJson(name, body, path));
    return sink(std::move(action));
  }

 private:
  std::string name_;
  std::shared_ptr<arrow::Array> chunk_;
  FileActionDecoder decoder_;
  bool fast_ = false;
  bool has_stats_parsed_ = false;
};

constexpr const char* kActionColumns[] = {
    "protocol",       "metaData",           "txn",    "add", "remove",
    "domainMetadata", "checkpointMetadata", "sidecar"};

}  // namespace

arrow::Status VisitParquetActions(storage::ObjectStore& store, const std::string& path,
                                  const ActionSink& sink) {
  ARROW_ASSIGN_OR_RAISE(auto input, store.OpenInputFile(path));
  // The batches' buffers come from the C allocator, which reuses the last batch's
  // memory: the wheel's default (jemalloc) hands pages back, and zeroing fresh ones
  // took a fifth of opening a million-file checkpoint (1.35 s against 0.95 s).
  auto opened = parquet::arrow::OpenFile(input, arrow::system_memory_pool());
  if (!opened.ok()) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "checkpoint ",
                     path, " is not readable Parquet: ", opened.status().message());
  }
  std::unique_ptr<parquet::arrow::FileReader> reader = std::move(*opened);
  std::shared_ptr<arrow::Schema> schema;
  ARROW_RETURN_NOT_OK(reader->GetSchema(&schema));
  // Read only the action columns. The reader takes leaf column indices: collect the
  // leaves of each action's top-level field.
  std::vector<int> leaves;
  std::function<void(const parquet::arrow::SchemaField&)> collect =
      [&](const parquet::arrow::SchemaField& field) {
        if (field.is_leaf()) leaves.push_back(field.column_index);
        for (const auto& child : field.children) collect(child);
      };
  for (const char* name : kActionColumns) {
    const int index = schema->GetFieldIndex(name);
    if (index >= 0) {
      collect(reader->manifest().schema_fields[static_cast<size_t>(index)]);
    }
  }
  const auto unreadable = [&path](const arrow::Status& status) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "checkpoint ",
                     path, " cannot be read: ", status.message());
  };
  // Batch by batch, not the whole table: decoding a million-file checkpoint at once held
  // every string twice (Arrow's and the actions'), and the fresh pages cost more than
  // the decoding.
  std::vector<int> row_groups(static_cast<size_t>(reader->num_row_groups()));
  std::iota(row_groups.begin(), row_groups.end(), 0);
  auto batches = reader->GetRecordBatchReader(row_groups, leaves);
  if (!batches.ok()) return unreadable(batches.status());
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    if (auto next = (*batches)->ReadNext(&batch); !next.ok()) return unreadable(next);
    if (batch == nullptr) break;
    // Row by row across the action columns: a row holds one action, and the file's row
    // order, not its batch boundaries, decides which of two actions on a path comes last.
    std::vector<ColumnActions> columns;
    columns.reserve(static_cast<size_t>(batch->num_columns()));
    for (int c = 0; c < batch->num_columns(); ++c) {
      columns.emplace_back(batch->schema()->field(c)->name(), batch->column(c));
    }
    for (int64_t row = 0; row < batch->num_rows(); ++row) {
      for (auto& column : columns) {
        ARROW_RETURN_NOT_OK(column.Emit(row, path, sink));
      }
    }
  }
  return arrow::Status::OK();
}

arrow::Result<std::vector<Action>> ReadParquetActions(storage::ObjectStore& store,
                                                      const std::string& path) {
  std::vector<Action> actions;
  ARROW_RETURN_NOT_OK(VisitParquetActions(store, path, [&](Action&& action) {
    actions.push_back(std::move(action));
    return arrow::Status::OK();
  }));
  return actions;
}

arrow::Status VisitCheckpoint(storage::ObjectStore& store,
                              const CheckpointFiles& checkpoint, const ActionSink& sink) {
  for (const auto& file : checkpoint.files) {
    // A sidecar's file actions go to the sink in its place.
    auto follow = [&](Action&& action) -> arrow::Status {
      const auto* sidecar = std::get_if<Sidecar>(&action);
      if (sidecar == nullptr) return sink(std::move(action));
      if (sidecar->path.empty()) {
        return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError,
                         "checkpoint ", file.path, " names a sidecar with an empty path");
      }
      return VisitParquetActions(store, SidecarPath(sidecar->path), sink);
    };
    if (file.type == LogFileType::kUuidCheckpointJson) {
      ARROW_ASSIGN_OR_RAISE(auto data, store.Get(file.path));
      ARROW_ASSIGN_OR_RAISE(auto part, ParseCommit(data->ToString(), file.path));
      for (auto& action : part) ARROW_RETURN_NOT_OK(follow(std::move(action)));
    } else {
      ARROW_RETURN_NOT_OK(VisitParquetActions(store, file.path, follow));
    }
  }
  return arrow::Status::OK();
}

arrow::Result<std::vector<Action>> ReadCheckpoint(storage::ObjectStore& store,
                                                  const CheckpointFiles& checkpoint) {
  std::vector<Action> actions;
  ARROW_RETURN_NOT_OK(VisitCheckpoint(store, checkpoint, [&](Action&& action) {
    actions.push_back(std::move(action));
    return arrow::Status::OK();
  }));
  return actions;
}

}  // namespace ampdelta::delta

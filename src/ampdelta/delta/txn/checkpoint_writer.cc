#include "ampdelta/delta/txn/checkpoint_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/io/memory.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/table_builder.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/log_segment.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/metrics.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/utf8.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;

std::shared_ptr<arrow::DataType> StringMap() {
  return arrow::map(arrow::utf8(), arrow::field("value", arrow::utf8(), true));
}

std::shared_ptr<arrow::DataType> DeletionVectorType() {
  return arrow::struct_({arrow::field("storageType", arrow::utf8()),
                         arrow::field("pathOrInlineDv", arrow::utf8()),
                         arrow::field("offset", arrow::int32()),
                         arrow::field("sizeInBytes", arrow::int32()),
                         arrow::field("cardinality", arrow::int64()),
                         arrow::field("maxRowIndex", arrow::int64())});
}

// Append a JSON value to a builder of the matching Arrow type (null when absent).
arrow::Status AppendJson(arrow::ArrayBuilder* builder, const json* value) {
  if (value == nullptr || value->is_null()) return builder->AppendNull();
  const std::shared_ptr<arrow::DataType> type_holder = builder->type();
  const arrow::DataType& type = *type_holder;
  switch (type.id()) {
    case arrow::Type::STRING:
      return static_cast<arrow::StringBuilder*>(builder)->Append(
          value->is_string() ? value->get<std::string>()
                             : json_util::DumpJsonLossy(*value));
    case arrow::Type::INT32:
    case arrow::Type::INT64: {
      // The values come from ActionToJson, which types them; a mismatch is a defect, and
      // get<>() would throw on it.
      const auto number = json_util::AsInt64(*value);
      if (!number) return arrow::Status::Invalid("checkpoint value is not an integer");
      if (type.id() == arrow::Type::INT64) {
        return static_cast<arrow::Int64Builder*>(builder)->Append(*number);
      }
      return static_cast<arrow::Int32Builder*>(builder)->Append(
          static_cast<int32_t>(*number));
    }
    case arrow::Type::BOOL:
      if (!value->is_boolean()) {
        return arrow::Status::Invalid("checkpoint value is not a boolean");
      }
      return static_cast<arrow::BooleanBuilder*>(builder)->Append(value->get<bool>());
    case arrow::Type::LIST: {
      auto* list = static_cast<arrow::ListBuilder*>(builder);
      ARROW_RETURN_NOT_OK(list->Append());
      for (const auto& item : *value)
        ARROW_RETURN_NOT_OK(AppendJson(list->value_builder(), &item));
      return arrow::Status::OK();
    }
    case arrow::Type::MAP: {
      auto* map = static_cast<arrow::MapBuilder*>(builder);
      if (!value->is_object())
        return arrow::Status::Invalid("checkpoint map is not an object");
      ARROW_RETURN_NOT_OK(map->Append());
      for (auto it = value->begin(); it != value->end(); ++it) {
        ARROW_RETURN_NOT_OK(
            static_cast<arrow::StringBuilder*>(map->key_builder())->Append(it.key()));
        ARROW_RETURN_NOT_OK(AppendJson(map->item_builder(), &*it));
      }
      return arrow::Status::OK();
    }
    case arrow::Type::STRUCT: {
      auto* st = static_cast<arrow::StructBuilder*>(builder);
      ARROW_RETURN_NOT_OK(st->Append());
      for (int i = 0; i < st->num_fields(); ++i) {
        const std::string& name = type.field(i)->name();
        auto it = value->find(name);
        ARROW_RETURN_NOT_OK(
            AppendJson(st->field_builder(i), it == value->end() ? nullptr : &*it));
      }
      return arrow::Status::OK();
    }
    default:
      return arrow::Status::NotImplemented("checkpoint column type ", type.ToString());
  }
}

arrow::Status AppendStringMap(arrow::ArrayBuilder* builder,
                              const NullableStringMap& map) {
  auto* out = static_cast<arrow::MapBuilder*>(builder);
  ARROW_RETURN_NOT_OK(out->Append());
  auto* keys = static_cast<arrow::StringBuilder*>(out->key_builder());
  auto* items = static_cast<arrow::StringBuilder*>(out->item_builder());
  for (const auto& [key, value] : map) {
    ARROW_RETURN_NOT_OK(keys->Append(key));
    ARROW_RETURN_NOT_OK(value ? items->Append(*value) : items->AppendNull());
  }
  return arrow::Status::OK();
}

// `Optional` is std::optional or HeapOptional.
template <typename Builder, typename Optional>
arrow::Status AppendOptional(arrow::ArrayBuilder* builder, const Optional& value) {
  auto* out = static_cast<Builder*>(builder);
  return value ? out->Append(*value) : out->AppendNull();
}

// Append an `add` row straight from the action: the checkpoint of a table with a million
// files is almost all adds, and going through their JSON text cost most of its time. Adds
// with a deletion vector, or with a string that is not UTF-8, take the JSON path
// (`AppendActionJson`).
arrow::Status AppendAdd(arrow::StructBuilder* add, const Add& file) {
  ARROW_RETURN_NOT_OK(add->Append());
  ARROW_RETURN_NOT_OK(
      static_cast<arrow::StringBuilder*>(add->field_builder(0))->Append(file.path));
  ARROW_RETURN_NOT_OK(AppendStringMap(add->field_builder(1), file.partition_values));
  ARROW_RETURN_NOT_OK(
      static_cast<arrow::Int64Builder*>(add->field_builder(2))->Append(file.size));
  ARROW_RETURN_NOT_OK(static_cast<arrow::Int64Builder*>(add->field_builder(3))
                          ->Append(file.modification_time));
  ARROW_RETURN_NOT_OK(static_cast<arrow::BooleanBuilder*>(add->field_builder(4))
                          ->Append(file.data_change));
  ARROW_RETURN_NOT_OK(
      AppendOptional<arrow::StringBuilder>(add->field_builder(5), file.stats));
  if (file.tags) {
    ARROW_RETURN_NOT_OK(AppendStringMap(add->field_builder(6), *file.tags));
  } else {
    ARROW_RETURN_NOT_OK(add->field_builder(6)->AppendNull());
  }
  ARROW_RETURN_NOT_OK(add->field_builder(7)->AppendNull());  // deletionVector
  ARROW_RETURN_NOT_OK(
      AppendOptional<arrow::Int64Builder>(add->field_builder(8), file.base_row_id));
  ARROW_RETURN_NOT_OK(AppendOptional<arrow::Int64Builder>(
      add->field_builder(9), file.default_row_commit_version));
  return AppendOptional<arrow::StringBuilder>(add->field_builder(10),
                                              file.clustering_provider);
}

// True when every string of the add is UTF-8, as a checkpoint's string columns must be. A
// foreign checkpoint can hand us one that is not; the JSON path refuses it with an error.
bool AddIsUtf8(const Add& file) {
  const auto map_ok = [](const NullableStringMap& map) {
    for (const auto& [key, value] : map) {
      if (!IsValidUtf8(key) || (value && !IsValidUtf8(*value))) return false;
    }
    return true;
  };
  return IsValidUtf8(file.path) && map_ok(file.partition_values) &&
         (!file.stats || IsValidUtf8(*file.stats)) &&
         (!file.tags || map_ok(*file.tags)) &&
         (!file.clustering_provider || IsValidUtf8(*file.clustering_provider));
}

// Append one action through its JSON form.
arrow::Status AppendActionJson(arrow::RecordBatchBuilder* builder, const Action& action) {
  ARROW_ASSIGN_OR_RAISE(const std::string text, ActionToJson(action));
  const json line = json_util::ParseJson(text);
  if (!line.is_object() || line.size() != 1) {
    return arrow::Status::Invalid("checkpoint: encoded action is not one JSON object");
  }
  const std::string name = line.begin().key();
  const auto& schema = builder->schema();
  for (int c = 0; c < schema->num_fields(); ++c) {
    const json* body = schema->field(c)->name() == name ? &line.begin().value() : nullptr;
    ARROW_RETURN_NOT_OK(AppendJson(builder->GetField(c), body));
  }
  return arrow::Status::OK();
}

}  // namespace

std::shared_ptr<arrow::Schema> CheckpointSchema() {
  static const auto schema = arrow::schema({
      arrow::field("txn", arrow::struct_({arrow::field("appId", arrow::utf8()),
                                          arrow::field("version", arrow::int64()),
                                          arrow::field("lastUpdated", arrow::int64())})),
      arrow::field(
          "add", arrow::struct_({arrow::field("path", arrow::utf8()),
                                 arrow::field("partitionValues", StringMap()),
                                 arrow::field("size", arrow::int64()),
                                 arrow::field("modificationTime", arrow::int64()),
                                 arrow::field("dataChange", arrow::boolean()),
                                 arrow::field("stats", arrow::utf8()),
                                 arrow::field("tags", StringMap()),
                                 arrow::field("deletionVector", DeletionVectorType()),
                                 arrow::field("baseRowId", arrow::int64()),
                                 arrow::field("defaultRowCommitVersion", arrow::int64()),
                                 arrow::field("clusteringProvider", arrow::utf8())})),
      arrow::field(
          "remove",
          arrow::struct_({arrow::field("path", arrow::utf8()),
                          arrow::field("deletionTimestamp", arrow::int64()),
                          arrow::field("dataChange", arrow::boolean()),
                          arrow::field("extendedFileMetadata", arrow::boolean()),
                          arrow::field("partitionValues", StringMap()),
                          arrow::field("size", arrow::int64()),
                          arrow::field("deletionVector", DeletionVectorType()),
                          arrow::field("baseRowId", arrow::int64()),
                          arrow::field("defaultRowCommitVersion", arrow::int64())})),
      arrow::field(
          "metaData",
          arrow::struct_(
              {arrow::field("id", arrow::utf8()), arrow::field("name", arrow::utf8()),
               arrow::field("description", arrow::utf8()),
               arrow::field("format",
                            arrow::struct_({arrow::field("provider", arrow::utf8()),
                                            arrow::field("options", StringMap())})),
               arrow::field("schemaString", arrow::utf8()),
               arrow::field("partitionColumns", arrow::list(arrow::utf8())),
               arrow::field("configuration", StringMap()),
               arrow::field("createdTime", arrow::int64())})),
      arrow::field(
          "protocol",
          arrow::struct_({arrow::field("minReaderVersion", arrow::int32()),
                          arrow::field("minWriterVersion", arrow::int32()),
                          arrow::field("readerFeatures", arrow::list(arrow::utf8())),
                          arrow::field("writerFeatures", arrow::list(arrow::utf8()))})),
      arrow::field("domainMetadata",
                   arrow::struct_({arrow::field("domain", arrow::utf8()),
                                   arrow::field("configuration", arrow::utf8()),
                                   arrow::field("removed", arrow::boolean())})),
  });
  return schema;
}

std::shared_ptr<arrow::Schema> V2CheckpointSchema() {
  static const auto schema = [] {
    arrow::FieldVector fields = CheckpointSchema()->fields();
    fields.push_back(arrow::field("checkpointMetadata",
                                  arrow::struct_({arrow::field("version", arrow::int64()),
                                                  arrow::field("tags", StringMap())})));
    fields.push_back(arrow::field(
        "sidecar", arrow::struct_({arrow::field("path", arrow::utf8()),
                                   arrow::field("sizeInBytes", arrow::int64()),
                                   arrow::field("modificationTime", arrow::int64()),
                                   arrow::field("tags", StringMap())})));
    return arrow::schema(std::move(fields));
  }();
  return schema;
}

namespace {

// A sidecar holds file actions only (PROTOCOL.md "Sidecar Files").
std::shared_ptr<arrow::Schema> SidecarSchema() {
  static const auto schema = [] {
    const auto classic = CheckpointSchema();
    return arrow::schema(
        {classic->GetFieldByName("add"), classic->GetFieldByName("remove")});
  }();
  return schema;
}

// True when some checkpoint file of `version` exists (any kind: classic, multi-part, V2).
arrow::Result<bool> CheckpointExists(storage::ObjectStore& store, Version version) {
  const std::string prefix =
      std::string(kLogDir) + "/" + VersionDigits(version) + ".checkpoint";
  ARROW_ASSIGN_OR_RAISE(auto objects, store.List(prefix, ""));
  return !objects.empty();
}

// The actions of a checkpoint that are not file actions: protocol, metadata, app
// transactions and domains.
std::vector<Action> NonFileActions(const Snapshot& snapshot) {
  std::vector<Action> actions;
  actions.emplace_back(snapshot.protocol());
  actions.emplace_back(snapshot.metadata());
  for (const auto& [app, txn] : snapshot.app_transactions()) actions.emplace_back(txn);
  for (const auto& [name, domain] : snapshot.domain_metadata())
    actions.emplace_back(domain);
  return actions;
}

// The tombstones still within the deleted-file retention.
std::vector<Action> Tombstones(const Snapshot& snapshot, int64_t now_ms) {
  std::vector<Action> actions;
  const int64_t tombstone_cutoff =
      now_ms - snapshot.properties().deleted_file_retention_ms;
  for (const auto& remove : snapshot.tombstones()) {
    if (remove.deletion_timestamp && *remove.deletion_timestamp < tombstone_cutoff)
      continue;
    Remove kept = remove;
    kept.stats.reset();  // checkpoints carry tombstones without stats or tags
    kept.tags.reset();
    actions.emplace_back(std::move(kept));
  }
  return actions;
}

// A Parquet file laid out with `schema`: `actions`, then the snapshot's files `first` to
// `last` (exclusive).
arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeCheckpoint(
    const std::shared_ptr<arrow::Schema>& schema, const std::vector<Action>& actions,
    const SharedList<Add>& files, size_t first, size_t last) {
  const int add_column = schema->GetFieldIndex("add");
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  auto properties = parquet::WriterProperties::Builder()
                        .compression(parquet::Compression::SNAPPY)
                        ->max_row_group_length(1 << 20)
                        ->build();
  ARROW_ASSIGN_OR_RAISE(auto writer,
                        parquet::arrow::FileWriter::Open(
                            *schema, arrow::default_memory_pool(), sink, properties,
                            parquet::default_arrow_writer_properties()));
  // Rows go to the Parquet writer in slices: building a million rows' Arrow arrays first
  // held every file's stats twice over and cost more in fresh pages than in encoding.
  constexpr int64_t kSliceRows = 64 * 1024;
  std::unique_ptr<arrow::RecordBatchBuilder> builder;
  ARROW_ASSIGN_OR_RAISE(builder, arrow::RecordBatchBuilder::Make(
                                     schema, arrow::default_memory_pool(), kSliceRows));
  int64_t rows = 0;
  auto flush_if = [&](bool full) -> arrow::Status {
    if (rows == 0 || (full && rows < kSliceRows)) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto batch, builder->Flush());
    rows = 0;
    return writer->WriteRecordBatch(*batch);
  };
  for (const auto& action : actions) {
    ARROW_RETURN_NOT_OK(AppendActionJson(builder.get(), action));
    ++rows;
    ARROW_RETURN_NOT_OK(flush_if(true));
  }
  auto* add_builder = static_cast<arrow::StructBuilder*>(builder->GetField(add_column));
  for (size_t index = first; index < last; ++index) {
    const Add& file = files[index];
    if (file.deletion_vector || !AddIsUtf8(file)) {
      ARROW_RETURN_NOT_OK(AppendActionJson(builder.get(), Action(file)));
    } else {
      for (int c = 0; c < schema->num_fields(); ++c) {
        if (c != add_column) ARROW_RETURN_NOT_OK(builder->GetField(c)->AppendNull());
      }
      ARROW_RETURN_NOT_OK(AppendAdd(add_builder, file));
    }
    ++rows;
    ARROW_RETURN_NOT_OK(flush_if(true));
  }
  ARROW_RETURN_NOT_OK(flush_if(false));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

// Point _last_checkpoint at `info`. Never move it backwards when another writer
// checkpointed later; but a hint naming a checkpoint that does not exist (past the latest
// version, say) is repaired, or every reader keeps listing the log twice.
// `v2`: what `_last_checkpoint` says of a V2 checkpoint (null for a classic one).
arrow::Status UpdateLastCheckpoint(storage::ObjectStore& store,
                                   const CheckpointInfo& info, const json& v2) {
  auto current = ReadLastCheckpointHint(store);
  bool replace = !current || *current <= info.version;
  if (!replace) {
    ARROW_ASSIGN_OR_RAISE(bool exists, CheckpointExists(store, *current));
    if (!exists) {
      AMPDELTA_LOG_WARN("delta repairing _last_checkpoint: it names version ", *current,
                        ", which has no checkpoint");
      replace = true;
    }
  }
  if (!replace) return arrow::Status::OK();
  json last = {{"version", info.version},
               {"size", info.num_actions},
               {"sizeInBytes", info.size_in_bytes},
               {"numOfAddFiles", info.num_add_files}};
  if (!v2.is_null()) last["v2Checkpoint"] = v2;
  return store.Put(LastCheckpointPath(), arrow::Buffer::FromString(last.dump()),
                   storage::PutMode::kOverwrite);
}

void ReportCheckpoint(const storage::ObjectStore& store, const CheckpointInfo& info,
                      double seconds) {
  static metrics::Histogram& duration = metrics::Registry::Default().GetHistogram(
      "ampdelta_checkpoint_duration_seconds",
      "Time to write a checkpoint (Parquet and _last_checkpoint).",
      metrics::DurationBuckets());
  duration.Observe(seconds);
  log::Event(log::Level::kInfo, "checkpoint",
             {{"table", RedactUrl(store.root_uri())},
              {"version", static_cast<int64_t>(info.version)},
              {"actions", static_cast<int64_t>(info.num_actions)},
              {"bytes", static_cast<int64_t>(info.size_in_bytes)},
              {"ms", static_cast<int64_t>(seconds * 1000)}});
}

// Write `bytes` as a new object and return the sidecar action naming it.
arrow::Result<Sidecar> PutSidecar(storage::ObjectStore& store, const std::string& name,
                                  const std::shared_ptr<arrow::Buffer>& bytes) {
  const std::string path = SidecarPath(name);
  ARROW_RETURN_NOT_OK(store.Put(path, bytes, storage::PutMode::kCreateIfAbsent));
  ARROW_ASSIGN_OR_RAISE(auto meta, store.Head(path));
  return Sidecar{name, static_cast<int64_t>(bytes->size()), meta.last_modified_ms};
}

// The sidecars of a V2 checkpoint: its tombstones, then its files, `per_sidecar` to a
// file, named as Spark names them (`<version>.checkpoint.<k>.<n>.<uuid>.parquet`).
arrow::Result<std::vector<Sidecar>> WriteSidecars(storage::ObjectStore& store,
                                                  const Snapshot& snapshot,
                                                  const std::vector<Action>& tombstones,
                                                  int64_t per_sidecar) {
  const auto& files = snapshot.files();
  const size_t per = static_cast<size_t>(std::max<int64_t>(per_sidecar, 1));
  const size_t total = tombstones.size() + files.size();
  const size_t count = (total + per - 1) / per;
  std::vector<Sidecar> sidecars;
  for (size_t k = 0; k < count; ++k) {
    // Rows [begin, end) of the tombstones followed by the files.
    const size_t begin = k * per;
    const size_t end = std::min(total, begin + per);
    const size_t tombs = tombstones.size();
    const std::vector<Action> removes(tombstones.begin() + std::min(begin, tombs),
                                      tombstones.begin() + std::min(end, tombs));
    ARROW_ASSIGN_OR_RAISE(auto bytes, EncodeCheckpoint(SidecarSchema(), removes, files,
                                                       std::max(begin, tombs) - tombs,
                                                       std::max(end, tombs) - tombs));
    char numbers[32];
    std::snprintf(numbers, sizeof(numbers), "%010zu.%010zu", k + 1, count);
    const std::string name = VersionDigits(snapshot.version()) + ".checkpoint." +
                             numbers + "." + NewUuid() + ".parquet";
    ARROW_ASSIGN_OR_RAISE(auto sidecar, PutSidecar(store, name, bytes));
    sidecars.push_back(std::move(sidecar));
  }
  return sidecars;
}

arrow::Result<CheckpointInfo> WriteClassicCheckpoint(const Snapshot& snapshot,
                                                     int64_t now_ms) {
  std::vector<Action> actions = NonFileActions(snapshot);
  const std::vector<Action> tombstones = Tombstones(snapshot, now_ms);
  actions.insert(actions.end(), tombstones.begin(), tombstones.end());
  const auto& files = snapshot.files();
  ARROW_ASSIGN_OR_RAISE(
      auto bytes, EncodeCheckpoint(CheckpointSchema(), actions, files, 0, files.size()));
  auto store = snapshot.store();
  CheckpointInfo info;
  info.version = snapshot.version();
  info.path = CheckpointPath(snapshot.version());
  // A checkpoint for a version is deterministic in content, so racing writers may
  // overwrite.
  ARROW_RETURN_NOT_OK(store->Put(info.path, bytes, storage::PutMode::kOverwrite));
  info.num_actions = static_cast<int64_t>(actions.size() + files.size());
  info.num_add_files = static_cast<int64_t>(files.size());
  info.size_in_bytes = bytes->size();
  ARROW_RETURN_NOT_OK(UpdateLastCheckpoint(*store, info, json()));
  return info;
}

// The non-file actions `_last_checkpoint` repeats, as Spark does for a V2 checkpoint; a
// table with very many (app transactions, domains) leaves them to the checkpoint.
json LastCheckpointActions(const std::vector<Action>& actions) {
  constexpr size_t kMostActions = 100;
  json out = json::array();
  if (actions.size() > kMostActions) return out;
  for (const auto& action : actions) {
    auto text = ActionToJson(action);
    if (!text.ok()) return json::array();
    out.push_back(json_util::ParseJson(*text));
  }
  return out;
}

// A UUID-named V2 checkpoint: the non-file actions and `checkpointMetadata`, the file
// actions inline or, when there are many, in sidecars written first — so the
// checkpoint, once it exists, never names a file that does not.
arrow::Result<CheckpointInfo> WriteV2Checkpoint(const Snapshot& snapshot, int64_t now_ms,
                                                const CheckpointOptions& options) {
  auto store = snapshot.store();
  std::vector<Action> top = NonFileActions(snapshot);
  top.emplace_back(CheckpointMetadata{snapshot.version()});
  const json non_file_actions = LastCheckpointActions(top);
  const std::vector<Action> tombstones = Tombstones(snapshot, now_ms);
  const auto& files = snapshot.files();
  const int64_t file_actions = static_cast<int64_t>(tombstones.size() + files.size());
  std::vector<Sidecar> sidecars;
  if (file_actions > options.max_inline_file_actions) {
    ARROW_ASSIGN_OR_RAISE(sidecars, WriteSidecars(*store, snapshot, tombstones,
                                                  options.file_actions_per_sidecar));
    for (const auto& sidecar : sidecars) top.emplace_back(sidecar);
  } else {
    top.insert(top.end(), tombstones.begin(), tombstones.end());
  }
  ARROW_ASSIGN_OR_RAISE(auto bytes,
                        EncodeCheckpoint(V2CheckpointSchema(), top, files, 0,
                                         sidecars.empty() ? files.size() : 0));
  CheckpointInfo info;
  info.version = snapshot.version();
  info.path = V2CheckpointPath(snapshot.version(), NewUuid());
  ARROW_RETURN_NOT_OK(store->Put(info.path, bytes, storage::PutMode::kCreateIfAbsent));
  ARROW_ASSIGN_OR_RAISE(auto meta, store->Head(info.path));
  info.num_add_files = static_cast<int64_t>(files.size());
  info.num_sidecars = static_cast<int64_t>(sidecars.size());
  info.num_actions =
      static_cast<int64_t>(top.size() - sidecars.size()) +
      (sidecars.empty() ? static_cast<int64_t>(files.size()) : file_actions) +
      static_cast<int64_t>(sidecars.size());
  info.size_in_bytes = bytes->size();
  json sidecar_files = json::array();
  for (const auto& sidecar : sidecars) {
    info.size_in_bytes += sidecar.size_in_bytes;
    sidecar_files.push_back({{"path", sidecar.path},
                             {"sizeInBytes", sidecar.size_in_bytes},
                             {"modificationTime", sidecar.modification_time}});
  }
  json v2 = {{"path", info.path.substr(kLogDir.size() + 1)},
             {"sizeInBytes", static_cast<int64_t>(bytes->size())},
             {"modificationTime", meta.last_modified_ms},
             {"nonFileActions", non_file_actions},
             {"sidecarFiles", sidecar_files}};
  ARROW_RETURN_NOT_OK(UpdateLastCheckpoint(*store, info, v2));
  return info;
}

}  // namespace

arrow::Result<CheckpointInfo> WriteCheckpoint(const Snapshot& snapshot, int64_t now_ms,
                                              const CheckpointOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // A checkpoint is a write like any other: a table whose writer features ampdelta lacks
  // must not get one.
  ARROW_RETURN_NOT_OK(
      CheckWriteSupported(snapshot.protocol(), snapshot.metadata(), *snapshot.schema()));
  // A table with V2 checkpoints may get no other kind (PROTOCOL.md "V2 Checkpoint Table
  // Feature").
  ARROW_ASSIGN_OR_RAISE(auto info,
                        HasWriterFeature(snapshot.protocol(), TableFeature::kV2Checkpoint)
                            ? WriteV2Checkpoint(snapshot, now_ms, options)
                            : WriteClassicCheckpoint(snapshot, now_ms));
  ReportCheckpoint(
      *snapshot.store(), info,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return info;
}

}  // namespace ampdelta::delta

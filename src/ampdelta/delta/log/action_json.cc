#include "ampdelta/delta/log/action_json.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/action_json_internal.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/utf8.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;
// Actions are written with keys in a fixed, readable order (Spark's), not sorted.
using ojson = nlohmann::ordered_json;

// Log keys (PROTOCOL.md "Actions").
constexpr const char* kProtocol = "protocol";
constexpr const char* kMetaData = "metaData";
constexpr const char* kAdd = "add";
constexpr const char* kRemove = "remove";
constexpr const char* kTxn = "txn";
constexpr const char* kDomainMetadata = "domainMetadata";
constexpr const char* kCommitInfo = "commitInfo";
constexpr const char* kCdc = "cdc";
constexpr const char* kCheckpointMetadata = "checkpointMetadata";
constexpr const char* kSidecar = "sidecar";

arrow::Status Corrupt(const std::string& source, const std::string& what) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError,
                   "malformed action in ", source, ": ", what);
}

// Typed accessors that report the offending field by name.
class Reader {
 public:
  Reader(const json& object, const char* action, const std::string& source)
      : object_(object), action_(action), source_(source) {}

  bool Has(const char* key) const {
    auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
  }

  arrow::Result<std::string> String(const char* key) const {
    ARROW_ASSIGN_OR_RAISE(const json* value, Required(key));
    if (!value->is_string()) return Bad(key, "a string");
    return value->get<std::string>();
  }

  arrow::Result<std::optional<std::string>> OptString(const char* key) const {
    if (!Has(key)) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(std::string value, String(key));
    return value;
  }

  arrow::Result<int64_t> Int(const char* key) const {
    ARROW_ASSIGN_OR_RAISE(const json* value, Required(key));
    // An unsigned number above INT64_MAX would otherwise come back negative.
    auto number = json_util::AsInt64(*value);
    if (!number) return Bad(key, "an integer in the range of a long");
    return *number;
  }

  // For the fields the protocol declares as int: a larger value must not wrap around.
  arrow::Result<int32_t> Int32(const char* key) const {
    ARROW_ASSIGN_OR_RAISE(int64_t value, Int(key));
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max()) {
      return Bad(key, "an integer in the range of an int");
    }
    return static_cast<int32_t>(value);
  }

  arrow::Result<std::optional<int32_t>> OptInt32(const char* key) const {
    if (!Has(key)) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(int32_t value, Int32(key));
    return value;
  }

  arrow::Result<std::optional<int64_t>> OptInt(const char* key) const {
    if (!Has(key)) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(int64_t value, Int(key));
    return value;
  }

  arrow::Result<bool> Bool(const char* key,
                           std::optional<bool> fallback = std::nullopt) const {
    if (!Has(key)) {
      if (fallback) return *fallback;
      return Missing(key);
    }
    const json& value = object_.at(key);
    if (!value.is_boolean()) return Bad(key, "a boolean");
    return value.get<bool>();
  }

  arrow::Result<std::optional<bool>> OptBool(const char* key) const {
    if (!Has(key)) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(bool value, Bool(key));
    return value;
  }

  arrow::Result<NullableStringMap> NullableMap(const char* key, bool required) const {
    NullableStringMap out;
    if (!Has(key)) {
      if (required) return Missing(key);
      return out;
    }
    const json& value = object_.at(key);
    if (!value.is_object()) return Bad(key, "an object");
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it->is_null()) {
        out[it.key()] = std::nullopt;
      } else if (it->is_string()) {
        out[it.key()] = it->get<std::string>();
      } else {
        out[it.key()] = json_util::DumpJsonLossy(*it);
      }
    }
    return out;
  }

  arrow::Result<std::optional<NullableStringMap>> OptNullableMap(const char* key) const {
    if (!Has(key)) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(NullableStringMap value, NullableMap(key, true));
    return value;
  }

  arrow::Result<std::map<std::string, std::string>> StringMap(const char* key) const {
    std::map<std::string, std::string> out;
    if (!Has(key)) return out;
    const json& value = object_.at(key);
    if (!value.is_object()) return Bad(key, "an object");
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it->is_null()) continue;
      out[it.key()] =
          it->is_string() ? it->get<std::string>() : json_util::DumpJsonLossy(*it);
    }
    return out;
  }

  arrow::Result<std::optional<std::vector<std::string>>> OptStringList(
      const char* key) const {
    if (!Has(key)) return std::nullopt;
    const json& value = object_.at(key);
    if (!value.is_array()) return Bad(key, "an array");
    std::vector<std::string> out;
    for (const auto& item : value) {
      if (!item.is_string()) return Bad(key, "an array of strings");
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  const json* Child(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

 private:
  arrow::Result<const json*> Required(const char* key) const {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return Missing(key);
    return &*it;
  }
  arrow::Status Missing(const char* key) const {
    return Corrupt(source_, std::string(action_) + " has no '" + key + "'");
  }
  arrow::Status Bad(const char* key, const char* expected) const {
    return Corrupt(source_, std::string(action_) + "." + key + " is not " + expected);
  }

  const json& object_;
  const char* action_;
  const std::string& source_;
};

arrow::Result<std::optional<DeletionVectorDescriptor>> ParseDv(
    const json* value, const std::string& source) {
  if (value == nullptr) return std::nullopt;
  if (!value->is_object()) return Corrupt(source, "deletionVector is not an object");
  Reader r(*value, "deletionVector", source);
  DeletionVectorDescriptor dv;
  ARROW_ASSIGN_OR_RAISE(dv.storage_type, r.String("storageType"));
  ARROW_ASSIGN_OR_RAISE(dv.path_or_inline_dv, r.String("pathOrInlineDv"));
  ARROW_ASSIGN_OR_RAISE(dv.offset, r.OptInt32("offset"));
  ARROW_ASSIGN_OR_RAISE(dv.size_in_bytes, r.Int32("sizeInBytes"));
  ARROW_ASSIGN_OR_RAISE(dv.cardinality, r.Int("cardinality"));
  ARROW_ASSIGN_OR_RAISE(dv.max_row_index, r.OptInt("maxRowIndex"));
  return dv;
}

ojson DvToJson(const DeletionVectorDescriptor& dv) {
  ojson out = {{"storageType", dv.storage_type},
               {"pathOrInlineDv", dv.path_or_inline_dv},
               {"sizeInBytes", dv.size_in_bytes},
               {"cardinality", dv.cardinality}};
  if (dv.offset) out["offset"] = *dv.offset;
  if (dv.max_row_index) out["maxRowIndex"] = *dv.max_row_index;
  return out;
}

ojson NullableMapToJson(const NullableStringMap& map) {
  ojson out = ojson::object();
  for (const auto& [key, value] : map) {
    if (value) {
      out[key] = *value;
    } else {
      out[key] = nullptr;
    }
  }
  return out;
}

ojson StringMapToJson(const std::map<std::string, std::string>& map) {
  ojson out = ojson::object();
  for (const auto& [key, value] : map) out[key] = value;
  return out;
}

}  // namespace

namespace internal {

namespace {

arrow::Result<Action> ParseAdd(Reader& r, const std::string& source) {
  Add add;
  ARROW_ASSIGN_OR_RAISE(add.path, r.String("path"));
  ARROW_ASSIGN_OR_RAISE(add.partition_values, r.NullableMap("partitionValues", false));
  ARROW_ASSIGN_OR_RAISE(add.size, r.Int("size"));
  ARROW_ASSIGN_OR_RAISE(auto mtime, r.OptInt("modificationTime"));
  add.modification_time = mtime.value_or(0);
  ARROW_ASSIGN_OR_RAISE(add.data_change, r.Bool("dataChange", true));
  ARROW_ASSIGN_OR_RAISE(add.stats, r.OptString("stats"));
  ARROW_ASSIGN_OR_RAISE(add.tags, r.OptNullableMap("tags"));
  ARROW_ASSIGN_OR_RAISE(add.deletion_vector, ParseDv(r.Child("deletionVector"), source));
  ARROW_ASSIGN_OR_RAISE(add.base_row_id, r.OptInt("baseRowId"));
  ARROW_ASSIGN_OR_RAISE(add.default_row_commit_version,
                        r.OptInt("defaultRowCommitVersion"));
  ARROW_ASSIGN_OR_RAISE(add.clustering_provider, r.OptString("clusteringProvider"));
  return add;
}

arrow::Result<Action> ParseRemove(Reader& r, const std::string& source) {
  Remove remove;
  ARROW_ASSIGN_OR_RAISE(remove.path, r.String("path"));
  ARROW_ASSIGN_OR_RAISE(remove.deletion_timestamp, r.OptInt("deletionTimestamp"));
  ARROW_ASSIGN_OR_RAISE(remove.data_change, r.Bool("dataChange", true));
  ARROW_ASSIGN_OR_RAISE(remove.extended_file_metadata, r.OptBool("extendedFileMetadata"));
  ARROW_ASSIGN_OR_RAISE(remove.partition_values, r.OptNullableMap("partitionValues"));
  ARROW_ASSIGN_OR_RAISE(remove.size, r.OptInt("size"));
  ARROW_ASSIGN_OR_RAISE(remove.stats, r.OptString("stats"));
  ARROW_ASSIGN_OR_RAISE(remove.tags, r.OptNullableMap("tags"));
  ARROW_ASSIGN_OR_RAISE(remove.deletion_vector,
                        ParseDv(r.Child("deletionVector"), source));
  ARROW_ASSIGN_OR_RAISE(remove.base_row_id, r.OptInt("baseRowId"));
  ARROW_ASSIGN_OR_RAISE(remove.default_row_commit_version,
                        r.OptInt("defaultRowCommitVersion"));
  return remove;
}

arrow::Result<Action> ParseMetadata(Reader& r, const std::string& source) {
  Metadata metadata;
  ARROW_ASSIGN_OR_RAISE(metadata.id, r.String("id"));
  ARROW_ASSIGN_OR_RAISE(metadata.name, r.OptString("name"));
  ARROW_ASSIGN_OR_RAISE(metadata.description, r.OptString("description"));
  if (const json* format = r.Child("format")) {
    Reader f(*format, "metaData.format", source);
    ARROW_ASSIGN_OR_RAISE(auto provider, f.OptString("provider"));
    metadata.format.provider = provider.value_or("parquet");
    ARROW_ASSIGN_OR_RAISE(metadata.format.options, f.StringMap("options"));
  }
  // Optional here: only the metaData that wins replay must have a schema (see
  // Snapshot).
  ARROW_ASSIGN_OR_RAISE(auto schema_string, r.OptString("schemaString"));
  metadata.schema_string = schema_string.value_or("");
  ARROW_ASSIGN_OR_RAISE(auto partitions, r.OptStringList("partitionColumns"));
  metadata.partition_columns = partitions.value_or(std::vector<std::string>{});
  ARROW_ASSIGN_OR_RAISE(metadata.configuration, r.StringMap("configuration"));
  ARROW_ASSIGN_OR_RAISE(metadata.created_time, r.OptInt("createdTime"));
  return metadata;
}

arrow::Result<Action> ParseProtocol(Reader& r) {
  Protocol protocol;
  ARROW_ASSIGN_OR_RAISE(protocol.min_reader_version, r.Int32("minReaderVersion"));
  ARROW_ASSIGN_OR_RAISE(protocol.min_writer_version, r.Int32("minWriterVersion"));
  ARROW_ASSIGN_OR_RAISE(protocol.reader_features, r.OptStringList("readerFeatures"));
  ARROW_ASSIGN_OR_RAISE(protocol.writer_features, r.OptStringList("writerFeatures"));
  return protocol;
}

arrow::Result<Action> ParseTxn(Reader& r) {
  SetTransaction txn;
  ARROW_ASSIGN_OR_RAISE(txn.app_id, r.String("appId"));
  ARROW_ASSIGN_OR_RAISE(txn.version, r.Int("version"));
  ARROW_ASSIGN_OR_RAISE(txn.last_updated, r.OptInt("lastUpdated"));
  return txn;
}

arrow::Result<Action> ParseDomainMetadata(Reader& r) {
  DomainMetadata domain;
  ARROW_ASSIGN_OR_RAISE(domain.domain, r.String("domain"));
  ARROW_ASSIGN_OR_RAISE(domain.configuration, r.String("configuration"));
  ARROW_ASSIGN_OR_RAISE(domain.removed, r.Bool("removed", false));
  return domain;
}

arrow::Result<Action> ParseCommitInfo(Reader& r, const json& body) {
  // Free-form: take what is well-typed and keep the rest as raw JSON.
  CommitInfo info;
  info.raw_json = json_util::DumpJsonLossy(body);
  auto integer = [&](const char* key) -> std::optional<int64_t> {
    auto it = body.find(key);
    if (it != body.end()) return json_util::AsInt64(*it);
    return std::nullopt;
  };
  auto text = [&](const char* key) -> std::string {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return "";
    return it->is_string() ? it->get<std::string>() : json_util::DumpJsonLossy(*it);
  };
  info.timestamp = integer("timestamp");
  info.in_commit_timestamp = integer("inCommitTimestamp");
  info.read_version = integer("readVersion");
  info.operation = text("operation");
  info.engine_info = text("engineInfo");
  info.txn_id = text("txnId");
  if (body.contains("isolationLevel") && body["isolationLevel"].is_string()) {
    info.isolation_level = body["isolationLevel"].get<std::string>();
  }
  if (body.contains("isBlindAppend") && body["isBlindAppend"].is_boolean()) {
    info.is_blind_append = body["isBlindAppend"].get<bool>();
  }
  ARROW_ASSIGN_OR_RAISE(info.operation_parameters, r.StringMap("operationParameters"));
  ARROW_ASSIGN_OR_RAISE(info.operation_metrics, r.StringMap("operationMetrics"));
  // commitInfo is free-form: tags of another shape are not ours to refuse.
  if (body.contains("tags") && body["tags"].is_object()) {
    ARROW_ASSIGN_OR_RAISE(info.tags, r.StringMap("tags"));
  }
  return info;
}

arrow::Result<Action> ParseCdc(Reader& r) {
  Cdc cdc;
  ARROW_ASSIGN_OR_RAISE(cdc.path, r.String("path"));
  ARROW_ASSIGN_OR_RAISE(cdc.partition_values, r.NullableMap("partitionValues", false));
  ARROW_ASSIGN_OR_RAISE(auto size, r.OptInt("size"));
  cdc.size = size.value_or(0);
  ARROW_ASSIGN_OR_RAISE(cdc.data_change, r.Bool("dataChange", false));
  return cdc;
}

arrow::Result<Action> ParseCheckpointMetadata(Reader& r) {
  CheckpointMetadata metadata;
  ARROW_ASSIGN_OR_RAISE(metadata.version, r.Int("version"));
  return metadata;
}

arrow::Result<Action> ParseSidecar(Reader& r) {
  Sidecar sidecar;
  ARROW_ASSIGN_OR_RAISE(sidecar.path, r.String("path"));
  ARROW_ASSIGN_OR_RAISE(sidecar.size_in_bytes, r.Int("sizeInBytes"));
  ARROW_ASSIGN_OR_RAISE(auto mtime, r.OptInt("modificationTime"));
  sidecar.modification_time = mtime.value_or(0);
  return sidecar;
}

}  // namespace

arrow::Result<Action> ActionFromJson(const std::string& name, const json& body,
                                     const std::string& source) {
  if (!body.is_object()) return Corrupt(source, name + " is not an object");
  Reader r(body, name.c_str(), source);
  if (name == kAdd) return ParseAdd(r, source);
  if (name == kRemove) return ParseRemove(r, source);
  if (name == kMetaData) return ParseMetadata(r, source);
  if (name == kProtocol) return ParseProtocol(r);
  if (name == kTxn) return ParseTxn(r);
  if (name == kDomainMetadata) return ParseDomainMetadata(r);
  if (name == kCommitInfo) return ParseCommitInfo(r, body);
  if (name == kCdc) return ParseCdc(r);
  if (name == kCheckpointMetadata) return ParseCheckpointMetadata(r);
  if (name == kSidecar) return ParseSidecar(r);
  return arrow::Status::KeyError(name);
}

}  // namespace internal

namespace {

struct ToJsonVisitor {
  ojson operator()(const Protocol& p) const {
    ojson out = {{"minReaderVersion", p.min_reader_version},
                 {"minWriterVersion", p.min_writer_version}};
    if (p.reader_features) out["readerFeatures"] = *p.reader_features;
    if (p.writer_features) out["writerFeatures"] = *p.writer_features;
    return ojson{{kProtocol, out}};
  }
  ojson operator()(const Metadata& m) const {
    ojson out = {{"id", m.id},
                 {"format",
                  {{"provider", m.format.provider},
                   {"options", StringMapToJson(m.format.options)}}},
                 {"schemaString", m.schema_string},
                 {"partitionColumns", m.partition_columns},
                 {"configuration", StringMapToJson(m.configuration)}};
    if (m.name) out["name"] = *m.name;
    if (m.description) out["description"] = *m.description;
    if (m.created_time) out["createdTime"] = *m.created_time;
    return ojson{{kMetaData, out}};
  }
  ojson operator()(const Add& a) const {
    ojson out = {{"path", a.path},
                 {"partitionValues", NullableMapToJson(a.partition_values)},
                 {"size", a.size},
                 {"modificationTime", a.modification_time},
                 {"dataChange", a.data_change}};
    if (a.stats) out["stats"] = *a.stats;
    if (a.tags) out["tags"] = NullableMapToJson(*a.tags);
    if (a.deletion_vector) out["deletionVector"] = DvToJson(*a.deletion_vector);
    if (a.base_row_id) out["baseRowId"] = *a.base_row_id;
    if (a.default_row_commit_version)
      out["defaultRowCommitVersion"] = *a.default_row_commit_version;
    if (a.clustering_provider) out["clusteringProvider"] = *a.clustering_provider;
    return ojson{{kAdd, out}};
  }
  ojson operator()(const Remove& r) const {
    ojson out = {{"path", r.path}, {"dataChange", r.data_change}};
    if (r.deletion_timestamp) out["deletionTimestamp"] = *r.deletion_timestamp;
    if (r.extended_file_metadata) out["extendedFileMetadata"] = *r.extended_file_metadata;
    if (r.partition_values)
      out["partitionValues"] = NullableMapToJson(*r.partition_values);
    if (r.size) out["size"] = *r.size;
    if (r.stats) out["stats"] = *r.stats;
    if (r.tags) out["tags"] = NullableMapToJson(*r.tags);
    if (r.deletion_vector) out["deletionVector"] = DvToJson(*r.deletion_vector);
    if (r.base_row_id) out["baseRowId"] = *r.base_row_id;
    if (r.default_row_commit_version)
      out["defaultRowCommitVersion"] = *r.default_row_commit_version;
    return ojson{{kRemove, out}};
  }
  ojson operator()(const SetTransaction& t) const {
    ojson out = {{"appId", t.app_id}, {"version", t.version}};
    if (t.last_updated) out["lastUpdated"] = *t.last_updated;
    return ojson{{kTxn, out}};
  }
  ojson operator()(const DomainMetadata& d) const {
    return ojson{{kDomainMetadata,
                  {{"domain", d.domain},
                   {"configuration", d.configuration},
                   {"removed", d.removed}}}};
  }
  ojson operator()(const CommitInfo& c) const {
    if (!c.raw_json.empty()) {
      ojson raw = json_util::ParseJson<ojson>(c.raw_json);
      if (!raw.is_discarded()) return ojson{{kCommitInfo, raw}};
    }
    // Spark's key order: the in-commit timestamp, the timestamp, then what the operation
    // was, then provenance.
    ojson out = ojson::object();
    if (c.in_commit_timestamp) out["inCommitTimestamp"] = *c.in_commit_timestamp;
    if (c.timestamp) out["timestamp"] = *c.timestamp;
    out["operation"] = c.operation;
    out["operationParameters"] = StringMapToJson(c.operation_parameters);
    if (c.read_version) out["readVersion"] = *c.read_version;
    if (c.isolation_level) out["isolationLevel"] = *c.isolation_level;
    if (c.is_blind_append) out["isBlindAppend"] = *c.is_blind_append;
    if (!c.operation_metrics.empty())
      out["operationMetrics"] = StringMapToJson(c.operation_metrics);
    if (!c.engine_info.empty()) out["engineInfo"] = c.engine_info;
    if (!c.txn_id.empty()) out["txnId"] = c.txn_id;
    if (!c.tags.empty()) out["tags"] = StringMapToJson(c.tags);
    return ojson{{kCommitInfo, out}};
  }
  ojson operator()(const Cdc& c) const {
    return ojson{{kCdc,
                  {{"path", c.path},
                   {"partitionValues", NullableMapToJson(c.partition_values)},
                   {"size", c.size},
                   {"dataChange", c.data_change}}}};
  }
  ojson operator()(const CheckpointMetadata& c) const {
    return ojson{{kCheckpointMetadata, {{"version", c.version}}}};
  }
  ojson operator()(const Sidecar& s) const {
    return ojson{{kSidecar,
                  {{"path", s.path},
                   {"sizeInBytes", s.size_in_bytes},
                   {"modificationTime", s.modification_time}}}};
  }
};

}  // namespace

arrow::Result<std::optional<Action>> ParseActionLine(std::string_view line) {
  const std::string source = "log line";
  json doc = json_util::ParseJson(line);
  if (doc.is_discarded() || !doc.is_object()) {
    return Corrupt(source, "not a JSON object: " + EscapeNonUtf8(line.substr(0, 200)));
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    auto action = internal::ActionFromJson(it.key(), *it, source);
    if (action.ok()) return std::optional<Action>(std::move(*action));
    if (action.status().IsKeyError()) continue;  // an action type from the future
    return action.status();
  }
  return std::nullopt;
}

arrow::Result<std::vector<Action>> ParseCommit(std::string_view text,
                                               const std::string& source) {
  std::vector<Action> actions;
  size_t start = 0;
  int line_number = 0;
  bool saw_line = false;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json doc = json_util::ParseJson(line);
    if (doc.is_discarded() || !doc.is_object()) {
      return Corrupt(source,
                     "line " + std::to_string(line_number) + " is not a JSON object");
    }
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      auto action = internal::ActionFromJson(it.key(), *it, source);
      if (action.ok()) {
        actions.push_back(std::move(*action));
      } else if (!action.status().IsKeyError()) {
        return action.status();
      }
    }
    saw_line = true;
  }
  // A commit holds at least one action: an empty file is a write cut short.
  if (!saw_line) return Corrupt(source, "the commit file is empty");
  return actions;
}

arrow::Result<std::string> ActionToJson(const Action& action) {
  return json_util::DumpJson(std::visit(ToJsonVisitor{}, action),
                             std::string(ActionName(action)) + " action");
}

arrow::Result<std::string> EncodeCommit(const std::vector<Action>& actions) {
  std::string out;
  for (const auto& action : actions) {
    ARROW_ASSIGN_OR_RAISE(std::string line, ActionToJson(action));
    out += line;
    out += '\n';
  }
  return out;
}

const char* ActionName(const Action& action) {
  static constexpr const char* kNames[] = {kProtocol,   kMetaData, kAdd,
                                           kRemove,     kTxn,      kDomainMetadata,
                                           kCommitInfo, kCdc,      kCheckpointMetadata,
                                           kSidecar};
  return kNames[action.index()];
}

}  // namespace ampdelta::delta

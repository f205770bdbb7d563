// `ampdelta table info|history|files`: inspect a Delta table.

#include <ctime>
#include <iostream>
#include <memory>

#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/action_json.h"
#include "ampdelta/delta/schema.h"
#include "ampdelta/delta/snapshot.h"
#include "ampdelta/storage/object_store_registry.h"
#include "commands.h"

namespace ampdelta::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct TableArgs {
  std::string path;
  bool json = false;
  std::optional<int64_t> version;
  std::string timestamp;
  size_t limit = 0;
};

std::string IsoTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[40];
  std::snprintf(out, sizeof(out), "%s.%03dZ", text, static_cast<int>(ms % 1000));
  return out;
}

arrow::Result<int64_t> ParseTimestampArg(const std::string& text) {
  std::tm tm{};
  const char* formats[] = {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S",
                           "%Y-%m-%d"};
  for (const char* format : formats) {
    tm = {};
    const char* end = strptime(text.c_str(), format, &tm);
    if (end != nullptr && *end == '\0') return static_cast<int64_t>(timegm(&tm)) * 1000;
  }
  return arrow::Status::Invalid("cannot parse timestamp '", text,
                                "' (use YYYY-MM-DD[THH:MM:SS[Z]], UTC)");
}

arrow::Result<std::shared_ptr<const delta::Snapshot>> LoadSnapshot(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(args.path));
  delta::SnapshotOptions options;
  options.version = args.version;
  if (!args.timestamp.empty()) {
    ARROW_ASSIGN_OR_RAISE(int64_t ms, ParseTimestampArg(args.timestamp));
    options.timestamp_ms = ms;
  }
  return delta::Snapshot::Load(std::move(store), options);
}

ojson NullableMap(const delta::NullableStringMap& map) {
  ojson out = ojson::object();
  for (const auto& [key, value] : map) out[key] = value ? ojson(*value) : ojson(nullptr);
  return out;
}

ojson ProtocolJson(const delta::Protocol& protocol) {
  ojson out = {{"minReaderVersion", protocol.min_reader_version},
               {"minWriterVersion", protocol.min_writer_version}};
  if (protocol.reader_features) out["readerFeatures"] = *protocol.reader_features;
  if (protocol.writer_features) out["writerFeatures"] = *protocol.writer_features;
  return out;
}

std::optional<int64_t> FileRecords(const delta::Add& add) {
  if (!add.stats) return std::nullopt;
  auto stats = nlohmann::json::parse(*add.stats, nullptr, false);
  if (stats.is_discarded() || !stats.contains("numRecords") ||
      !stats["numRecords"].is_number_integer()) {
    return std::nullopt;
  }
  return stats["numRecords"].get<int64_t>();
}

// History shows when the writer says it committed (commitInfo), as Spark and delta-rs do.
int64_t HistoryTime(const delta::HistoryEntry& entry) {
  if (entry.commit_info && entry.commit_info->timestamp) return *entry.commit_info->timestamp;
  return entry.timestamp_ms;
}

int Report(const arrow::Status& status) {
  if (status.ok()) return kExitOk;
  PrintError(status.message());
  return kExitFailure;
}

arrow::Status Info(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(args));
  const auto& metadata = snapshot->metadata();
  const auto records = snapshot->num_records();
  if (args.json) {
    ojson fields = ojson::array();
    for (const auto& field : snapshot->schema()->fields()) {
      fields.push_back({{"name", field->name()},
                        {"type", delta::DeltaTypeName(*field->type())},
                        {"nullable", field->nullable()}});
    }
    ojson txns = ojson::object();
    for (const auto& [app, txn] : snapshot->app_transactions()) txns[app] = txn.version;
    ojson domains = ojson::array();
    for (const auto& [name, domain] : snapshot->domain_metadata()) domains.push_back(name);
    ojson out = {{"path", snapshot->store()->root_uri()},
                 {"version", snapshot->version()},
                 {"timestamp", IsoTime(snapshot->timestamp_ms())},
                 {"protocol", ProtocolJson(snapshot->protocol())},
                 {"id", metadata.id},
                 {"name", metadata.name ? ojson(*metadata.name) : ojson(nullptr)},
                 {"partition_columns", metadata.partition_columns},
                 {"configuration", metadata.configuration},
                 {"schema", fields},
                 {"schema_string", metadata.schema_string},
                 {"num_files", snapshot->files().size()},
                 {"size_bytes", snapshot->total_bytes()},
                 {"num_records", records ? ojson(*records) : ojson(nullptr)},
                 {"app_transactions", txns},
                 {"domains", domains}};
    std::cout << out.dump(2) << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "table:      " << snapshot->store()->root_uri() << "\n"
            << "version:    " << snapshot->version() << " (" << IsoTime(snapshot->timestamp_ms())
            << ")\n"
            << "protocol:   " << ProtocolJson(snapshot->protocol()).dump() << "\n"
            << "id:         " << metadata.id << "\n"
            << "partitions: " << ojson(metadata.partition_columns).dump() << "\n"
            << "files:      " << snapshot->files().size() << " (" << snapshot->total_bytes()
            << " bytes)\n"
            << "rows:       " << (records ? std::to_string(*records) : "unknown") << "\n"
            << "schema:\n";
  for (const auto& field : snapshot->schema()->fields()) {
    std::cout << "  " << field->name() << ": " << delta::DeltaTypeName(*field->type())
              << (field->nullable() ? "" : " not null") << "\n";
  }
  for (const auto& [key, value] : metadata.configuration) {
    std::cout << "property:   " << key << "=" << value << "\n";
  }
  for (const auto& [app, txn] : snapshot->app_transactions()) {
    std::cout << "txn:        " << app << " version " << txn.version << "\n";
  }
  std::cout.flush();
  return arrow::Status::OK();
}

arrow::Status Files(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(args));
  if (args.json) {
    ojson out = ojson::array();
    for (const auto& add : snapshot->files()) {
      auto records = FileRecords(add);
      ojson file = {{"path", add.path},
                    {"size", add.size},
                    {"partition_values", NullableMap(add.partition_values)},
                    {"num_records", records ? ojson(*records) : ojson(nullptr)},
                    {"modification_time", add.modification_time}};
      if (add.deletion_vector) file["deleted_rows"] = add.deletion_vector->cardinality;
      out.push_back(std::move(file));
    }
    std::cout << out.dump(2) << std::endl;
    return arrow::Status::OK();
  }
  for (const auto& add : snapshot->files()) {
    auto records = FileRecords(add);
    std::cout << add.path << "\t" << add.size << " bytes\t"
              << (records ? std::to_string(*records) : "?") << " rows";
    if (add.deletion_vector) std::cout << "\t" << add.deletion_vector->cardinality << " deleted";
    std::cout << "\n";
  }
  std::cout.flush();
  return arrow::Status::OK();
}

arrow::Status History(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(args.path));
  ARROW_ASSIGN_OR_RAISE(auto history, delta::ReadHistory(*store, args.limit));
  if (args.json) {
    ojson out = ojson::array();
    for (const auto& entry : history) {
      ojson item = {{"version", entry.version}, {"timestamp", IsoTime(HistoryTime(entry))}};
      if (entry.commit_info) {
        const auto& info = *entry.commit_info;
        item["operation"] = info.operation;
        item["operationParameters"] = info.operation_parameters;
        if (info.read_version) item["readVersion"] = *info.read_version;
        if (info.is_blind_append) item["isBlindAppend"] = *info.is_blind_append;
        item["operationMetrics"] = info.operation_metrics;
        item["engineInfo"] = info.engine_info;
      }
      out.push_back(std::move(item));
    }
    std::cout << out.dump(2) << std::endl;
    return arrow::Status::OK();
  }
  for (const auto& entry : history) {
    std::cout << "version " << entry.version << "  " << IsoTime(HistoryTime(entry));
    if (entry.commit_info) {
      std::cout << "  " << entry.commit_info->operation;
      if (!entry.commit_info->operation_metrics.empty()) {
        std::cout << "  " << ojson(entry.commit_info->operation_metrics).dump();
      }
    }
    std::cout << "\n";
  }
  std::cout.flush();
  return arrow::Status::OK();
}

void AddReadOptions(CLI::App* cmd, TableArgs* args, bool time_travel) {
  cmd->add_option("path", args->path, "table path or URI")->required();
  cmd->add_flag("--json", args->json, "print JSON");
  if (time_travel) {
    auto* version = cmd->add_option("--version", args->version, "read this version");
    cmd->add_option("--timestamp", args->timestamp,
                    "read the version current at this UTC time (YYYY-MM-DD[THH:MM:SS])")
        ->excludes(version);
  }
}

}  // namespace

CommandRunner AddTableCommand(CLI::App& app) {
  auto args = std::make_shared<TableArgs>();
  CLI::App* table = app.add_subcommand("table", "Inspect and maintain a Delta table");
  table->require_subcommand(1);
  CLI::App* info = table->add_subcommand("info", "Version, protocol, schema and size");
  AddReadOptions(info, args.get(), true);
  CLI::App* files = table->add_subcommand("files", "The live data files");
  AddReadOptions(files, args.get(), true);
  CLI::App* history = table->add_subcommand("history", "The commits, newest first");
  AddReadOptions(history, args.get(), false);
  history->add_option("--limit", args->limit, "show at most N commits (0: all)");
  return [args, info, files, history]() {
    if (info->parsed()) return Report(Info(*args));
    if (files->parsed()) return Report(Files(*args));
    if (history->parsed()) return Report(History(*args));
    return kExitUsage;
  };
}

}  // namespace ampdelta::cli

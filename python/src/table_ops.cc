#include "table_ops.h"

#include <chrono>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::python {
namespace {

using nlohmann::json;
using Store = std::shared_ptr<storage::ObjectStore>;

arrow::Status Bad(const std::string& what) { return InvalidInputError(what); }

json OptionalVersion(const std::optional<delta::Version>& version) {
  return version ? json(*version) : json(nullptr);
}

arrow::Result<json> History(const Store& store, const json& args) {
  const int64_t limit = args.value("limit", int64_t{0});
  if (limit < 0) return Bad("history(): limit must be at least 0");
  ARROW_ASSIGN_OR_RAISE(auto history,
                        delta::ReadHistory(*store, static_cast<size_t>(limit)));
  json out = json::array();
  for (const auto& entry : history) {
    json item = {{"version", entry.version}, {"timestamp", entry.timestamp_ms}};
    if (entry.commit_info) {
      const delta::CommitInfo& info = *entry.commit_info;
      // When the writer says it committed, as Spark and delta-rs report it.
      if (info.in_commit_timestamp) {
        item["timestamp"] = *info.in_commit_timestamp;
      } else if (info.timestamp) {
        item["timestamp"] = *info.timestamp;
      }
      item["operation"] = info.operation;
      item["operationParameters"] = info.operation_parameters;
      item["operationMetrics"] = info.operation_metrics;
      item["readVersion"] = info.read_version ? json(*info.read_version) : json(nullptr);
      item["isBlindAppend"] =
          info.is_blind_append ? json(*info.is_blind_append) : json(nullptr);
      item["engineInfo"] = info.engine_info;
    }
    out.push_back(std::move(item));
  }
  return out;
}

arrow::Result<json> Optimize(const Store& store, const json& args) {
  delta::OptimizeOptions options;
  options.target_size = args.value("target_size", options.target_size);
  if (options.target_size < 1) return Bad("optimize(): target_size must be positive");
  ARROW_ASSIGN_OR_RAISE(options.files.codec, delta::ParseCodec(args.value(
                                                 "compression", std::string("zstd"))));
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Optimize(store, options));
  return json{{"version", OptionalVersion(result.version)},
              {"files_removed", result.files_removed},
              {"files_added", result.files_added},
              {"partitions_optimized", result.partitions_optimized},
              {"rows", result.rows}};
}

arrow::Result<json> Vacuum(const Store& store, const json& args) {
  delta::VacuumOptions options;
  if (args.contains("retention_hours") && !args["retention_hours"].is_null()) {
    options.retention_hours = args["retention_hours"].get<double>();
    if (*options.retention_hours < 0) {
      return Bad("vacuum(): retention_hours must be at least 0");
    }
  }
  options.dry_run = args.value("dry_run", false);
  options.enforce_retention = args.value("enforce_retention_duration", true);
  options.full = args.value("full", false);
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Vacuum(store, options));
  return json{{"dry_run", result.dry_run},
              {"files_deleted", result.files.size()},
              {"files", result.files},
              {"bytes", result.bytes},
              {"temporary_files", result.temporary_files},
              {"leases_expired", result.leases_expired}};
}

arrow::Result<json> Delete(const Store& store, const json& args) {
  delta::DeleteResult result;
  if (!args.contains("predicate") || args["predicate"].is_null()) {
    ARROW_ASSIGN_OR_RAISE(result, delta::DeleteAllRows(store));
  } else {
    if (!args["predicate"].is_string())
      return Bad("delete(): predicate must be a string");
    ARROW_ASSIGN_OR_RAISE(result,
                          delta::DeleteRows(store, args["predicate"].get<std::string>()));
  }
  return json{{"version", OptionalVersion(result.version)},
              {"rows_deleted", result.rows_deleted},
              {"files_removed", result.files_removed},
              {"files_added", result.files_added},
              {"rows_copied", result.rows_copied},
              {"files_skipped", result.files_skipped}};
}

arrow::Result<json> Restore(const Store& store, const json& args) {
  if (!args.contains("version") || !args["version"].is_number_integer() ||
      args["version"].get<int64_t>() < 0) {
    return Bad("restore(): version must be a table version (an integer >= 0)");
  }
  const delta::Version target = args["version"].get<int64_t>();
  ARROW_ASSIGN_OR_RAISE(auto report, delta::Restore(store, target));
  return json{{"version", report.version}, {"restored_version", target}};
}

arrow::Result<json> Checkpoint(const Store& store) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ARROW_ASSIGN_OR_RAISE(auto info, delta::WriteCheckpoint(*snapshot, now));
  return json{{"version", info.version},
              {"actions", info.num_actions},
              {"files", info.num_add_files},
              {"bytes", info.size_in_bytes}};
}

arrow::Result<json> Dispatch(const Store& store, const std::string& operation,
                             const json& args) {
  if (operation == "version") {
    ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
    return json{{"version", snapshot->version()}};
  }
  if (operation == "history") return History(store, args);
  if (operation == "optimize") return Optimize(store, args);
  if (operation == "vacuum") return Vacuum(store, args);
  if (operation == "delete") return Delete(store, args);
  if (operation == "restore") return Restore(store, args);
  if (operation == "checkpoint") return Checkpoint(store);
  return Bad("unknown table operation '" + operation + "'");
}

}  // namespace

arrow::Result<std::string> RunTableOperation(const std::string& path,
                                             const std::string& storage_options_json,
                                             const std::string& operation,
                                             const std::string& args_json) {
  const json options = json_util::ParseJson(storage_options_json);
  const json args = json_util::ParseJson(args_json);
  if (!options.is_object() || !args.is_object()) {
    return Bad("table operations take JSON objects");
  }
  std::map<std::string, std::string> storage_options;
  for (const auto& [key, value] : options.items()) {
    if (!value.is_string()) {
      return Bad("storage_options['" + key + "'] must be a string");
    }
    storage_options[key] = value.get<std::string>();
  }
  ARROW_ASSIGN_OR_RAISE(Store store, storage::OpenObjectStore(path, storage_options));
  // A type mismatch in `args` (the Python layer passes them checked) is a bad argument.
  try {
    ARROW_ASSIGN_OR_RAISE(json out, Dispatch(store, operation, args));
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const json::exception& error) {
    return Bad(operation + "(): " + error.what());
  }
}

}  // namespace ampdelta::python

#include "ampdelta/loader/config.h"

#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

using nlohmann::json;

template <typename... Args>
arrow::Status ConfigError(Args&&... args) {
  return MakeError(
      ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
      "Invalid DeltaLakeLoader configuration: ", std::forward<Args>(args)...);
}

// Keys that users pass to the connection but belong to load().
const std::map<std::string, std::string>& LoadOptionHints() {
  static const std::map<std::string, std::string> hints = {
      {"batch_size", "batch_size belongs to load(), not the connection"},
      {"mode", "mode belongs to load()"},
      {"read_all", "read_all belongs to load()"},
      {"stream", "stream belongs to load()"},
      {"writer_properties", "writer_properties belongs to load()"},
      {"merge_keys", "merge_keys belongs to load()"},
      {"engine", "engine is not an ampdelta option"},
      {"large_dtypes", "large_dtypes is not an ampdelta option"},
  };
  return hints;
}

arrow::Result<bool> Bool(const json& value, const std::string& key) {
  if (!value.is_boolean()) {
    return ConfigError("'", key, "' must be a boolean, got ",
                       json_util::DumpJsonLossy(value));
  }
  return value.get<bool>();
}

arrow::Result<int64_t> PositiveInt(const json& value, const std::string& key) {
  const std::optional<int64_t> number = json_util::AsInt64(value);
  if (!number || *number <= 0) {
    return ConfigError("'", key, "' must be a positive integer, got ",
                       json_util::DumpJsonLossy(value));
  }
  return *number;
}

}  // namespace

arrow::Result<DeltaLakeConfig> ParseDeltaLakeConfig(const std::string& text) {
  json doc = json_util::ParseJson(text);
  if (doc.is_discarded() || !doc.is_object()) {
    return ConfigError("the configuration must be a JSON object");
  }
  DeltaLakeConfig config;
  bool has_path = false;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    const json& value = *it;
    if (key == "table_path") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        return ConfigError("'table_path' must be a non-empty string");
      }
      config.table_path = value.get<std::string>();
      has_path = true;
    } else if (key == "storage_options") {
      if (!value.is_object()) return ConfigError("'storage_options' must be an object");
      for (auto option = value.begin(); option != value.end(); ++option) {
        config.storage_options[option.key()] = option->is_string()
                                                   ? option->get<std::string>()
                                                   : json_util::DumpJsonLossy(*option);
      }
    } else if (key == "table_properties") {
      if (!value.is_object()) return ConfigError("'table_properties' must be an object");
      for (auto property = value.begin(); property != value.end(); ++property) {
        if (!property->is_string() && !property->is_boolean() &&
            !property->is_number_integer()) {
          return ConfigError("table property '", property.key(),
                             "' must be a string, a boolean or a whole number");
        }
        config.table_properties[property.key()] =
            property->is_string() ? property->get<std::string>() : property->dump();
      }
      ARROW_ASSIGN_OR_RAISE(config.table_properties,
                            delta::NormalizeTableProperties(config.table_properties));
    } else if (key == "partition_by") {
      if (value.is_null()) continue;
      if (!value.is_array())
        return ConfigError("'partition_by' must be a list of strings");
      for (const auto& item : value) {
        if (!item.is_string())
          return ConfigError("'partition_by' must be a list of strings");
        config.partition_by.push_back(item.get<std::string>());
      }
    } else if (key == "cluster_by") {
      if (value.is_null()) continue;
      if (!value.is_array()) return ConfigError("'cluster_by' must be a list of strings");
      config.cluster_by.emplace();
      for (const auto& item : value) {
        if (!item.is_string())
          return ConfigError("'cluster_by' must be a list of strings");
        config.cluster_by->push_back(item.get<std::string>());
      }
    } else if (key == "optimize_after_write") {
      ARROW_ASSIGN_OR_RAISE(config.optimize_after_write, Bool(value, key));
    } else if (key == "vacuum_after_write") {
      ARROW_ASSIGN_OR_RAISE(config.vacuum_after_write, Bool(value, key));
    } else if (key == "merge_schema") {
      ARROW_ASSIGN_OR_RAISE(config.merge_schema, Bool(value, key));
    } else if (key == "type_mapping") {
      if (value == "lossless") {
        config.integer_mapping = delta::IntegerMapping::kLossless;
      } else if (value == "deltalake") {
        config.integer_mapping = delta::IntegerMapping::kSameWidth;
      } else {
        return ConfigError(
            "'type_mapping' must be \"lossless\" (uint32 -> long, the default) or "
            "\"deltalake\" (uint32 -> integer, as the Python SDK's tables)");
      }
    } else if (key == "schema_evolution") {
      ARROW_ASSIGN_OR_RAISE(config.schema_evolution, Bool(value, key));
    } else if (key == "file_size_hint") {
      if (!value.is_null()) {
        ARROW_ASSIGN_OR_RAISE(config.file_size_hint, PositiveInt(value, key));
      }
    } else if (key == "max_rows_per_file") {
      if (!value.is_null()) {
        ARROW_ASSIGN_OR_RAISE(config.max_rows_per_file, PositiveInt(value, key));
      }
    } else if (key == "max_rows_per_group") {
      if (!value.is_null()) {
        ARROW_ASSIGN_OR_RAISE(config.max_rows_per_group, PositiveInt(value, key));
      }
    } else if (key == "state") {
      if (!value.is_object()) return ConfigError("'state' must be an object");
      for (auto field = value.begin(); field != value.end(); ++field) {
        const std::string name = "state." + field.key();
        if (field.key() == "enabled") {
          ARROW_ASSIGN_OR_RAISE(config.state.enabled, Bool(*field, name));
        } else if (field.key() == "store_batch_id") {
          ARROW_ASSIGN_OR_RAISE(config.state.store_batch_id, Bool(*field, name));
        } else if (field.key() == "cursor_in_log") {
          ARROW_ASSIGN_OR_RAISE(config.state.cursor_in_log, Bool(*field, name));
        } else if (field.key() == "store_full_metadata") {
          ARROW_ASSIGN_OR_RAISE(config.state.store_full_metadata, Bool(*field, name));
        } else if (field.key() == "storage" || field.key() == "data_dir") {
          if (!field->is_string()) return ConfigError("'", name, "' must be a string");
          (field.key() == "storage" ? config.state.storage : config.state.data_dir) =
              field->get<std::string>();
        } else {
          return ConfigError("unknown key '", name, "'");
        }
      }
    } else if (key == "resilience") {
      if (!value.is_object()) return ConfigError("'resilience' must be an object");
      for (auto section = value.begin(); section != value.end(); ++section) {
        if (section.key() == "back_pressure")
          continue;  // accepted; adaptive pacing is internal
        if (section.key() != "retry" || !section->is_object()) {
          return ConfigError("unknown key 'resilience.", section.key(), "'");
        }
        for (auto field = section->begin(); field != section->end(); ++field) {
          const std::string name = "resilience.retry." + field.key();
          const json& v = *field;
          if (field.key() == "enabled" || field.key() == "jitter") {
            ARROW_ASSIGN_OR_RAISE(bool flag, Bool(v, name));
            (field.key() == "enabled" ? config.retry.enabled : config.retry.jitter) =
                flag;
          } else if (field.key() == "max_retries") {
            // get<int>() would wrap a larger value around.
            const std::optional<int64_t> retries = json_util::AsInt64(v);
            if (!retries || *retries < 0 || *retries > std::numeric_limits<int>::max()) {
              return ConfigError("'", name, "' must be an integer from 0 to ",
                                 std::numeric_limits<int>::max(), ", got ",
                                 json_util::DumpJsonLossy(v));
            }
            config.retry.max_retries = static_cast<int>(*retries);
          } else if (field.key() == "initial_backoff_ms" ||
                     field.key() == "max_backoff_ms") {
            ARROW_ASSIGN_OR_RAISE(int64_t ms, PositiveInt(v, name));
            (field.key() == "initial_backoff_ms" ? config.retry.initial_backoff_ms
                                                 : config.retry.max_backoff_ms) = ms;
          } else if (field.key() == "backoff_multiplier") {
            // Bounded: a huge factor overflows the delay to infinity on the second retry.
            if (!v.is_number() || !std::isfinite(v.get<double>()) ||
                v.get<double>() < 1.0 || v.get<double>() > 1000.0) {
              return ConfigError("'", name, "' must be a number from 1 to 1000, got ",
                                 json_util::DumpJsonLossy(v));
            }
            config.retry.backoff_multiplier = v.get<double>();
          } else {
            return ConfigError("unknown key '", name, "'");
          }
        }
      }
    } else if (key == "checkpoint" || key == "idempotency") {
      continue;  // legacy keys the Python SDK ignores too
    } else {
      auto hint = LoadOptionHints().find(key);
      return ConfigError(
          "unknown key '", key, "'",
          hint == LoadOptionHints().end() ? "" : " (" + hint->second + ")");
    }
  }
  if (!has_path) return ConfigError("'table_path' is required");
  return config;
}

}  // namespace ampdelta::loader

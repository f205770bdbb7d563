#include "ampdelta/loader/common/config.h"

#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/reader_support.h"
#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

using nlohmann::json;

template <typename... Args>
arrow::Status ConfigError(Args&&... args) {
  return InvalidInputError("Invalid DeltaLakeLoader configuration: ",
                           std::forward<Args>(args)...);
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

arrow::Result<std::map<std::string, std::string>> StorageOptions(const json& value) {
  if (!value.is_object()) return ConfigError("'storage_options' must be an object");
  std::map<std::string, std::string> options;
  for (auto option = value.begin(); option != value.end(); ++option) {
    options[option.key()] = option->is_string() ? option->get<std::string>()
                                                : json_util::DumpJsonLossy(*option);
  }
  return options;
}

arrow::Result<std::map<std::string, std::string>> TableProperties(const json& value) {
  if (!value.is_object()) return ConfigError("'table_properties' must be an object");
  std::map<std::string, std::string> properties;
  for (auto property = value.begin(); property != value.end(); ++property) {
    if (!property->is_string() && !property->is_boolean() &&
        !property->is_number_integer()) {
      return ConfigError("table property '", property.key(),
                         "' must be a string, a boolean or a whole number");
    }
    properties[property.key()] =
        property->is_string() ? property->get<std::string>() : property->dump();
  }
  return delta::NormalizeTableProperties(properties);
}

arrow::Result<std::vector<std::string>> StringList(const json& value,
                                                   const std::string& key) {
  if (!value.is_array()) return ConfigError("'", key, "' must be a list of strings");
  std::vector<std::string> items;
  for (const auto& item : value) {
    if (!item.is_string()) return ConfigError("'", key, "' must be a list of strings");
    items.push_back(item.get<std::string>());
  }
  return items;
}

arrow::Result<delta::WideIntegers> WideIntegersOf(const json& value) {
  if (value == "string") return delta::WideIntegers::kString;
  if (value == "decimal") return delta::WideIntegers::kDecimal;
  return ConfigError(
      "'wide_integers' must be \"string\" (decimal text, every value: the default) or "
      "\"decimal\" (decimal(38, 0): a value with more digits fails the load)");
}

arrow::Result<delta::Unsigned64> Unsigned64Of(const json& value) {
  if (value == "auto") return delta::Unsigned64::kAuto;
  if (value == "decimal") return delta::Unsigned64::kDecimal;
  if (value == "long") return delta::Unsigned64::kLong;
  return ConfigError(
      "'uint64' must be \"auto\" (columns long, fields of structs and lists "
      "decimal(20,0): the default), \"decimal\" (every uint64 but block numbers "
      "decimal(20,0)) or \"long\" (a value above 2^63-1 fails the load)");
}

arrow::Result<delta::IntegerMapping> IntegerMappingOf(const json& value) {
  if (value == "lossless") return delta::IntegerMapping::kLossless;
  if (value == "deltalake") return delta::IntegerMapping::kSameWidth;
  return ConfigError(
      "'type_mapping' must be \"lossless\" (uint32 -> long, the default) or "
      "\"deltalake\" (uint32 -> integer, as the Python SDK's tables)");
}

arrow::Status ParseState(const json& value, StateConfig* state) {
  if (!value.is_object()) return ConfigError("'state' must be an object");
  for (auto field = value.begin(); field != value.end(); ++field) {
    const std::string name = "state." + field.key();
    if (field.key() == "enabled") {
      ARROW_ASSIGN_OR_RAISE(state->enabled, Bool(*field, name));
    } else if (field.key() == "store_batch_id") {
      ARROW_ASSIGN_OR_RAISE(state->store_batch_id, Bool(*field, name));
    } else if (field.key() == "cursor_in_log") {
      ARROW_ASSIGN_OR_RAISE(state->cursor_in_log, Bool(*field, name));
    } else if (field.key() == "store_full_metadata") {
      ARROW_ASSIGN_OR_RAISE(state->store_full_metadata, Bool(*field, name));
    } else if (field.key() == "storage" || field.key() == "data_dir") {
      if (!field->is_string()) return ConfigError("'", name, "' must be a string");
      (field.key() == "storage" ? state->storage : state->data_dir) =
          field->get<std::string>();
    } else {
      return ConfigError("unknown key '", name, "'");
    }
  }
  return arrow::Status::OK();
}

arrow::Status ParseRetryField(const std::string& field, const json& v,
                              RetryConfig* retry) {
  const std::string name = "resilience.retry." + field;
  if (field == "enabled" || field == "jitter") {
    ARROW_ASSIGN_OR_RAISE(bool flag, Bool(v, name));
    (field == "enabled" ? retry->enabled : retry->jitter) = flag;
  } else if (field == "max_retries") {
    // get<int>() would wrap a larger value around.
    const std::optional<int64_t> retries = json_util::AsInt64(v);
    if (!retries || *retries < 0 || *retries > std::numeric_limits<int>::max()) {
      return ConfigError("'", name, "' must be an integer from 0 to ",
                         std::numeric_limits<int>::max(), ", got ",
                         json_util::DumpJsonLossy(v));
    }
    retry->max_retries = static_cast<int>(*retries);
  } else if (field == "initial_backoff_ms" || field == "max_backoff_ms") {
    ARROW_ASSIGN_OR_RAISE(int64_t ms, PositiveInt(v, name));
    (field == "initial_backoff_ms" ? retry->initial_backoff_ms : retry->max_backoff_ms) =
        ms;
  } else if (field == "backoff_multiplier") {
    // Bounded: a huge factor overflows the delay to infinity on the second retry.
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 1.0 ||
        v.get<double>() > 1000.0) {
      return ConfigError("'", name, "' must be a number from 1 to 1000, got ",
                         json_util::DumpJsonLossy(v));
    }
    retry->backoff_multiplier = v.get<double>();
  } else {
    return ConfigError("unknown key '", name, "'");
  }
  return arrow::Status::OK();
}

arrow::Status ParseResilience(const json& value, RetryConfig* retry) {
  if (!value.is_object()) return ConfigError("'resilience' must be an object");
  for (auto section = value.begin(); section != value.end(); ++section) {
    if (section.key() == "back_pressure")
      continue;  // accepted; adaptive pacing is internal
    if (section.key() != "retry" || !section->is_object()) {
      return ConfigError("unknown key 'resilience.", section.key(), "'");
    }
    for (auto field = section->begin(); field != section->end(); ++field) {
      ARROW_RETURN_NOT_OK(ParseRetryField(field.key(), *field, retry));
    }
  }
  return arrow::Status::OK();
}

arrow::Status OptionalPositive(const json& value, const std::string& key,
                               std::optional<int64_t>* out) {
  if (value.is_null()) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(*out, PositiveInt(value, key));
  return arrow::Status::OK();
}

// One key of the configuration into `config`.
arrow::Status ParseKey(const std::string& key, const json& value,
                       DeltaLakeConfig* config) {
  if (key == "table_path") {
    if (!value.is_string() || value.get<std::string>().empty()) {
      return ConfigError("'table_path' must be a non-empty string");
    }
    if (value.get<std::string>().find('\0') != std::string::npos) {
      return ConfigError("'table_path' contains a NUL byte");
    }
    config->table_path = value.get<std::string>();
  } else if (key == "storage_options") {
    ARROW_ASSIGN_OR_RAISE(config->storage_options, StorageOptions(value));
  } else if (key == "table_properties") {
    ARROW_ASSIGN_OR_RAISE(config->table_properties, TableProperties(value));
  } else if (key == "readers") {
    if (value.is_null()) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto names, StringList(value, key));
    ARROW_ASSIGN_OR_RAISE(config->readers, delta::ParseReaderNames(names));
  } else if (key == "partition_by") {
    if (value.is_null()) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(config->partition_by, StringList(value, key));
  } else if (key == "cluster_by") {
    if (value.is_null()) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(config->cluster_by, StringList(value, key));
  } else if (key == "optimize_after_write") {
    ARROW_ASSIGN_OR_RAISE(config->optimize_after_write, Bool(value, key));
  } else if (key == "vacuum_after_write") {
    ARROW_ASSIGN_OR_RAISE(config->vacuum_after_write, Bool(value, key));
  } else if (key == "merge_schema") {
    ARROW_ASSIGN_OR_RAISE(config->merge_schema, Bool(value, key));
  } else if (key == "type_mapping") {
    ARROW_ASSIGN_OR_RAISE(config->integer_mapping, IntegerMappingOf(value));
  } else if (key == "wide_integers") {
    ARROW_ASSIGN_OR_RAISE(config->wide_integers, WideIntegersOf(value));
  } else if (key == "uint64") {
    ARROW_ASSIGN_OR_RAISE(config->unsigned64, Unsigned64Of(value));
  } else if (key == "schema_evolution") {
    ARROW_ASSIGN_OR_RAISE(config->schema_evolution, Bool(value, key));
  } else if (key == "file_size_hint") {
    return OptionalPositive(value, key, &config->file_size_hint);
  } else if (key == "max_rows_per_file") {
    return OptionalPositive(value, key, &config->max_rows_per_file);
  } else if (key == "max_rows_per_group") {
    return OptionalPositive(value, key, &config->max_rows_per_group);
  } else if (key == "writer_threads") {
    ARROW_RETURN_NOT_OK(OptionalPositive(value, key, &config->writer_threads));
    if (config->writer_threads && *config->writer_threads > 64) {
      return arrow::Status::Invalid("Invalid DeltaLakeLoader configuration: ", key, "=",
                                    *config->writer_threads, " is more than 64");
    }
    return arrow::Status::OK();
  } else if (key == "memory_budget_mib") {
    ARROW_RETURN_NOT_OK(OptionalPositive(value, key, &config->memory_budget_mib));
    if (config->memory_budget_mib && *config->memory_budget_mib > (int64_t{1} << 30)) {
      return arrow::Status::Invalid("Invalid DeltaLakeLoader configuration: ", key, "=",
                                    *config->memory_budget_mib, " is too large");
    }
    return arrow::Status::OK();
  } else if (key == "state") {
    return ParseState(value, &config->state);
  } else if (key == "resilience") {
    return ParseResilience(value, &config->retry);
  } else if (key != "checkpoint" &&
             key != "idempotency") {  // legacy keys the SDK ignores
    auto hint = LoadOptionHints().find(key);
    return ConfigError("unknown key '", key, "'",
                       hint == LoadOptionHints().end() ? "" : " (" + hint->second + ")");
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<DeltaLakeConfig> ParseDeltaLakeConfig(const std::string& text) {
  json doc = json_util::ParseJson(text);
  if (doc.is_discarded() || !doc.is_object()) {
    return ConfigError("the configuration must be a JSON object");
  }
  DeltaLakeConfig config;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    ARROW_RETURN_NOT_OK(ParseKey(it.key(), *it, &config));
  }
  if (!doc.contains("table_path")) return ConfigError("'table_path' is required");
  return config;
}

}  // namespace ampdelta::loader

#include "ampdelta/delta/log/table_properties.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

std::optional<std::string> Find(const std::map<std::string, std::string>& config,
                                const std::string& key) {
  auto it = config.find(key);
  if (it != config.end()) return it->second;
  return std::nullopt;
}

// Leading blanks and a '+' are accepted, as std::stoll does; trailing text and values
// outside int64 are not.
std::optional<int64_t> ParseInt(const std::string& text) {
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start])))
    ++start;
  if (start < text.size() && text[start] == '+') ++start;
  return ParseInt64(std::string_view(text).substr(start));
}

}  // namespace

arrow::Result<int64_t> ParseIntervalMs(const std::string& text) {
  std::istringstream in(text);
  std::string first;
  in >> first;
  const std::string lowered = AsciiLower(first);
  std::string number_text = first;
  if (lowered == "interval") in >> number_text;
  std::string unit;
  in >> unit;
  unit = AsciiLower(unit);
  auto number = ParseInt(number_text);
  if (!number || unit.empty()) return arrow::Status::Invalid("bad interval '", text, "'");
  if (unit.back() == 's' && unit.size() > 1) unit.pop_back();
  static const std::map<std::string, double> kMillis = {
      {"nanosecond", 1e-6}, {"microsecond", 1e-3}, {"millisecond", 1}, {"second", 1e3},
      {"minute", 6e4},      {"hour", 3.6e6},       {"day", 8.64e7},    {"week", 6.048e8}};
  auto it = kMillis.find(unit);
  if (it == kMillis.end())
    return arrow::Status::Invalid("bad interval unit in '", text, "'");
  // A negative retention would make "now - retention" overflow, and a double beyond int64
  // has no defined conversion: refuse both (the caller keeps the default).
  const double millis = static_cast<double>(*number) * it->second;
  if (!(millis >= 0) || millis >= 9.2e18) {
    return arrow::Status::Invalid("interval '", text, "' is negative or too long");
  }
  return static_cast<int64_t>(millis);
}

TableProperties ParseTableProperties(const std::map<std::string, std::string>& config) {
  TableProperties props;
  auto interval = [&](const std::string& key, const std::string& legacy, int64_t* out) {
    auto value = Find(config, key);
    if (!value) value = Find(config, legacy);
    if (!value) return;
    auto parsed = ParseIntervalMs(*value);
    if (parsed.ok()) {
      *out = *parsed;
    } else {
      AMPDELTA_LOG_WARN("delta ignoring property ", key, "=", *value);
    }
  };
  auto boolean = [&](const std::string& key, bool* out) {
    auto value = Find(config, key);
    if (!value) return;
    const std::string lowered = AsciiLower(*value);
    if (lowered == "true") *out = true;
    if (lowered == "false") *out = false;
  };
  if (auto value = Find(config, "delta.checkpointInterval")) {
    if (auto parsed = ParseInt(*value); parsed && *parsed > 0)
      props.checkpoint_interval = *parsed;
  }
  interval("delta.logRetentionDuration", "logRetentionDuration", &props.log_retention_ms);
  interval("delta.deletedFileRetentionDuration", "deletedFileRetentionDuration",
           &props.deleted_file_retention_ms);
  boolean("delta.enableExpiredLogCleanup", &props.enable_expired_log_cleanup);
  boolean("delta.appendOnly", &props.append_only);
  boolean("delta.enableChangeDataFeed", &props.enable_change_data_feed);
  boolean("delta.enableInCommitTimestamps", &props.enable_in_commit_timestamps);
  boolean("delta.enableDeletionVectors", &props.enable_deletion_vectors);
  if (auto value = Find(config, "delta.dataSkippingNumIndexedCols")) {
    if (auto parsed = ParseInt(*value)) props.data_skipping_num_indexed_cols = *parsed;
  }
  props.data_skipping_stats_columns = Find(config, "delta.dataSkippingStatsColumns");
  if (auto value = Find(config, "delta.targetFileSize")) {
    if (auto parsed = ParseInt(*value); parsed && *parsed > 0)
      props.target_file_size = *parsed;
  }
  if (auto value = Find(config, "delta.setTransactionRetentionDuration")) {
    if (auto parsed = ParseIntervalMs(*value); parsed.ok()) {
      props.set_transaction_retention_ms = *parsed;
    }
  }
  return props;
}

arrow::Status ValidateTableProperties(const std::map<std::string, std::string>& config) {
  auto bad = [](const std::string& key, const std::string& value, const char* expected) {
    return InvalidInputError("table property ", key, "='", value, "' is not ", expected);
  };
  auto unwritable = [](const std::string& key, const std::string& value,
                       const char* feature) {
    return InvalidInputError("table property ", key, "='", value, "' needs ", feature,
                             ", which ampdelta does not write");
  };
  for (const auto& [key, value] : config) {
    const std::string lowered = AsciiLower(value);
    if (key == "delta.columnMapping.mode" && lowered != "none" && lowered != "name" &&
        lowered != "id") {
      return bad(key, value, "none, name or id");
    }
    if (key.rfind("delta.rowTracking.", 0) == 0) {
      return InvalidInputError("table property ", key,
                               " is row tracking's own: the writer that enables "
                               "delta.enableRowTracking names its columns");
    }
    if (key == "delta.checkpointPolicy" && lowered != "classic" && lowered != "v2") {
      return bad(key, value, "classic or v2");
    }
    if (key.rfind("delta.constraints.", 0) == 0) {
      return unwritable(key, value, "CHECK constraints");
    }
    if (key.rfind("delta.feature.", 0) == 0 || key == "delta.minReaderVersion" ||
        key == "delta.minWriterVersion") {
      return InvalidInputError("table property ", key,
                               " sets the protocol directly; ampdelta chooses it from "
                               "the properties that need it (e.g. "
                               "delta.enableChangeDataFeed=true)");
    }
    if (key == "delta.logRetentionDuration" ||
        key == "delta.deletedFileRetentionDuration" ||
        key == "delta.setTransactionRetentionDuration" || key == "logRetentionDuration" ||
        key == "deletedFileRetentionDuration") {
      if (!ParseIntervalMs(value).ok()) {
        return bad(key, value, "an interval such as 'interval 7 days'");
      }
    } else if (key == "delta.checkpointInterval" || key == "delta.targetFileSize") {
      auto parsed = ParseInt(value);
      if (!parsed || *parsed <= 0) return bad(key, value, "a positive whole number");
    } else if (key == "delta.dataSkippingNumIndexedCols") {
      auto parsed = ParseInt(value);
      if (!parsed || *parsed < -1)
        return bad(key, value, "a whole number of at least -1");
    } else if (key == "delta.appendOnly" || key == "delta.enableExpiredLogCleanup" ||
               key == "delta.enableChangeDataFeed" ||
               key == "delta.enableDeletionVectors" ||
               key == "delta.enableInCommitTimestamps" ||
               key == "delta.enableTypeWidening" || key == "delta.enableRowTracking") {
      if (lowered != "true" && lowered != "false")
        return bad(key, value, "true or false");
    }
  }
  return arrow::Status::OK();
}

namespace {

// The `delta.*` table properties a table may be given (Spark's names), and whether the
// value is a boolean.
const std::map<std::string, bool>& KnownProperties() {
  static const std::map<std::string, bool> known = {
      {"delta.appendOnly", true},
      {"delta.autoOptimize.autoCompact", false},
      {"delta.autoOptimize.optimizeWrite", true},
      {"delta.checkpoint.writeStatsAsJson", true},
      {"delta.checkpoint.writeStatsAsStruct", true},
      {"delta.checkpointInterval", false},
      {"delta.checkpointPolicy", false},
      {"delta.checkpointRetentionDuration", false},
      {"delta.columnMapping.mode", false},
      {"delta.compatibility.symlinkFormatManifest.enabled", true},
      {"delta.dataSkippingNumIndexedCols", false},
      {"delta.dataSkippingStatsColumns", false},
      {"delta.deletedFileRetentionDuration", false},
      {"delta.enableChangeDataFeed", true},
      {"delta.enableDeletionVectors", true},
      {"delta.enableExpiredLogCleanup", true},
      {"delta.enableInCommitTimestamps", true},
      {"delta.enableRowTracking", true},
      {"delta.enableTypeWidening", true},
      {"delta.isolationLevel", false},
      {"delta.logRetentionDuration", false},
      {"delta.randomizeFilePrefixes", true},
      {"delta.randomPrefixLength", false},
      {"delta.setTransactionRetentionDuration", false},
      {"delta.targetFileSize", false},
      {"delta.tuneFileSizesForRewrites", true},
  };
  return known;
}

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

}  // namespace

arrow::Result<std::map<std::string, std::string>> NormalizeTableProperties(
    const std::map<std::string, std::string>& config) {
  std::map<std::string, std::string> out;
  for (const auto& [given, given_value] : config) {
    std::string key = Trim(given);
    std::string value = Trim(given_value);
    if (AsciiLower(key).rfind("delta.", 0) == 0) {
      const bool explicit_protocol =
          AsciiLower(key).rfind("delta.feature.", 0) == 0 ||
          AsciiLower(key).rfind("delta.constraints.", 0) == 0 ||
          AsciiLower(key) == "delta.minreaderversion" ||
          AsciiLower(key) == "delta.minwriterversion";
      const auto& known = KnownProperties();
      auto match = std::find_if(known.begin(), known.end(), [&](const auto& entry) {
        return AsciiLower(entry.first) == AsciiLower(key);
      });
      if (match != known.end()) {
        key = match->first;
        if (match->second) value = AsciiLower(value);
        if (key == "delta.checkpointPolicy" || key == "delta.columnMapping.mode") {
          value = AsciiLower(value);
        }
      } else if (explicit_protocol) {
        return InvalidInputError("table property ", given,
                                 " sets the protocol directly; ampdelta chooses it from "
                                 "the properties that need it (e.g. "
                                 "delta.enableChangeDataFeed=true)");
      } else {
        std::string names;
        for (const auto& [name, boolean] : known)
          names += (names.empty() ? "" : ", ") + name;
        return InvalidInputError("unknown table property '", given, "'; the delta.* ",
                                 "properties are ", names);
      }
    }
    if (out.count(key) != 0) {
      return InvalidInputError("table property ", key, " is given twice");
    }
    out[key] = value;
  }
  ARROW_RETURN_NOT_OK(ValidateTableProperties(out));
  return out;
}

}  // namespace ampdelta::delta

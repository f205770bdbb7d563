#include "ampdelta/delta/log/log_path.h"

#include <cctype>
#include <charconv>
#include <limits>

#include "ampdelta/util/percent_encoding.h"

namespace ampdelta::delta {
namespace {

bool AllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Versions and part numbers stop one below INT64_MAX, so that the next one (version + 1)
// can always be computed without overflow.
std::optional<int64_t> ToNumber(std::string_view text) {
  if (!AllDigits(text)) return std::nullopt;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value == std::numeric_limits<int64_t>::max()) return std::nullopt;
  return value;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::string VersionDigits(Version version) {
  std::string digits = std::to_string(version);
  if (digits.size() < 20) digits.insert(0, 20 - digits.size(), '0');
  return digits;
}

std::string CommitPath(Version version) {
  return std::string(kLogDir) + "/" + VersionDigits(version) + ".json";
}

std::string CheckpointPath(Version version) {
  return std::string(kLogDir) + "/" + VersionDigits(version) + ".checkpoint.parquet";
}

std::string V2CheckpointPath(Version version, const std::string& uuid) {
  return std::string(kLogDir) + "/" + VersionDigits(version) + ".checkpoint." + uuid +
         ".parquet";
}

std::string SidecarPath(const std::string& path) {
  if (path.find(':') != std::string::npos || (!path.empty() && path.front() == '/'))
    return path;
  return std::string(kLogDir) + "/_sidecars/" + path;
}

std::string LastCheckpointPath() { return std::string(kLogDir) + "/_last_checkpoint"; }

std::optional<ParsedLogPath> ParseLogPath(std::string_view key) {
  const std::string prefix = std::string(kLogDir) + "/";
  if (key.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view name = key.substr(prefix.size());
  if (name.find('/') != std::string_view::npos)
    return std::nullopt;  // sidecars, _autostats
  ParsedLogPath parsed;
  parsed.path = std::string(key);
  if (name == "_last_checkpoint") {
    parsed.type = LogFileType::kLastCheckpoint;
    return parsed;
  }
  const size_t dot = name.find('.');
  if (dot != 20) return std::nullopt;
  auto version = ToNumber(name.substr(0, 20));
  if (!version) return std::nullopt;
  parsed.version = *version;
  std::string_view rest = name.substr(20);
  if (rest == ".json") {
    parsed.type = LogFileType::kCommit;
    return parsed;
  }
  if (rest == ".crc") {
    parsed.type = LogFileType::kChecksum;
    return parsed;
  }
  if (rest == ".checkpoint.parquet") {
    parsed.type = LogFileType::kCheckpoint;
    return parsed;
  }
  if (rest.substr(0, 12) == ".checkpoint.") {
    std::string_view tail = rest.substr(12);
    // <part:010>.<parts:010>.parquet
    if (tail.size() == 10 + 1 + 10 + 8 && tail[10] == '.' && EndsWith(tail, ".parquet")) {
      auto part = ToNumber(tail.substr(0, 10));
      auto parts = ToNumber(tail.substr(11, 10));
      // A part count beyond int32 would wrap around to a small one and make an
      // incomplete checkpoint look complete.
      if (part && parts && *part >= 1 && *part <= *parts &&
          *parts <= std::numeric_limits<int32_t>::max()) {
        parsed.type = LogFileType::kMultiPartCheckpoint;
        parsed.part = static_cast<int32_t>(*part);
        parsed.parts = static_cast<int32_t>(*parts);
        return parsed;
      }
      return std::nullopt;
    }
    // <uuid>.json | <uuid>.parquet
    if (EndsWith(tail, ".json") && tail.size() > 5) {
      parsed.type = LogFileType::kUuidCheckpointJson;
      return parsed;
    }
    if (EndsWith(tail, ".parquet") && tail.size() > 8) {
      parsed.type = LogFileType::kUuidCheckpointParquet;
      return parsed;
    }
    return std::nullopt;
  }
  // <x:020>.<y:020>.compacted.json
  if (rest.size() == 1 + 20 + 15 && rest[0] == '.' && EndsWith(rest, ".compacted.json")) {
    auto end = ToNumber(rest.substr(1, 20));
    if (!end) return std::nullopt;
    parsed.type = LogFileType::kCompaction;
    parsed.end_version = *end;
    return parsed;
  }
  return std::nullopt;
}

std::string DecodeLogPath(const std::string& path) { return PercentDecode(path); }

std::string EncodeLogPath(const std::string& key) {
  return PercentEncode(key, PercentEscape::kLogPath);
}

}  // namespace ampdelta::delta

#pragma once

/// \file log_path.h
/// \brief Names of the files in `_delta_log/` (PROTOCOL.md "Delta Log Entries",
/// "Checkpoints").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

/// \brief The log directory, relative to the table root.
inline constexpr std::string_view kLogDir = "_delta_log";

/// \brief What a `_delta_log/` file is.
enum class LogFileType : uint8_t {
  kCommit,                 // <v>.json
  kCheckpoint,             // <v>.checkpoint.parquet
  kMultiPartCheckpoint,    // <v>.checkpoint.<part>.<parts>.parquet
  kUuidCheckpointJson,     // <v>.checkpoint.<uuid>.json (V2)
  kUuidCheckpointParquet,  // <v>.checkpoint.<uuid>.parquet (V2)
  kChecksum,               // <v>.crc
  kCompaction,             // <x>.<y>.compacted.json
  kLastCheckpoint,         // _last_checkpoint
};

/// \brief A parsed log file name.
struct ParsedLogPath {
  /// Key relative to the table root (e.g. `_delta_log/00000000000000000003.json`).
  std::string path;
  LogFileType type = LogFileType::kCommit;
  Version version = 0;
  /// For compaction files: the last version covered.
  Version end_version = 0;
  /// For multi-part checkpoints: 1-based part and the number of parts.
  int32_t part = 0;
  int32_t parts = 0;
  int64_t size = 0;
  int64_t last_modified_ms = 0;

  /// \brief Return true for every kind of checkpoint file.
  bool is_checkpoint() const {
    return type == LogFileType::kCheckpoint ||
           type == LogFileType::kMultiPartCheckpoint ||
           type == LogFileType::kUuidCheckpointJson ||
           type == LogFileType::kUuidCheckpointParquet;
  }

  /// \brief Return true for a checkpoint complete in one file: classic, or UUID-named V2
  /// (whose sidecars are written before it).
  bool is_single_file_checkpoint() const {
    return is_checkpoint() && type != LogFileType::kMultiPartCheckpoint;
  }
};

/// \brief Parse a key under `_delta_log/`; nullopt for files that are not log entries
/// (temp files, `.crc` of Hadoop, sidecars, `_autostats`, …).
std::optional<ParsedLogPath> ParseLogPath(std::string_view key);

/// \brief Return `_delta_log/<version:020>.json`.
std::string CommitPath(Version version);

/// \brief Return `_delta_log/<version:020>.checkpoint.parquet`.
std::string CheckpointPath(Version version);

/// \brief Return `_delta_log/<version:020>.checkpoint.<uuid>.parquet`, a UUID-named V2
/// checkpoint.
std::string V2CheckpointPath(Version version, const std::string& uuid);

/// \brief Return where a V2 checkpoint's sidecar named `path` lies: an absolute path as
/// it is, a relative one under `_delta_log/_sidecars/`.
std::string SidecarPath(const std::string& path);

/// \brief Return `_delta_log/_last_checkpoint`.
std::string LastCheckpointPath();

/// \brief Return `<version>` zero-padded to 20 digits.
std::string VersionDigits(Version version);

/// \brief Percent-decode a log path once (`add.path` is an RFC 2396 URI).
std::string DecodeLogPath(const std::string& path);

/// \brief Percent-encode a table-relative file key for `add.path`: everything but
/// unreserved characters and `/=:@+!$&'(),;`.
std::string EncodeLogPath(const std::string& key);

}  // namespace ampdelta::delta

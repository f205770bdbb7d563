#pragma once

/// \file actions.h
/// \brief Delta log actions as plain structs (PROTOCOL.md "Actions").
///
/// Optional fields are std::optional and are omitted from JSON when unset, never written
/// as null. JSON (de)serialisation lives in action_json.h.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ampdelta/util/heap_optional.h"

namespace ampdelta::delta {

/// \brief A table version.
using Version = int64_t;

/// \brief Partition values and tags: a null value is a real JSON null.
using NullableStringMap = std::map<std::string, std::optional<std::string>>;

/// \brief `protocol`: the reader/writer versions and features a client needs.
struct Protocol {
  int32_t min_reader_version = 1;
  int32_t min_writer_version = 2;
  /// Present iff min_reader_version == 3.
  std::optional<std::vector<std::string>> reader_features;
  /// Present iff min_writer_version == 7.
  std::optional<std::vector<std::string>> writer_features;

  bool operator==(const Protocol&) const = default;
};

/// \brief `metaData.format`.
struct Format {
  std::string provider = "parquet";
  std::map<std::string, std::string> options;

  bool operator==(const Format&) const = default;
};

/// \brief `metaData`: schema, partitioning and table properties.
struct Metadata {
  std::string id;
  std::optional<std::string> name;
  std::optional<std::string> description;
  Format format;
  /// The schema as Delta's JSON (a string inside the action).
  std::string schema_string;
  std::vector<std::string> partition_columns;
  std::map<std::string, std::string> configuration;
  std::optional<int64_t> created_time;

  bool operator==(const Metadata&) const = default;
};

/// \brief `deletionVector` on add/remove (PROTOCOL.md "Deletion Vectors").
struct DeletionVectorDescriptor {
  /// `u` (relative UUID path), `i` (inline) or `p` (absolute path).
  std::string storage_type;
  std::string path_or_inline_dv;
  std::optional<int32_t> offset;
  int32_t size_in_bytes = 0;
  int64_t cardinality = 0;
  std::optional<int64_t> max_row_index;

  /// \brief Return `storageType + pathOrInlineDv [+ "@" + offset]`, the DV's identity.
  std::string UniqueId() const;

  bool operator==(const DeletionVectorDescriptor&) const = default;
};

/// \brief `add`: a data file that is part of the table.
struct Add {
  /// URI-encoded path, relative to the table root or absolute.
  std::string path;
  NullableStringMap partition_values;
  int64_t size = 0;
  int64_t modification_time = 0;
  bool data_change = true;
  /// Per-file statistics as a JSON string.
  std::optional<std::string> stats;
  // Rarely set: kept on the heap (a snapshot holds an `add` per live file).
  HeapOptional<NullableStringMap> tags;
  HeapOptional<DeletionVectorDescriptor> deletion_vector;
  std::optional<int64_t> base_row_id;
  std::optional<int64_t> default_row_commit_version;
  HeapOptional<std::string> clustering_provider;

  bool operator==(const Add&) const = default;
};

/// \brief `remove`: a tombstone for a file that left the table.
struct Remove {
  std::string path;
  std::optional<int64_t> deletion_timestamp;
  bool data_change = true;
  std::optional<bool> extended_file_metadata;
  std::optional<NullableStringMap> partition_values;
  std::optional<int64_t> size;
  // Rarely set: kept on the heap (a snapshot holds its tombstones).
  HeapOptional<std::string> stats;
  HeapOptional<NullableStringMap> tags;
  HeapOptional<DeletionVectorDescriptor> deletion_vector;
  std::optional<int64_t> base_row_id;
  std::optional<int64_t> default_row_commit_version;

  bool operator==(const Remove&) const = default;
};

/// \brief `txn`: an application's transaction id, committed with its data (exactly-once).
struct SetTransaction {
  std::string app_id;
  int64_t version = 0;
  std::optional<int64_t> last_updated;

  bool operator==(const SetTransaction&) const = default;
};

/// \brief `domainMetadata`.
struct DomainMetadata {
  std::string domain;
  std::string configuration;
  bool removed = false;

  bool operator==(const DomainMetadata&) const = default;
};

/// \brief `commitInfo`: free-form provenance. The fields ampdelta writes are typed; on
/// read, the whole object is kept as JSON text as well.
struct CommitInfo {
  std::optional<int64_t> timestamp;
  std::optional<int64_t> in_commit_timestamp;
  std::string operation;
  /// Values are strings, as Spark writes them (JSON text for structured values).
  std::map<std::string, std::string> operation_parameters;
  std::optional<int64_t> read_version;
  std::optional<std::string> isolation_level;
  std::optional<bool> is_blind_append;
  std::string engine_info;
  std::string txn_id;
  std::map<std::string, std::string> operation_metrics;
  /// Facts about the commit for other engines (`delta.rowTracking.preserved`).
  std::map<std::string, std::string> tags;
  /// The object exactly as read (empty for commitInfos built here).
  std::string raw_json;

  bool operator==(const CommitInfo&) const = default;
};

/// \brief `cdc`: a change-data file (read and ignored by snapshots).
struct Cdc {
  std::string path;
  NullableStringMap partition_values;
  int64_t size = 0;
  bool data_change = false;

  bool operator==(const Cdc&) const = default;
};

/// \brief `checkpointMetadata` (V2 checkpoints only).
struct CheckpointMetadata {
  Version version = 0;

  bool operator==(const CheckpointMetadata&) const = default;
};

/// \brief `sidecar` (V2 checkpoints only): a file holding add/remove rows.
struct Sidecar {
  std::string path;
  int64_t size_in_bytes = 0;
  int64_t modification_time = 0;

  bool operator==(const Sidecar&) const = default;
};

/// \brief Return the tombstone that removes `add` from the table, carrying its partition
/// values, size, statistics and deletion vector (extendedFileMetadata).
Remove RemoveFor(const Add& add, bool data_change = true);

/// \brief Any action.
using Action = std::variant<Protocol, Metadata, Add, Remove, SetTransaction,
                            DomainMetadata, CommitInfo, Cdc, CheckpointMetadata, Sidecar>;

}  // namespace ampdelta::delta

#pragma once

/// \file table_actions.h
/// \brief The `ampdelta table` subcommands' options and actions: inspection
/// (table_inspect.cc), writes (table_write.cc) and maintenance (table_maintain.cc);
/// table_command.cc wires them to the command line.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::cli {

/// \brief Every option of every `table` subcommand (each reads the ones it registered).
struct TableArgs {
  std::string path;
  std::vector<std::string> storage_options;
  bool json = false;
  std::optional<int64_t> version;
  std::string timestamp;
  size_t limit = 0;
  // write
  std::vector<std::string> inputs;
  std::string mode = "append";
  std::vector<std::string> partition_by;
  bool no_merge_schema = false;
  std::string compression = "zstd";
  std::optional<int> compression_level;
  int64_t target_file_size = 128 * 1024 * 1024;
  int64_t max_rows_per_file = 0;
  int64_t max_rows_per_group = 1'048'576;
  bool no_dictionary = false;
  std::vector<std::string> properties;
  std::vector<std::string> readers;
  std::string app_id;
  std::optional<int64_t> app_version;
  // maintenance
  int64_t target_size = 128 * 1024 * 1024;
  bool rewrite = false;  // optimize: no stitching
  delta::CheckpointOptions checkpoint;
  std::optional<double> retention_hours;
  bool dry_run = false;
  bool full = false;
  bool force = false;
  // delete / scan
  std::optional<std::string> where;
  bool all_rows = false;
  std::vector<std::string> columns;
  std::string format = "table";
};

/// \brief Open the store at `args.path` with `--storage-option`s.
arrow::Result<std::shared_ptr<storage::ObjectStore>> OpenTableStore(
    const TableArgs& args);
/// \brief Load the snapshot `--version` / `--timestamp` select (default: the latest).
arrow::Result<std::shared_ptr<const delta::Snapshot>> LoadSnapshot(const TableArgs& args);

/// \brief `table info`.
arrow::Status Info(const TableArgs& args);
/// \brief `table files`.
arrow::Status Files(const TableArgs& args);
/// \brief `table history`.
arrow::Status History(const TableArgs& args);
/// \brief `table scan`.
arrow::Status Scan(const TableArgs& args);
/// \brief `table write`.
arrow::Status Write(const TableArgs& args);
/// \brief `table delete`.
arrow::Status Delete(const TableArgs& args);
/// \brief `table checkpoint`.
arrow::Status Checkpoint(const TableArgs& args);
/// \brief `table optimize`.
arrow::Status Optimize(const TableArgs& args);
/// \brief `table vacuum`.
arrow::Status Vacuum(const TableArgs& args);
/// \brief `table restore`.
arrow::Status Restore(const TableArgs& args);

}  // namespace ampdelta::cli

// `ampdelta table …`: the subcommands' options; the actions are in table_actions.h.

#include <ctime>
#include <map>
#include <memory>
#include <string_view>

#include "ampdelta/storage/object_store_registry.h"
#include "commands.h"
#include "table_actions.h"

namespace ampdelta::cli {
namespace {

arrow::Result<int64_t> ParseTimestampArg(const std::string& text) {
  std::tm tm{};
  const char* formats[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"};
  for (const char* format : formats) {
    tm = {};
    const char* end = strptime(text.c_str(), format, &tm);
    if (end == nullptr) continue;
    // What `table history` prints: milliseconds (or finer) after the seconds, then Z.
    int64_t millis = 0;
    const bool has_time = std::string_view(format).find("%H") != std::string_view::npos;
    if (*end == '.' && has_time) {
      int digits = 0;
      for (++end; *end >= '0' && *end <= '9'; ++end, ++digits) {
        if (digits < 3) millis = millis * 10 + (*end - '0');
      }
      if (digits == 0) continue;
      for (; digits < 3; ++digits) millis *= 10;
    }
    if (*end == 'Z') ++end;
    if (*end != '\0') continue;
    const std::tm parsed = tm;
    const time_t seconds = timegm(&tm);
    // timegm normalises 2025-02-30 to March 2: a date that does not exist is refused.
    if (tm.tm_mday != parsed.tm_mday || tm.tm_mon != parsed.tm_mon ||
        tm.tm_year != parsed.tm_year || tm.tm_hour != parsed.tm_hour ||
        tm.tm_min != parsed.tm_min || tm.tm_sec != parsed.tm_sec) {
      return InvalidInputError("--timestamp '", text, "' is not a valid date and time");
    }
    return static_cast<int64_t>(seconds) * 1000 + millis;
  }
  return InvalidInputError("cannot parse timestamp '", text,
                           "' (use YYYY-MM-DD[THH:MM:SS[.mmm][Z]], UTC)");
}

}  // namespace

arrow::Result<std::shared_ptr<storage::ObjectStore>> OpenTableStore(
    const TableArgs& args) {
  std::map<std::string, std::string> options;
  std::string error;
  if (!ParseStorageOptions(args.storage_options, &options, &error)) {
    return InvalidInputError(error);
  }
  return storage::OpenObjectStore(args.path, options);
}

arrow::Result<std::shared_ptr<const delta::Snapshot>> LoadSnapshot(
    const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  delta::SnapshotOptions options;
  options.version = args.version;
  if (!args.timestamp.empty()) {
    ARROW_ASSIGN_OR_RAISE(int64_t ms, ParseTimestampArg(args.timestamp));
    options.timestamp_ms = ms;
  }
  return delta::Snapshot::Load(std::move(store), options);
}

namespace {

int Report(const arrow::Status& status) {
  if (status.ok()) return kExitOk;
  return Fail(status);
}

void AddReadOptions(CLI::App* cmd, TableArgs* args, bool time_travel) {
  cmd->add_option("path", args->path, "table path or URI")->required();
  cmd->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  cmd->add_flag("--json", args->json, "print JSON");
  if (time_travel) {
    auto* version = cmd->add_option("--version", args->version, "read this version")
                        ->check(IntegerAtLeast(0));
    cmd->add_option(
           "--timestamp", args->timestamp,
           "read the version current at this UTC time (YYYY-MM-DD[THH:MM:SS[.mmm][Z]])")
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
  history->add_option("--limit", args->limit, "show at most N commits (0: all)")
      ->check(UnsignedAtLeast(0));
  CLI::App* write = table->add_subcommand(
      "write", "Write Arrow IPC or Parquet files into the table as one commit");
  write->add_option("path", args->path, "table path or URI")->required();
  write->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  write->add_option("--input", args->inputs, "Arrow IPC (file/stream) or .parquet file")
      ->required();
  write->add_option("--mode", args->mode, "append, overwrite, error or ignore")
      ->capture_default_str();
  write
      ->add_option("--partition-by", args->partition_by, "partition columns (new tables)")
      ->delimiter(',');
  write->add_flag("--no-merge-schema", args->no_merge_schema,
                  "fail on any schema difference");
  write
      ->add_option("--compression", args->compression,
                   "zstd, snappy, gzip, lz4, brotli, uncompressed")
      ->capture_default_str();
  write->add_option("--compression-level", args->compression_level, "codec level");
  write
      ->add_option("--target-file-size", args->target_file_size,
                   "roll files at this size (bytes)")
      ->check(IntegerAtLeast(1))
      ->capture_default_str();
  write
      ->add_option("--max-rows-per-file", args->max_rows_per_file,
                   "roll files after N rows")
      ->check(IntegerAtLeast(0));
  write
      ->add_option("--max-rows-per-group", args->max_rows_per_group,
                   "Parquet row-group rows")
      ->check(IntegerAtLeast(1))
      ->capture_default_str();
  write->add_flag("--no-dictionary", args->no_dictionary,
                  "disable Parquet dictionary encoding");
  write->add_option(
      "--property", args->properties,
      "KEY=VALUE table property (delta.*): a new table is created with it, an "
      "existing one gets it in this commit; repeatable");
  write
      ->add_option(
          "--readers", args->readers,
          "engines that must read the table, e.g. spark,duckdb,polars,deltalake (also "
          "trino, athena, snowflake, bigquery, powerbi): a write whose table would "
          "need a feature one of them cannot read is refused")
      ->delimiter(',');
  write->add_option("--app-id", args->app_id, "commit an application transaction id");
  write
      ->add_option("--app-version", args->app_version,
                   "its version; skipped if already committed")
      ->check(IntegerAtLeast(0));
  CLI::App* del =
      table->add_subcommand("delete", "Delete rows (copy-on-write, one commit)");
  del->add_option("path", args->path, "table path or URI")->required();
  del->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  del->add_option("--where", args->where, "predicate, e.g. 'block_num >= 100'");
  del->add_flag("--all", args->all_rows, "delete every row (instead of --where)");
  CLI::App* checkpoint =
      table->add_subcommand("checkpoint", "Write a checkpoint of the latest version");
  checkpoint->add_option("path", args->path, "table path or URI")->required();
  checkpoint->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  checkpoint
      ->add_option("--sidecar-threshold", args->checkpoint.max_inline_file_actions,
                   "V2 checkpoints: file actions above which they go to sidecars")
      ->check(IntegerAtLeast(0))
      ->capture_default_str();
  checkpoint
      ->add_option("--sidecar-size", args->checkpoint.file_actions_per_sidecar,
                   "V2 checkpoints: the most file actions one sidecar holds")
      ->check(IntegerAtLeast(1))
      ->capture_default_str();
  CLI::App* scan = table->add_subcommand("scan", "Read rows (pruned by --where)");
  AddReadOptions(scan, args.get(), true);
  scan->add_option("--where", args->where, "predicate");
  scan->add_option("--columns", args->columns, "columns to read")->delimiter(',');
  scan->add_option("--format", args->format, "table, csv or count")
      ->check(CLI::IsMember({"table", "csv", "count"}));
  CLI::App* optimize =
      table->add_subcommand("optimize", "Compact small files (dataChange=false)");
  optimize->add_option("path", args->path, "table path or URI")->required();
  optimize->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  optimize->add_option("--target-size", args->target_size, "target file size in bytes")
      ->check(IntegerAtLeast(1))
      ->capture_default_str();
  optimize->add_option("--compression", args->compression, "Parquet codec")
      ->capture_default_str();
  optimize->add_flag("--rewrite", args->rewrite,
                     "decode and encode every file, never copy row groups as they are "
                     "(stitching)");
  CLI::App* vacuum = table->add_subcommand(
      "vacuum", "Delete files no version within the retention reads");
  vacuum->add_option("path", args->path, "table path or URI")->required();
  vacuum->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  vacuum->add_flag("--dry-run", args->dry_run, "list, delete nothing");
  // A finite number of hours, up to the engine's bound of 1,000,000 (about 114 years).
  vacuum
      ->add_option(
          "--retention-hours", args->retention_hours,
          "keep files versions of the last H hours read (default: the table's, 7 days)")
      ->check(FiniteNumberIn(0, 1'000'000));
  vacuum->add_flag("--full", args->full, "also delete files the log never mentions");
  vacuum->add_flag("--force", args->force, "allow a retention below the table's");
  CLI::App* restore =
      table->add_subcommand("restore", "Make the latest version equal an older one");
  restore->add_option("path", args->path, "table path or URI")->required();
  restore->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  restore->add_option("--version", args->version, "version to restore")
      ->required()
      ->check(IntegerAtLeast(0));
  return [args, info, files, history, write, del, checkpoint, scan, optimize, vacuum,
          restore]() {
    if (optimize->parsed()) return Report(Optimize(*args));
    if (vacuum->parsed()) return Report(Vacuum(*args));
    if (restore->parsed()) return Report(Restore(*args));
    if (info->parsed()) return Report(Info(*args));
    if (files->parsed()) return Report(Files(*args));
    if (history->parsed()) return Report(History(*args));
    if (write->parsed()) return Report(Write(*args));
    if (del->parsed()) return Report(Delete(*args));
    if (checkpoint->parsed()) return Report(Checkpoint(*args));
    if (scan->parsed()) return Report(Scan(*args));
    return kExitUsage;
  };
}

}  // namespace ampdelta::cli

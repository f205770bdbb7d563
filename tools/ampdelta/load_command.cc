// `ampdelta load`: run SQL on an Amp server and load the result into a Delta table.

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <nlohmann/json.hpp>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/backfill/parallel_loader.h"
#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/telemetry.h"
#include "ampdelta/loader/stream/stream_loader.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/utf8.h"
#include "commands.h"
#include "ops_endpoint.h"
#include "progress_reporter.h"
#include "stop_signals.h"

namespace ampdelta::cli {
namespace {

namespace telemetry = loader::telemetry;

struct LoadArgs {
  std::string server = "grpc://localhost:1602";
  std::optional<std::string> table;
  std::string sql;
  std::string mode = "append";
  std::vector<std::string> merge_keys;
  std::optional<int64_t> commit_every_rows;
  std::vector<std::string> partition_by;
  std::vector<std::string> cluster_by;
  std::string wide_integers;
  std::string unsigned64;
  std::vector<std::string> properties;
  std::vector<std::string> readers;
  std::string config;
  std::string compression = "zstd";
  std::optional<int> compression_level;
  std::string destination;
  std::string token;
  bool stream = false;
  bool no_reorg_detection = false;
  bool cursor_in_log = false;
  std::string takeover;
  std::string block_column = "block_num";
  uint64_t reorg_window = 256;
  int64_t compact_every = 100;
  std::optional<uint64_t> until_block;
  int64_t commit_interval_ms = 1000;
  int64_t commit_rows = 1'000'000;
  std::vector<std::string> storage_options;
  std::chrono::milliseconds plan_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds stall_warning{std::chrono::minutes(5)};
  std::optional<int64_t> batch_size;
  // Parallel backfills.
  std::optional<int> workers;
  std::optional<uint64_t> partition_size;
  std::optional<uint64_t> min_block;
  std::optional<uint64_t> max_block;
  bool then_stream = false;
  bool stop_on_error = false;
  std::optional<uint64_t> reorg_buffer;
  int partition_attempts = 3;
  std::string shard;
  std::optional<int> shards;
  // Operations.
  std::string metrics_addr;
  std::chrono::milliseconds ready_max_age{std::chrono::minutes(5)};
  bool quiet = false;
  std::chrono::milliseconds progress_interval{std::chrono::seconds(10)};
  bool count = false;

  bool Parallel() const {
    return workers || partition_size || min_block || max_block || then_stream ||
           !shard.empty() || shards;
  }
};

// `--takeover after-table-max` or `from-block:N`; false for anything else.
bool ParseTakeover(const std::string& text, loader::TakeoverMode* mode, uint64_t* block) {
  if (text.empty()) {
    *mode = loader::TakeoverMode::kRefuse;
    return true;
  }
  if (text == "after-table-max") {
    *mode = loader::TakeoverMode::kAfterTableMax;
    return true;
  }
  const std::string prefix = "from-block:";
  if (text.rfind(prefix, 0) != 0 || text.size() == prefix.size()) return false;
  const std::string digits = text.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 19) {
    return false;
  }
  *mode = loader::TakeoverMode::kFromBlock;
  *block = std::stoull(digits);
  return true;
}

// A metadata value as a log field of its own type.
log::Field MetadataField(const std::string& key, const loader::MetadataValue& value) {
  return std::visit([&](const auto& typed) { return log::Field(key, typed); }, value);
}

// The `key=value …` line on stderr after the result: the metadata named in `keys` (a
// `summary` object with --log-format json).
void PrintSummary(const loader::LoadResult& result,
                  const std::set<std::string_view>& keys) {
  if (log::GetFormat() == log::Format::kJson) {
    log::Fields fields;
    for (const auto& [key, value] : result.metadata) {
      if (keys.count(key) != 0) fields.push_back(MetadataField(key, value));
    }
    log::WriteToStderr(log::Record{log::Level::kInfo, "summary", fields, {}});
    return;
  }
  for (const auto& [key, value] : result.metadata) {
    if (keys.count(key) != 0)
      std::cerr << key << "=" << loader::MetadataText(value) << " ";
  }
  std::cerr << std::endl;
}

// The exit code of a finished load: 130 for SIGINT and 143 for SIGTERM when a signal
// stopped it (a stream after its last commit, a batch load before its commit), else its
// error's class. A failure prints its error line either way.
int ExitCodeOf(const loader::LoadResult& result) {
  if (!result.success) {
    const int code = Fail(result.status);
    if (!StopRequested()) return code;
  }
  return StopExitCode(kExitOk);
}

// The `stop` event: why the load ended, what it did, and its exit code.
int Stopped(const loader::LoadResult& result, int exit_code) {
  const char* reason = StopRequested()   ? "signal"
                       : !result.success ? "failed"
                                         : "completed";
  telemetry::Stopped(result.table_name, reason, result.rows_loaded,
                     loader::MetadataInt(result.metadata, "commits").value_or(0),
                     exit_code);
  return exit_code;
}

ProgressReporter::Options ProgressOptions(const LoadArgs& args) {
  ProgressReporter::Options options;
  options.quiet = args.quiet;
  // Every stderr line is a JSON object in that format: no redrawn line, terminal or not.
  options.tty = ::isatty(STDERR_FILENO) != 0 && log::GetFormat() == log::Format::kText;
  options.interval = args.progress_interval;
  return options;
}

void StopOnSignals(loader::LoadOptions* options) { options->stop = StopFlag(); }

// Streams: one result line per commit and per reorg on stdout; progress (head, lag,
// rows/s, commits, reorgs) on stderr; SIGINT/SIGTERM stop after the current commit.
void ConfigureStream(const LoadArgs& args, loader::LoadOptions* out) {
  loader::LoadOptions& options = *out;
  options.with_reorg_detection = !args.no_reorg_detection;
  ParseTakeover(args.takeover, &options.takeover, &options.takeover_block);
  options.block_column = args.block_column;
  options.stream_reorg_window_blocks = args.reorg_window;
  options.stream_compact_every_commits = args.compact_every;
  options.until_block = args.until_block;
  options.stream_commit_interval = std::chrono::milliseconds(args.commit_interval_ms);
  options.stream_commit_rows = args.commit_rows;
  StopOnSignals(&options);
  auto progress = std::make_shared<ProgressReporter>(ProgressOptions(args));
  options.on_result = [progress](const loader::LoadResult& result) {
    progress->ClearLine();
    std::cout << result;
    if (!result.is_reorg) std::cout << " [" << result.progress.block_ranges << "]";
    std::cout << std::endl;
    StopIfStdoutClosed();
    progress->OnStreamResult(result);
  };
}

loader::LoadResult RunStream(amp::Client& client, const LoadArgs& args,
                             const loader::DeltaLakeConfig& config,
                             loader::LoadOptions options) {
  ConfigureStream(args, &options);
  WatchStdoutReader();  // a stream waiting for blocks stops once `| head` went away
  loader::LoadResult result = loader::LoadStream(client, args.sql, config, options);
  if (!args.quiet && ::isatty(STDERR_FILENO) != 0) std::fprintf(stderr, "\n");
  return result;
}

// The shard of a parallel load: `--shard i/N`, else `--shards N` with the index from the
// scheduler (Kubernetes Indexed Jobs, Slurm job arrays); false with `error` set when
// neither gives a valid one.
bool ResolveShard(const LoadArgs& args, int* index, int* count, std::string* error) {
  *index = 0;
  *count = 1;
  auto number = [](const std::string& text, int* value) {
    if (text.empty() || text.size() > 6 ||
        text.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    *value = std::stoi(text);
    return true;
  };
  if (!args.shard.empty()) {
    const size_t slash = args.shard.find('/');
    if (slash == std::string::npos || !number(args.shard.substr(0, slash), index) ||
        !number(args.shard.substr(slash + 1), count) || *count < 1 || *index >= *count) {
      *error = "--shard expects i/N with 0 <= i < N, got '" + args.shard + "'";
      return false;
    }
    return true;
  }
  if (!args.shards) return true;
  *count = *args.shards;
  for (const char* variable : {"JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"}) {
    const char* value = std::getenv(variable);
    if (value == nullptr || *value == '\0') continue;
    if (!number(value, index) || *index >= *count) {
      *error = std::string("$") + variable + " is '" + value +
               "', not a shard index below --shards " + std::to_string(*count);
      return false;
    }
    return true;
  }
  *error =
      "--shards needs the shard index from $JOB_COMPLETION_INDEX (Kubernetes Indexed "
      "Job) or $SLURM_ARRAY_TASK_ID (Slurm array), or pass --shard i/N";
  return false;
}

// Parallel backfills: a line per partition on stderr, the total on stdout; then the
// stream's lines when it follows the chain.
int RunParallel(amp::Client& client, const LoadArgs& args,
                const loader::DeltaLakeConfig& config, loader::LoadOptions options) {
  loader::ParallelOptions parallel;
  std::string error;
  if (!ResolveShard(args, &parallel.shard_index, &parallel.shard_count, &error)) {
    PrintError(error);
    return kExitUsage;
  }
  parallel.num_workers = args.workers.value_or(1);
  parallel.partition_size = args.partition_size;
  parallel.min_block = args.min_block;
  parallel.max_block = args.max_block;
  parallel.then_stream = args.then_stream;
  parallel.stop_on_error = args.stop_on_error;
  parallel.reorg_buffer = args.reorg_buffer;
  parallel.partition_attempts = args.partition_attempts;
  parallel.on_partition = [](const loader::LoadResult& partition) {
    const auto& meta = partition.metadata;
    const std::string blocks = loader::MetadataText(meta.at("start_block")) + "-" +
                               loader::MetadataText(meta.at("end_block"));
    if (log::GetFormat() == log::Format::kJson) {
      log::Fields fields = {{"blocks", blocks},
                            {"rows", static_cast<int64_t>(partition.rows_loaded)},
                            {"seconds", partition.duration, 2},
                            {"skipped", meta.count("skipped") != 0}};
      if (!partition.success) fields.emplace_back("error", partition.error);
      log::WriteToStderr(
          log::Record{partition.success ? log::Level::kInfo : log::Level::kError,
                      "partition",
                      fields,
                      {}});
      return;
    }
    if (!partition.success) {
      std::fprintf(stderr, "  partition %s failed: %s\n", blocks.c_str(),
                   partition.error.c_str());
    } else if (meta.count("skipped") != 0) {
      std::fprintf(stderr, "  partition %s already loaded\n", blocks.c_str());
    } else {
      std::fprintf(stderr, "  partition %s: %lld rows in %.2fs\n", blocks.c_str(),
                   static_cast<long long>(partition.rows_loaded), partition.duration);
    }
  };
  options.block_column = args.block_column;
  if (args.then_stream) {
    ConfigureStream(args, &options);
  } else {
    StopOnSignals(&options);
  }
  loader::LoadResult result =
      loader::LoadParallel(client, args.sql, config, options, parallel);
  std::cout << result << std::endl;
  PrintSummary(result,
               {"table_version", "partitions", "partitions_loaded", "partitions_skipped",
                "partitions_failed", "partitions_stopped", "missing_ranges",
                "stale_records", "handoff_block", "shard", "optimize_version",
                "optimize_files_removed", "optimize_files_stitched", "optimize_error"});
  auto missing = result.metadata.find("missing_ranges");
  if (missing != result.metadata.end()) {
    const log::Fields none;
    log::WriteToStderr(log::Record{
        log::Level::kWarn, "message", none,
        "to load the missing blocks, run the same command again (it loads only them), "
        "or one range at a time with --min-block A --max-block B"});
  }
  return Stopped(result, ExitCodeOf(result));
}

// The query's row count (`SELECT COUNT(*) FROM (<sql>)`), for an ETA; nullopt (with a
// warning) when the server cannot count it.
std::optional<int64_t> CountRows(amp::Client& client, const std::string& sql) {
  auto counted = [&]() -> arrow::Result<std::optional<int64_t>> {
    amp::QueryOptions query;
    query.stop = StopFlag();
    query.stop_cancels_reads = true;
    ARROW_ASSIGN_OR_RAISE(auto stream,
                          client.Query("SELECT COUNT(*) FROM (" + sql + ")", query));
    std::optional<int64_t> count;
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto message, stream->Next());
      if (!message) break;
      const auto& batch = message->data;
      if (count || batch->num_rows() == 0 || batch->num_columns() != 1) continue;
      ARROW_ASSIGN_OR_RAISE(auto scalar, batch->column(0)->GetScalar(0));
      ARROW_ASSIGN_OR_RAISE(auto value, scalar->CastTo(arrow::int64()));
      if (value->is_valid) count = static_cast<const arrow::Int64Scalar&>(*value).value;
    }
    return count;
  }();
  if (!counted.ok()) {
    AMPDELTA_LOG_WARN("--count: the server could not count the rows (",
                      counted.status().message(), "); no ETA");
    return std::nullopt;
  }
  return *counted;
}

// nlohmann's description of why `text` is not JSON ("parse error at line 1, column 7:
// …").
std::string JsonParseError(const std::string& text) {
  if (!json_util::JsonNestingWithin(text)) {
    return "it nests deeper than " + std::to_string(json_util::kMaxJsonDepth) + " levels";
  }
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    if (!parsed.is_discarded()) return "not a JSON value";
  } catch (const nlohmann::json::exception& error) {
    std::string why = error.what();
    const size_t bracket = why.find("] ");
    if (bracket != std::string::npos) why = why.substr(bracket + 2);
    // nlohmann quotes the text it last read, which may be a secret (storage options).
    const size_t last_read = why.find("; last read");
    if (last_read != std::string::npos) why = why.substr(0, last_read);
    return why;
  }
  return "not a JSON value";
}

arrow::Result<std::string> ConfigJson(const LoadArgs& args) {
  std::string text = args.config.empty() ? "{}" : args.config;
  std::string source = "--config";
  if (!text.empty() && text.front() == '@') {
    const std::string path = text.substr(1);
    source = "--config file '" + path + "'";
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      return InvalidInputError("cannot read config file '", path, "': it is a directory");
    }
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      return InvalidInputError("cannot read config file '", path,
                               "': ", std::strerror(errno));
    }
    std::stringstream contents;
    contents << file.rdbuf();
    text = contents.str();
  }
  nlohmann::json doc = json_util::ParseJson(text);
  if (doc.is_discarded()) {
    return InvalidInputError(source, " is not JSON: ", JsonParseError(text));
  }
  if (!doc.is_object()) {
    return InvalidInputError(source, " must be a JSON object (or @file), got a JSON ",
                             doc.type_name());
  }
  if (args.table) {
    if (args.table->empty()) {
      return InvalidInputError(
          "--table is empty: give the table's path or URL (e.g. "
          "./data/blocks or s3://bucket/blocks)");
    }
    if (!IsValidUtf8(*args.table)) {
      return InvalidInputError("--table '", EscapeNonUtf8(*args.table), "' is not UTF-8");
    }
    doc["table_path"] = *args.table;
  }
  for (const auto& column : args.partition_by) {
    if (!IsValidUtf8(column)) {
      return InvalidInputError("--partition-by column '", EscapeNonUtf8(column),
                               "' is not UTF-8");
    }
  }
  if (!args.partition_by.empty()) doc["partition_by"] = args.partition_by;
  for (const auto& column : args.cluster_by) {
    if (!IsValidUtf8(column)) {
      return InvalidInputError("--cluster-by column '", EscapeNonUtf8(column),
                               "' is not UTF-8");
    }
  }
  if (!args.cluster_by.empty()) doc["cluster_by"] = args.cluster_by;
  if (!args.readers.empty()) doc["readers"] = args.readers;
  if (!args.wide_integers.empty()) doc["wide_integers"] = args.wide_integers;
  if (!args.unsigned64.empty()) doc["uint64"] = args.unsigned64;
  if (args.cursor_in_log) {
    if (!doc.contains("state") || !doc["state"].is_object()) {
      doc["state"] = nlohmann::json::object();
    }
    doc["state"]["cursor_in_log"] = true;
  }
  if (!args.properties.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto properties, ParsePropertyOptions(args.properties));
    if (!doc.contains("table_properties") || !doc["table_properties"].is_object()) {
      doc["table_properties"] = nlohmann::json::object();
    }
    for (const auto& [key, value] : properties) doc["table_properties"][key] = value;
  }
  return doc.dump();
}

int RunLoad(const LoadArgs& args) {
  InstallStopHandlers();
  auto config_json = ConfigJson(args);
  if (!config_json.ok()) {
    PrintError(config_json.status().message());
    return kExitUsage;
  }
  auto config = loader::ParseDeltaLakeConfig(*config_json);
  if (!config.ok()) {
    PrintError(config.status().message());
    return kExitUsage;
  }
  std::string option_error;
  if (!ParseStorageOptions(args.storage_options, &config->storage_options,
                           &option_error)) {
    PrintError(option_error);
    return kExitUsage;
  }
  arrow::Status level = CheckCompressionLevel(args.compression, args.compression_level);
  if (!level.ok()) return Fail(level);
  std::unique_ptr<OpsEndpoint> endpoint;
  if (!args.metrics_addr.empty()) {
    auto started = OpsEndpoint::Start({args.metrics_addr, args.ready_max_age});
    if (!started.ok()) return Fail(started.status());
    endpoint = std::move(*started);
    loader::telemetry::RegisterSeries();
    const log::Fields fields = {{"url", endpoint->url()},
                                {"paths", "/metrics,/healthz,/readyz"}};
    log::WriteToStderr(log::Record{log::Level::kInfo, "listen", fields, {}});
  }
  if (args.cursor_in_log && !args.stream && !args.then_stream) {
    // A batch load has no cursor to record: the flag would silently do nothing.
    PrintError(
        "--cursor-in-log records a stream's cursor: use it with --stream (or "
        "--then-stream)");
    return kExitUsage;
  }
  amp::ClientOptions client_options;
  if (!args.token.empty()) client_options.auth_token = args.token;
  client_options.plan_timeout = args.plan_timeout;
  auto client = amp::Client::Connect(args.server, client_options);
  if (!client.ok()) return Fail(client.status());
  loader::LoadOptions options;
  options.destination =
      RedactUrl(args.destination.empty() ? config->table_path : args.destination);
  auto mode = loader::ParseLoadMode(args.mode);
  if (!mode.ok()) return Fail(mode.status());
  options.mode = *mode;
  options.merge_keys = args.merge_keys;
  options.commit_every_rows = args.commit_every_rows;
  options.compression = args.compression;
  options.compression_level = args.compression_level;
  options.idle_timeout = args.idle_timeout;
  options.stream_stall_warning = args.stall_warning;
  options.batch_size = args.batch_size;
  if (args.Parallel()) {
    if (args.stream) {
      PrintError(
          "--stream follows the chain with one worker; a parallel backfill hands "
          "over to it with --then-stream");
      return kExitUsage;
    }
    return RunParallel(**client, args, *config, options);
  }
  if (args.stream) {
    loader::LoadResult result = RunStream(**client, args, *config, options);
    std::cout << result << std::endl;
    PrintSummary(result, {"table_version", "commits", "reorgs", "head", "rows_undone",
                          "reconnects", "stalls"});
    return Stopped(result, ExitCodeOf(result));
  }
  // Progress: rows, batches, MB/s, elapsed, and with --count the total and an ETA.
  ProgressReporter::Options progress_options = ProgressOptions(args);
  if (args.count) progress_options.total_rows = CountRows(**client, args.sql);
  auto progress = std::make_shared<ProgressReporter>(progress_options);
  options.on_batch = [progress](const loader::LoadResult& batch) {
    progress->OnBatch(batch);
  };
  StopOnSignals(&options);
  loader::LoadResult result = loader::LoadBatch(**client, args.sql, *config, options);
  progress->Finish();
  std::cout << result << std::endl;
  // The result line is the SDK's; the error line is the CLI's, with the exit code's
  // class.
  if (result.success) {
    PrintSummary(result,
                 {"table_version", "files_added", "bytes_written", "commits",
                  "rows_inserted", "rows_updated", "retries", "optimize_version",
                  "optimize_files_removed", "optimize_files_stitched", "optimize_error"});
  }
  return Stopped(result, ExitCodeOf(result));
}

}  // namespace

CommandRunner AddLoadCommand(CLI::App& app) {
  auto args = std::make_shared<LoadArgs>();
  CLI::App* cmd =
      app.add_subcommand("load", "Run SQL on Amp and load the result into a Delta table");
  cmd->add_option("--server", args->server, "grpc:// or grpc+tls:// URL")
      ->capture_default_str();
  cmd->add_option("--table", args->table, "table_path (overrides --config)");
  cmd->add_option("--sql", args->sql, "the query")->required();
  cmd->add_option("--mode", args->mode,
                  "append, overwrite, merge, upsert, error or ignore")
      ->capture_default_str();
  cmd->add_option("--merge-keys", args->merge_keys, "key columns for merge/upsert")
      ->delimiter(',');
  cmd->add_option("--commit-every-rows", args->commit_every_rows,
                  "commit every N rows instead of once at the end")
      ->check(IntegerAtLeast(1));
  cmd->add_option("--property", args->properties,
                  "KEY=VALUE table property (delta.*), e.g. "
                  "delta.enableChangeDataFeed=true: a new table is created with it, an "
                  "existing one gets it in the load's first commit; repeatable");
  cmd->add_option(
         "--readers", args->readers,
         "engines that must read the table, e.g. spark,duckdb,polars,deltalake (also "
         "trino, athena, snowflake, bigquery, powerbi): a write whose table would "
         "need a feature one of them cannot read is refused")
      ->delimiter(',');
  cmd->add_option("--partition-by", args->partition_by, "partition columns")
      ->delimiter(',');
  cmd->add_option(
         "--cluster-by", args->cluster_by,
         "Liquid clustering columns, e.g. block_num (cluster_by): table optimize "
         "then sorts files by them; adds the clustering and domainMetadata writer "
         "features")
      ->delimiter(',');
  cmd->add_option("--wide-integers", args->wide_integers,
                  "how new columns store integers wider than decimal(38) (Amp's "
                  "Decimal256, e.g. uint160): string (the default, lossless) or decimal "
                  "(decimal(38,0); a larger value fails the load)")
      ->check(CLI::IsMember({"string", "decimal"}));
  cmd->add_option(
         "--uint64", args->unsigned64,
         "how new columns store uint64: auto (the default: columns long as the "
         "SDK stores block_num and gas_used, fields of decoded structs "
         "decimal(20,0)), decimal (every uint64 but block numbers decimal(20,0): "
         "a pre-merge block's nonce) or long (a value above 2^63-1 fails)")
      ->check(CLI::IsMember({"auto", "decimal", "long"}));
  cmd->add_option("--config", args->config, "deltalake connection config: JSON or @file");
  cmd->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  cmd->add_option("--compression", args->compression, "Parquet codec")
      ->capture_default_str();
  cmd->add_option("--compression-level", args->compression_level, "codec level");
  cmd->add_option("--destination", args->destination, "name of the load in the result");
  cmd->add_flag(
      "--stream", args->stream,
      "streaming query: follow the chain, exactly once, undoing reorgs (Ctrl-C stops)");
  cmd->add_flag("--no-reorg-detection", args->no_reorg_detection,
                "streams: load what arrives, undo nothing (with_reorg_detection=False)");
  cmd->add_flag("--cursor-in-log", args->cursor_in_log,
                "streams: also record the cursor in the table's log (domain metadata), "
                "so resume and reorg undo survive another engine's compaction; adds "
                "the domainMetadata writer feature (state.cursor_in_log)");
  cmd->add_option("--takeover", args->takeover,
                  "streams into a table another writer (the Python SDK, a batch load) "
                  "filled: after-table-max (continue after its highest block, loading "
                  "the reorg window again) or from-block:N")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            loader::TakeoverMode mode;
            uint64_t block = 0;
            return ParseTakeover(text, &mode, &block)
                       ? std::string()
                       : "expected after-table-max or from-block:N, got '" + text + "'";
          },
          "MODE"));
  cmd->add_option("--block-column", args->block_column,
                  "the block-number column (takeovers, parallel backfills)")
      ->capture_default_str();
  cmd->add_option("--reorg-window", args->reorg_window,
                  "streams: blocks below the head a reorg may still reach (compaction "
                  "and takeovers)")
      ->check(UnsignedAtLeast(1))
      ->capture_default_str();
  cmd->add_option("--compact-every", args->compact_every,
                  "streams: with optimize_after_write, compact finalised files every N "
                  "commits (0: never)")
      ->check(IntegerAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--until-block", args->until_block,
                  "streams: stop once this block is committed")
      ->check(UnsignedAtLeast(0));
  cmd->add_option("--commit-interval-ms", args->commit_interval_ms,
                  "streams: commit complete microbatches at least this often")
      ->check(IntegerAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--commit-rows", args->commit_rows,
                  "streams: or when this many rows wait")
      ->check(IntegerAtLeast(1))
      ->capture_default_str();
  cmd->add_option("--batch-size", args->batch_size,
                  "write and report what arrives in slices of at most N rows")
      ->check(IntegerAtLeast(1));
  cmd->add_option("--workers", args->workers,
                  "parallel backfill: partitions loaded at once (docs/scale-out.md)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--partition-size", args->partition_size,
                  "parallel backfill: blocks per partition (a grid from block 0)")
      ->check(UnsignedAtLeast(1));
  cmd->add_option("--min-block", args->min_block,
                  "parallel backfill: first block (default: the server's first)")
      ->check(UnsignedAtLeast(0));
  cmd->add_option("--max-block", args->max_block,
                  "parallel backfill: last block, below the reorg window (default: the "
                  "head at the start, its window loaded by the stream)")
      ->check(UnsignedAtLeast(0));
  cmd->add_flag("--then-stream", args->then_stream,
                "parallel backfill: then follow the chain from its last block");
  cmd->add_flag("--stop-on-error", args->stop_on_error,
                "parallel backfill: start no partition once one failed");
  cmd->add_option("--reorg-buffer", args->reorg_buffer,
                  "parallel backfill: partitions load blocks at least this far below the "
                  "head, the stream the rest (default: --reorg-window)")
      ->check(UnsignedAtLeast(1));
  cmd->add_option("--partition-attempts", args->partition_attempts,
                  "parallel backfill: attempts per partition before it is reported")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--shard", args->shard,
                  "parallel backfill: load the i-th of N slices of the partitions (i/N)");
  cmd->add_option("--shards", args->shards,
                  "parallel backfill: N slices, this one's index from "
                  "$JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID (--shard wins)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--token", args->token, "bearer token (default: $AMP_AUTH_TOKEN)");
  cmd->add_option("--metrics-addr", args->metrics_addr,
                  "serve /metrics (Prometheus), /healthz and /readyz on HOST:PORT "
                  "(docs/operations.md)");
  AddSecondsOption(cmd, "--ready-max-age", &args->ready_max_age,
                   "with --metrics-addr: /readyz fails once nothing was committed or "
                   "heard from the server for this many seconds (default 300; 0: "
                   "connected is ready)");
  cmd->add_flag("--quiet", args->quiet, "no progress on stderr");
  AddSecondsOption(cmd, "--progress-interval", &args->progress_interval,
                   "without a terminal: a progress line every this many seconds "
                   "(default 10; 0: none)");
  cmd->add_flag("--count", args->count,
                "batch loads: count the query's rows first, for a total and an ETA");
  AddTimeoutOptions(cmd, &args->plan_timeout, &args->idle_timeout);
  AddSecondsOption(
      cmd, "--stall-warning", &args->stall_warning,
      "streams: warn when a stream resumed with a cursor gets no microbatch for "
      "this many seconds (ampd stalls silently on a cursor it cannot serve; "
      "default 300; 0: never)");
  return [args] { return RunLoad(*args); };
}

}  // namespace ampdelta::cli

// `ampdelta table info|history|files`: inspect a Delta table.

#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>

#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>
#include <parquet/arrow/reader.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/time_format.h"
#include "commands.h"
#include "table_format.h"

namespace ampdelta::cli {
namespace {

using ojson = nlohmann::ordered_json;

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
  std::string app_id;
  std::optional<int64_t> app_version;
  // maintenance
  int64_t target_size = 128 * 1024 * 1024;
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

arrow::Result<std::shared_ptr<storage::ObjectStore>> OpenTableStore(
    const TableArgs& args) {
  std::map<std::string, std::string> options;
  std::string error;
  if (!ParseStorageOptions(args.storage_options, &options, &error)) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid, error);
  }
  return storage::OpenObjectStore(args.path, options);
}

std::string IsoTime(int64_t ms) {
  int64_t seconds = 0;
  int64_t millis = 0;
  SplitEpoch(ms, 1000, &seconds, &millis);
  char fraction[24];
  std::snprintf(fraction, sizeof(fraction), ".%03lld", static_cast<long long>(millis));
  return FormatCivil(seconds, CivilFormat::kIsoDateTime) + fraction + "Z";
}

arrow::Result<int64_t> ParseTimestampArg(const std::string& text) {
  std::tm tm{};
  const char* formats[] = {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S",
                           "%Y-%m-%d"};
  for (const char* format : formats) {
    tm = {};
    const char* end = strptime(text.c_str(), format, &tm);
    if (end == nullptr || *end != '\0') continue;
    const std::tm parsed = tm;
    const time_t seconds = timegm(&tm);
    // timegm normalises 2025-02-30 to March 2: a date that does not exist is refused.
    if (tm.tm_mday != parsed.tm_mday || tm.tm_mon != parsed.tm_mon ||
        tm.tm_year != parsed.tm_year || tm.tm_hour != parsed.tm_hour ||
        tm.tm_min != parsed.tm_min || tm.tm_sec != parsed.tm_sec) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "--timestamp '", text, "' is not a valid date and time");
    }
    return static_cast<int64_t>(seconds) * 1000;
  }
  return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                   "cannot parse timestamp '", text,
                   "' (use YYYY-MM-DD[THH:MM:SS[Z]], UTC)");
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

ojson NullableMap(const delta::NullableStringMap& map) {
  ojson out = ojson::object();
  for (const auto& [key, value] : map) out[key] = value ? ojson(*value) : ojson(nullptr);
  return out;
}

ojson ProtocolJson(const delta::Protocol& protocol) {
  ojson out = {{"minReaderVersion", protocol.min_reader_version},
               {"minWriterVersion", protocol.min_writer_version}};
  if (protocol.reader_features) out["readerFeatures"] = *protocol.reader_features;
  if (protocol.writer_features) out["writerFeatures"] = *protocol.writer_features;
  return out;
}

std::optional<int64_t> FileRecords(const delta::Add& add) {
  if (!add.stats) return std::nullopt;
  auto stats = nlohmann::json::parse(*add.stats, nullptr, false);
  if (stats.is_discarded() || !stats.contains("numRecords") ||
      !stats["numRecords"].is_number_integer()) {
    return std::nullopt;
  }
  return stats["numRecords"].get<int64_t>();
}

// History shows when the writer says it committed (commitInfo), as Spark and delta-rs do.
int64_t HistoryTime(const delta::HistoryEntry& entry) {
  if (entry.commit_info && entry.commit_info->timestamp)
    return *entry.commit_info->timestamp;
  return entry.timestamp_ms;
}

int Report(const arrow::Status& status) {
  if (status.ok()) return kExitOk;
  return Fail(status);
}

arrow::Status Info(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(args));
  const auto& metadata = snapshot->metadata();
  const auto records = snapshot->num_records();
  if (args.json) {
    ojson fields = ojson::array();
    for (const auto& field : snapshot->schema()->fields()) {
      fields.push_back({{"name", field->name()},
                        {"type", delta::DeltaTypeName(*field->type())},
                        {"nullable", field->nullable()}});
    }
    ojson txns = ojson::object();
    for (const auto& [app, txn] : snapshot->app_transactions()) txns[app] = txn.version;
    ojson domains = ojson::array();
    for (const auto& [name, domain] : snapshot->domain_metadata())
      domains.push_back(name);
    ojson out = {{"path", snapshot->store()->root_uri()},
                 {"version", snapshot->version()},
                 {"timestamp", IsoTime(snapshot->timestamp_ms())},
                 {"protocol", ProtocolJson(snapshot->protocol())},
                 {"id", metadata.id},
                 {"name", metadata.name ? ojson(*metadata.name) : ojson(nullptr)},
                 {"partition_columns", metadata.partition_columns},
                 {"configuration", metadata.configuration},
                 {"schema", fields},
                 {"schema_string", metadata.schema_string},
                 {"num_files", snapshot->files().size()},
                 {"size_bytes", snapshot->total_bytes()},
                 {"num_records", records ? ojson(*records) : ojson(nullptr)},
                 {"app_transactions", txns},
                 {"domains", domains}};
    std::cout << out.dump(2) << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "table:      " << snapshot->store()->root_uri() << "\n"
            << "version:    " << snapshot->version() << " ("
            << IsoTime(snapshot->timestamp_ms()) << ")\n"
            << "protocol:   " << ProtocolJson(snapshot->protocol()).dump() << "\n"
            << "id:         " << metadata.id << "\n"
            << "partitions: " << ojson(metadata.partition_columns).dump() << "\n"
            << "files:      " << snapshot->files().size() << " ("
            << snapshot->total_bytes() << " bytes)\n"
            << "rows:       " << (records ? std::to_string(*records) : "unknown") << "\n"
            << "schema:\n";
  for (const auto& field : snapshot->schema()->fields()) {
    std::cout << "  " << field->name() << ": " << delta::DeltaTypeName(*field->type())
              << (field->nullable() ? "" : " not null") << "\n";
  }
  for (const auto& [key, value] : metadata.configuration) {
    std::cout << "property:   " << key << "=" << value << "\n";
  }
  for (const auto& [app, txn] : snapshot->app_transactions()) {
    std::cout << "txn:        " << app << " version " << txn.version << "\n";
  }
  std::cout.flush();
  return arrow::Status::OK();
}

arrow::Status Files(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(args));
  if (args.json) {
    ojson out = ojson::array();
    for (const auto& add : snapshot->files()) {
      auto records = FileRecords(add);
      ojson file = {{"path", add.path},
                    {"size", add.size},
                    {"partition_values", NullableMap(add.partition_values)},
                    {"num_records", records ? ojson(*records) : ojson(nullptr)},
                    {"modification_time", add.modification_time}};
      if (add.deletion_vector) file["deleted_rows"] = add.deletion_vector->cardinality;
      out.push_back(std::move(file));
    }
    std::cout << out.dump(2) << std::endl;
    return arrow::Status::OK();
  }
  for (const auto& add : snapshot->files()) {
    auto records = FileRecords(add);
    std::cout << add.path << "\t" << add.size << " bytes\t"
              << (records ? std::to_string(*records) : "?") << " rows";
    if (add.deletion_vector)
      std::cout << "\t" << add.deletion_vector->cardinality << " deleted";
    std::cout << "\n";
  }
  std::cout.flush();
  return arrow::Status::OK();
}

arrow::Status History(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  ARROW_ASSIGN_OR_RAISE(auto history, delta::ReadHistory(*store, args.limit));
  if (args.json) {
    ojson out = ojson::array();
    for (const auto& entry : history) {
      ojson item = {{"version", entry.version},
                    {"timestamp", IsoTime(HistoryTime(entry))}};
      if (entry.commit_info) {
        const auto& info = *entry.commit_info;
        item["operation"] = info.operation;
        item["operationParameters"] = info.operation_parameters;
        if (info.read_version) item["readVersion"] = *info.read_version;
        if (info.is_blind_append) item["isBlindAppend"] = *info.is_blind_append;
        item["operationMetrics"] = info.operation_metrics;
        item["engineInfo"] = info.engine_info;
      }
      out.push_back(std::move(item));
    }
    std::cout << out.dump(2) << std::endl;
    return arrow::Status::OK();
  }
  for (const auto& entry : history) {
    std::cout << "version " << entry.version << "  " << IsoTime(HistoryTime(entry));
    if (entry.commit_info) {
      std::cout << "  " << entry.commit_info->operation;
      if (!entry.commit_info->operation_metrics.empty()) {
        std::cout << "  " << ojson(entry.commit_info->operation_metrics).dump();
      }
    }
    std::cout << "\n";
  }
  std::cout.flush();
  return arrow::Status::OK();
}

// Open an Arrow IPC (file or stream) or Parquet file as a stream of batches, so inputs of
// any size are written with bounded memory.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> OpenInput(
    const std::string& path) {
  // Plain reads, not a memory map: mapped pages would count as this process's memory.
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(path));
  if (path.size() >= 8 && path.substr(path.size() - 8) == ".parquet") {
    ARROW_ASSIGN_OR_RAISE(auto reader,
                          parquet::arrow::OpenFile(file, arrow::default_memory_pool()));
    ARROW_ASSIGN_OR_RAISE(auto batches, reader->GetRecordBatchReader());
    // Keep the Parquet reader alive as long as its batch reader.
    struct Owning : arrow::RecordBatchReader {
      std::unique_ptr<parquet::arrow::FileReader> owner;
      std::unique_ptr<arrow::RecordBatchReader> inner;
      std::shared_ptr<arrow::Schema> schema() const override { return inner->schema(); }
      arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
        return inner->ReadNext(batch);
      }
    };
    auto owning = std::make_shared<Owning>();
    owning->owner = std::move(reader);
    owning->inner = std::move(batches);
    return owning;
  }
  auto ipc_file = arrow::ipc::RecordBatchFileReader::Open(file);
  if (ipc_file.ok()) {
    struct FileBatches : arrow::RecordBatchReader {
      std::shared_ptr<arrow::ipc::RecordBatchFileReader> file;
      int next = 0;
      std::shared_ptr<arrow::Schema> schema() const override { return file->schema(); }
      arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
        if (next >= file->num_record_batches()) {
          batch->reset();
          return arrow::Status::OK();
        }
        return file->ReadRecordBatch(next++).Value(batch);
      }
    };
    auto reader = std::make_shared<FileBatches>();
    reader->file = *ipc_file;
    return reader;
  }
  ARROW_RETURN_NOT_OK(file->Seek(0));
  ARROW_ASSIGN_OR_RAISE(auto stream, arrow::ipc::RecordBatchStreamReader::Open(file));
  return stream;
}

// A bad --input file is bad input; Arrow's own errors carry no class.
arrow::Status InputError(const std::string& path, const arrow::Status& status) {
  if (GetErrorDetail(status) != nullptr) return status;
  return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                   "cannot read --input '", path, "': ", status.message());
}

arrow::Status Write(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  if (args.inputs.empty()) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "give at least one --input file");
  }
  ARROW_RETURN_NOT_OK(CheckCompressionLevel(args.compression, args.compression_level));
  std::vector<std::shared_ptr<arrow::RecordBatchReader>> inputs;
  for (const auto& input : args.inputs) {
    auto reader = OpenInput(input);
    if (!reader.ok()) return InputError(input, reader.status());
    inputs.push_back(std::move(*reader));
  }
  delta::TableWriteOptions options;
  ARROW_ASSIGN_OR_RAISE(options.mode, delta::ParseSaveMode(args.mode));
  options.partition_by = args.partition_by;
  options.merge_schema = !args.no_merge_schema;
  ARROW_ASSIGN_OR_RAISE(options.files.codec, delta::ParseCodec(args.compression));
  options.files.compression_level = args.compression_level;
  options.files.target_file_size = args.target_file_size;
  options.files.max_rows_per_file = args.max_rows_per_file;
  options.files.max_rows_per_group = args.max_rows_per_group;
  options.files.dictionary = !args.no_dictionary;
  for (const auto& property : args.properties) {
    const size_t equals = property.find('=');
    if (equals == std::string::npos || equals == 0) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "--property expects KEY=VALUE, got '", property, "'");
    }
    options.configuration[property.substr(0, equals)] = property.substr(equals + 1);
  }
  if (!args.app_id.empty()) {
    if (!args.app_version) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "--app-id needs --app-version");
    }
    options.app_transaction =
        delta::SetTransaction{args.app_id, *args.app_version, std::nullopt};
  }
  ARROW_ASSIGN_OR_RAISE(
      auto writer, delta::TableWriter::Open(store, inputs.front()->schema(), options));
  if (args.app_version && writer->read_snapshot()) {
    auto committed = writer->read_snapshot()->AppTransactionVersion(args.app_id);
    if (committed && *committed >= *args.app_version) {
      std::cout << "skipped: app " << args.app_id << " already committed version "
                << *committed << std::endl;
      return arrow::Status::OK();
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& reader = inputs[i];
    std::shared_ptr<arrow::RecordBatch> batch;
    while (true) {
      arrow::Status status = reader->ReadNext(&batch);
      if (!status.ok()) status = InputError(args.inputs[i], status);
      if (status.ok() && batch == nullptr) break;
      if (status.ok()) status = writer->Write(batch);
      if (!status.ok()) {
        (void)writer->Abort();
        return status;
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto result, writer->Commit());
  if (!result.committed) {
    std::cout << "skipped: table exists (mode ignore)" << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "version=" << result.commit.version << " rows=" << result.rows
            << " files_added=" << result.files_added
            << " files_removed=" << result.files_removed << " bytes=" << result.bytes
            << " attempts=" << result.commit.attempts
            << (result.commit.checkpoint_written ? " checkpoint=written" : "")
            << std::endl;
  return arrow::Status::OK();
}

arrow::Status Delete(const TableArgs& args) {
  if (args.all_rows == args.where.has_value()) {
    return InvalidInputError(args.all_rows
                                 ? "give --where or --all, not both"
                                 : "table delete needs --where PREDICATE, or --all "
                                   "to delete every row");
  }
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  ARROW_ASSIGN_OR_RAISE(auto result, args.all_rows
                                         ? delta::DeleteAllRows(store)
                                         : delta::DeleteRows(store, *args.where));
  if (!result.version) {
    std::cout << "nothing matched; no commit (files_skipped=" << result.files_skipped
              << ")" << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "version=" << *result.version << " rows_deleted=" << result.rows_deleted
            << " files_removed=" << result.files_removed
            << " files_added=" << result.files_added
            << " rows_copied=" << result.rows_copied
            << " files_skipped=" << result.files_skipped << std::endl;
  return arrow::Status::OK();
}

arrow::Status Checkpoint(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ARROW_ASSIGN_OR_RAISE(auto info, delta::WriteCheckpoint(*snapshot, now));
  std::cout << "checkpoint version=" << info.version << " actions=" << info.num_actions
            << " files=" << info.num_add_files << " bytes=" << info.size_in_bytes
            << std::endl;
  return arrow::Status::OK();
}

arrow::Status Scan(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(args));
  delta::ScanOptions options;
  options.columns = args.columns;
  if (args.where) {
    ARROW_ASSIGN_OR_RAISE(auto predicate,
                          delta::Predicate::Parse(*args.where, snapshot->schema()));
    options.predicate = std::move(predicate);
  }
  ARROW_ASSIGN_OR_RAISE(auto scan, delta::TableScan::Make(snapshot, options));
  int64_t rows = 0;
  std::vector<std::vector<std::string>> shown;
  if (args.format == "csv") std::cout << CsvHeader(*scan->schema());
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, scan->Next());
    if (batch == nullptr) break;
    if (args.format == "csv") {
      std::cout << CsvRecords(*batch);
    } else if (args.format == "table") {
      for (int64_t i = 0; i < batch->num_rows() && shown.size() < 20; ++i) {
        shown.push_back(FormatRows(*batch, {i}).front());
      }
    }
    rows += batch->num_rows();
  }
  if (args.format == "table") std::cout << FormatTable(scan->schema(), shown);
  // With CSV on stdout, the summary goes to stderr, where it cannot break the CSV.
  if (args.format == "csv") std::cout.flush();
  (args.format == "csv" ? std::cerr : std::cout)
      << "rows=" << rows << " files_scanned=" << scan->files_scanned()
      << " files_skipped=" << scan->files_skipped() << std::endl;
  return arrow::Status::OK();
}

arrow::Status Optimize(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  delta::OptimizeOptions options;
  options.target_size = args.target_size;
  ARROW_ASSIGN_OR_RAISE(options.files.codec, delta::ParseCodec(args.compression));
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Optimize(store, options));
  if (!result.version) {
    std::cout << "nothing to compact" << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "version=" << *result.version << " files_removed=" << result.files_removed
            << " files_added=" << result.files_added
            << " partitions_optimized=" << result.partitions_optimized
            << " rows=" << result.rows << std::endl;
  return arrow::Status::OK();
}

arrow::Status Vacuum(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  delta::VacuumOptions options;
  options.retention_hours = args.retention_hours;
  options.dry_run = args.dry_run;
  options.full = args.full;
  options.enforce_retention = !args.force;
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Vacuum(store, options));
  for (const auto& file : result.files) std::cout << file << "\n";
  std::cout << (result.dry_run ? "would delete " : "deleted ") << result.files.size()
            << " files (" << result.bytes << " bytes)";
  if (!result.temporary_files.empty() || result.leases_expired > 0) {
    std::cout << ", " << result.temporary_files.size() << " abandoned temporary files, "
              << result.leases_expired << " expired write leases";
  }
  std::cout << std::endl;
  return arrow::Status::OK();
}

arrow::Status Restore(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  if (!args.version) return InvalidInputError("restore needs --version");
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Restore(store, *args.version));
  std::cout << "version=" << result.version << " restored to version " << *args.version
            << std::endl;
  return arrow::Status::OK();
}

void AddReadOptions(CLI::App* cmd, TableArgs* args, bool time_travel) {
  cmd->add_option("path", args->path, "table path or URI")->required();
  cmd->add_option("--storage-option", args->storage_options, kStorageOptionHelp);
  cmd->add_flag("--json", args->json, "print JSON");
  if (time_travel) {
    auto* version = cmd->add_option("--version", args->version, "read this version")
                        ->check(IntegerAtLeast(0));
    cmd->add_option("--timestamp", args->timestamp,
                    "read the version current at this UTC time (YYYY-MM-DD[THH:MM:SS])")
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
  write->add_option("--property", args->properties,
                    "KEY=VALUE table property of a new table");
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

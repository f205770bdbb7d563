// `ampdelta table info|files|history|scan`: read a Delta table.

#include <cstdio>
#include <iostream>
#include <memory>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/reader_support.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/util/time_format.h"
#include "commands.h"
#include "table_actions.h"
#include "table_format.h"

namespace ampdelta::cli {
namespace {

using ojson = nlohmann::ordered_json;

std::string IsoTime(int64_t ms) {
  int64_t seconds = 0;
  int64_t millis = 0;
  SplitEpoch(ms, 1000, &seconds, &millis);
  char fraction[24];
  std::snprintf(fraction, sizeof(fraction), ".%03lld", static_cast<long long>(millis));
  return FormatCivil(seconds, CivilFormat::kIsoDateTime) + fraction + "Z";
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

// History shows when the writer says it committed (commitInfo), as Spark and delta-rs do;
// on a table with in-commit timestamps, that timestamp (what time travel goes by).
int64_t HistoryTime(const delta::HistoryEntry& entry) {
  if (entry.commit_info && entry.commit_info->in_commit_timestamp)
    return *entry.commit_info->in_commit_timestamp;
  if (entry.commit_info && entry.commit_info->timestamp)
    return *entry.commit_info->timestamp;
  return entry.timestamp_ms;
}

// Which known readers read a table with `protocol` (reader_support.h).
ojson ReadersJson(const delta::Protocol& protocol,
                  const std::map<std::string, std::string>& configuration) {
  ojson out = ojson::array();
  for (const auto& reader : delta::KnownReaders()) {
    const auto unreadable = delta::UnreadableBy(reader.name, protocol, configuration);
    out.push_back({{"name", reader.name},
                   {"tested", reader.tested},
                   {"reads", unreadable.empty()},
                   {"cannot_read", unreadable}});
  }
  return out;
}

std::string ReadersLine(const delta::Protocol& protocol,
                        const std::map<std::string, std::string>& configuration) {
  std::string reads;
  std::string not_read;
  for (const auto& reader : delta::KnownReaders()) {
    const auto unreadable = delta::UnreadableBy(reader.name, protocol, configuration);
    const std::string name =
        reader.name + (reader.tested == "documented" ? " (documented)" : "");
    if (unreadable.empty()) {
      reads += (reads.empty() ? "" : ", ") + name;
      continue;
    }
    std::string features;
    for (const auto& f : unreadable) features += (features.empty() ? "" : ", ") + f;
    not_read += (not_read.empty() ? "" : "; ") + name + ": " + features;
  }
  return "read by:    " +
         (reads.empty() ? std::string("none of the known readers") : reads) +
         (not_read.empty() ? "" : "\nnot read by: " + not_read);
}

}  // namespace

arrow::Status Info(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(args));
  const auto& metadata = snapshot->metadata();
  const auto records = snapshot->CountLiveRecords();
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
                 {"size_bytes", snapshot->SumFileSizes()},
                 {"num_records", records ? ojson(*records) : ojson(nullptr)},
                 {"app_transactions", txns},
                 {"domains", domains},
                 {"readers", ReadersJson(snapshot->protocol(), metadata.configuration)}};
    std::cout << out.dump(2) << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "table:      " << snapshot->store()->root_uri() << "\n"
            << "version:    " << snapshot->version() << " ("
            << IsoTime(snapshot->timestamp_ms()) << ")\n"
            << "protocol:   " << ProtocolJson(snapshot->protocol()).dump() << "\n"
            << ReadersLine(snapshot->protocol(), metadata.configuration) << "\n"
            << "id:         " << metadata.id << "\n"
            << "partitions: " << ojson(metadata.partition_columns).dump() << "\n"
            << "files:      " << snapshot->files().size() << " ("
            << snapshot->SumFileSizes() << " bytes)\n"
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
      auto records = delta::StatsNumRecords(add);
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
    auto records = delta::StatsNumRecords(add);
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

}  // namespace ampdelta::cli

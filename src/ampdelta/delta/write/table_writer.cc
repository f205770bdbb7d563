#include "ampdelta/delta/write/table_writer.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/table_features.h"
#include "ampdelta/delta/read/predicate.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/file_tags.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

template <typename... Args>
arrow::Status InputError(Args&&... args) {
  return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                   std::forward<Args>(args)...);
}

std::string PythonList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

std::string PythonSet(const std::vector<std::string>& names) {
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "}";
}

// Reconcile the incoming data's schema with the table's (merge_schema semantics).
arrow::Result<std::shared_ptr<arrow::Schema>> ReconcileSchema(
    const arrow::Schema& table, const arrow::Schema& incoming, bool merge_schema) {
  std::vector<std::string> added;
  std::vector<std::string> missing;
  std::vector<std::string> changed;
  // Delta column names are case-insensitive: a column differing only in case is the same
  // column (the table's spelling stays).
  for (const auto& field : incoming.fields()) {
    const int index = FindFieldIgnoreCase(table, field->name());
    auto existing = index >= 0 ? table.field(index) : nullptr;
    if (existing == nullptr) {
      added.push_back(field->name());
    } else if (!CanWriteInto(*field->type(), *existing->type())) {
      changed.push_back(field->name() + " (table " + DeltaTypeName(*existing->type()) +
                        ", data " + DeltaTypeName(*field->type()) + ")");
    }
  }
  for (const auto& field : table.fields()) {
    if (FindFieldIgnoreCase(incoming, field->name()) < 0)
      missing.push_back(field->name());
  }
  if (!changed.empty()) {
    return InputError("schema mismatch: column types differ: ", PythonList(changed));
  }
  if (!merge_schema && (!added.empty() || !missing.empty())) {
    std::string message = "schema mismatch with merge_schema=false:";
    if (!added.empty())
      message += " columns not in the table: " + PythonList(added) + ";";
    if (!missing.empty())
      message += " table columns missing from the data: " + PythonList(missing) + ";";
    message.pop_back();
    return InputError(message);
  }
  for (const auto& name : missing) {
    if (!table.field(FindFieldIgnoreCase(table, name))->nullable()) {
      return InputError("the data has no column '", name,
                        "', which the table requires (not nullable)");
    }
  }
  if (added.empty()) return std::shared_ptr<arrow::Schema>();
  arrow::FieldVector fields = table.fields();
  for (const auto& name : added) {
    fields.push_back(
        incoming.field(FindFieldIgnoreCase(incoming, name))->WithNullable(true));
  }
  return arrow::schema(std::move(fields));
}

bool SameColumns(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](const std::string& x, const std::string& y) {
                      return EqualsIgnoreAsciiCase(x, y);
                    });
}

// Check `partition_by` against the data's columns and spell each as the data does: names
// are case-insensitive, listed once, and at least one column must stay in the data files
// (a file of partition columns only has no columns and no rows).
arrow::Result<std::vector<std::string>> ResolvePartitionColumns(
    const std::vector<std::string>& partition_by, const arrow::Schema& incoming) {
  std::vector<std::string> resolved;
  std::vector<std::string> not_found;
  for (const auto& column : partition_by) {
    if (column.empty()) return InputError("partition_by has an empty column name");
    const int index = FindFieldIgnoreCase(incoming, column);
    if (index < 0) {
      not_found.push_back(column);
      continue;
    }
    const std::string& name = incoming.field(index)->name();
    if (std::find(resolved.begin(), resolved.end(), name) != resolved.end()) {
      return InputError("partition_by lists column '", column,
                        "' twice (column names are case-insensitive)");
    }
    resolved.push_back(name);
  }
  if (!not_found.empty()) {
    std::vector<std::string> available;
    for (const auto& field : incoming.fields()) available.push_back(field->name());
    return InputError("Partition columns ", PythonSet(not_found),
                      " not found in table; "
                      "available columns: ",
                      PythonList(available));
  }
  if (!resolved.empty() && static_cast<int>(resolved.size()) >= incoming.num_fields()) {
    return InputError("partition_by names every column of the data (",
                      PythonList(resolved),
                      "): at least one column must stay in the data files");
  }
  for (const auto& column : resolved) {
    const auto& type = *incoming.GetFieldByName(column)->type();
    if (!IsPartitionableType(type)) {
      return InputError("cannot partition by column '", column, "' of type ",
                        DeltaTypeName(type));
    }
  }
  return resolved;
}

}  // namespace

arrow::Result<SaveMode> ParseSaveMode(const std::string& mode) {
  if (mode == "append") return SaveMode::kAppend;
  if (mode == "overwrite") return SaveMode::kOverwrite;
  if (mode == "error" || mode == "errorifexists") return SaveMode::kErrorIfExists;
  if (mode == "ignore") return SaveMode::kIgnore;
  return InputError("Invalid save mode provided: ", mode,
                    " (use append, overwrite, error or ignore)");
}

namespace {

DataFileOptions ApplyTableProperties(const TableProperties& props, DataFileOptions base) {
  base.stats.num_indexed_cols = props.data_skipping_num_indexed_cols;
  if (props.data_skipping_stats_columns) {
    std::vector<std::string> columns;
    std::stringstream in(*props.data_skipping_stats_columns);
    std::string item;
    while (std::getline(in, item, ',')) {
      item.erase(0, item.find_first_not_of(" `"));
      item.erase(item.find_last_not_of(" `") + 1);
      if (!item.empty()) columns.push_back(item);
    }
    base.stats.stats_columns = std::move(columns);
  }
  return base;
}

}  // namespace

DataFileOptions FileOptionsForTable(const Snapshot* snapshot, DataFileOptions base) {
  if (snapshot == nullptr) return base;
  return ApplyTableProperties(snapshot->properties(), std::move(base));
}

class TableWriter::Impl {
 public:
  std::shared_ptr<storage::ObjectStore> store;
  TableWriteOptions options;
  std::shared_ptr<const Snapshot> snapshot;
  std::shared_ptr<arrow::Schema> table_schema;
  std::vector<std::string> partition_columns;
  std::optional<Metadata> new_metadata;
  std::optional<Protocol> new_protocol;
  std::unique_ptr<DataFileWriter> writer;
  std::vector<Remove> staged_removes;
  std::vector<Add> staged_adds;
  std::optional<NullableStringMap> file_tags;
  std::vector<std::string> read_keys;
  std::map<std::string, std::string> extra_metrics;
  std::shared_ptr<WriteLease> lease;
  std::shared_ptr<WriteLease> owned_lease;
  std::set<std::string> watched;
  std::string watched_tag;
  bool skipped = false;
  bool done = false;
  bool committed = false;

  // Before a commit names its files they must still exist. Vacuums that honour leases
  // cannot have deleted them while the lease is held; if it is gone (a vacuum judged this
  // writer dead) or the store is local (cheap to check), look at every file.
  arrow::Status CheckFilesExist(const std::vector<Add>& adds) {
    ARROW_ASSIGN_OR_RAISE(bool held, lease->StillHeld());
    if (held && store->root_uri().rfind("file://", 0) != 0) return arrow::Status::OK();
    for (const auto& add : adds) {
      const std::string key = DecodeLogPath(add.path);
      auto head = store->Head(key);
      if (head.ok()) continue;
      if (!IsError(head.status(), ErrorCode::kNotFound)) return head.status();
      return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError,
                       "data file ", key,
                       " of this write was deleted before its commit (a concurrent "
                       "VACUUM?); nothing was committed");
    }
    return arrow::Status::OK();
  }

  void ReleaseLease() {
    if (owned_lease == nullptr) return;
    arrow::Status released = owned_lease->Release();
    if (!released.ok())
      AMPDELTA_LOG_WARN("write lease not removed: ", released.message());
    owned_lease.reset();
  }

  arrow::Status Prepare(const std::shared_ptr<arrow::Schema>& source_schema) {
    if (options.read_snapshot != nullptr) {
      snapshot = options.read_snapshot;
    } else if (!options.expect_new_table) {
      auto loaded = Snapshot::Load(store);
      if (loaded.ok()) {
        snapshot = *loaded;
      } else if (!IsError(loaded.status(), ErrorCode::kNotFound)) {
        return loaded.status();
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto incoming, ToTableSchema(*source_schema));
    // partition_by must name columns of the data (the seed's message and the columns).
    ARROW_ASSIGN_OR_RAISE(options.partition_by,
                          ResolvePartitionColumns(options.partition_by, *incoming));
    // An overwrite may replace the schema (and partitioning) when the new rows do not fit
    // the table's; when they fit, the table keeps its metadata.
    bool replace_schema = false;
    if (snapshot && options.mode == SaveMode::kOverwrite && options.overwrite_schema) {
      const bool partitioning_differs =
          !options.partition_by.empty() &&
          !SameColumns(options.partition_by, snapshot->partition_columns());
      replace_schema =
          partitioning_differs ||
          !ReconcileSchema(*snapshot->schema(), *incoming, options.merge_schema).ok();
    }
    if (snapshot && !replace_schema) {
      if (options.mode == SaveMode::kErrorIfExists) {
        return InputError("table already exists at ", store->root_uri(), " (mode error)");
      }
      if (options.mode == SaveMode::kIgnore) {
        skipped = true;
        return arrow::Status::OK();
      }
      // A table ampdelta cannot write is refused before anything about the data.
      ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(),
                                              *snapshot->schema()));
      if (!options.partition_by.empty() &&
          !SameColumns(options.partition_by, snapshot->partition_columns())) {
        return InputError(
            "Specified table partitioning does not match table partitioning: "
            "specified ",
            PythonList(options.partition_by), ", table ",
            PythonList(snapshot->partition_columns()));
      }
      partition_columns = snapshot->partition_columns();
      // Every load must bring the partition columns: rows without them would all land in
      // the null partition.
      std::vector<std::string> absent;
      for (const auto& column : partition_columns) {
        if (FindFieldIgnoreCase(*incoming, column) < 0) absent.push_back(column);
      }
      if (!absent.empty()) {
        std::vector<std::string> available;
        for (const auto& field : incoming->fields()) available.push_back(field->name());
        return InputError("Partition columns ", PythonSet(absent),
                          " not found in the data; "
                          "the table is partitioned by ",
                          PythonList(partition_columns),
                          "; available columns: ", PythonList(available));
      }
      ARROW_ASSIGN_OR_RAISE(auto merged, ReconcileSchema(*snapshot->schema(), *incoming,
                                                         options.merge_schema));
      table_schema = snapshot->schema();
      if (merged != nullptr) {
        // New columns: the commit carries the widened metadata.
        Metadata metadata = snapshot->metadata();
        ARROW_ASSIGN_OR_RAISE(metadata.schema_string, SchemaToJson(*merged));
        table_schema = merged;
        if (NeedsTimestampNtz(*merged) && !NeedsTimestampNtz(*snapshot->schema())) {
          return InputError(
              "adding a timestamp column without time zone needs the "
              "timestampNtz table feature, which ampdelta does not add to "
              "existing tables");
        }
        new_metadata = std::move(metadata);
      }
    } else {
      // A new table (or an overwrite that replaces the schema).
      table_schema = incoming;
      partition_columns = options.partition_by;
      if (partition_columns.empty() && snapshot) {
        // Keep the table's partitioning when the new rows still have those columns (in
        // any case; the new schema's spelling wins) ...
        bool all_present = true;
        std::vector<std::string> kept;
        for (const auto& column : snapshot->partition_columns()) {
          const int index = FindFieldIgnoreCase(*incoming, column);
          all_present = all_present && index >= 0 &&
                        IsPartitionableType(*incoming->field(index)->type());
          if (index >= 0) kept.push_back(incoming->field(index)->name());
        }
        // ... and some column still lands in the data files.
        all_present =
            all_present && static_cast<int>(snapshot->partition_columns().size()) <
                               incoming->num_fields();
        if (all_present) partition_columns = std::move(kept);
      }
      Metadata metadata;
      metadata.id = snapshot ? snapshot->metadata().id : NewUuid();
      metadata.name = options.name;
      metadata.description = options.description;
      ARROW_ASSIGN_OR_RAISE(metadata.schema_string, SchemaToJson(*table_schema));
      metadata.partition_columns = partition_columns;
      if (!snapshot) ARROW_RETURN_NOT_OK(ValidateTableProperties(options.configuration));
      metadata.configuration =
          snapshot ? snapshot->metadata().configuration : options.configuration;
      metadata.created_time =
          snapshot ? snapshot->metadata().created_time : std::optional<int64_t>(NowMs());
      Protocol protocol = ProtocolForNewTable(*table_schema);
      if (snapshot) {
        // Keep a stronger existing protocol.
        if (snapshot->protocol().min_writer_version > protocol.min_writer_version ||
            snapshot->protocol().min_reader_version > protocol.min_reader_version) {
          protocol = snapshot->protocol();
        }
        ARROW_RETURN_NOT_OK(CheckWriteSupported(
            snapshot->protocol(), snapshot->metadata(), *snapshot->schema()));
      }
      new_protocol = protocol;
      new_metadata = std::move(metadata);
    }
    // Vacuum must not take the files for garbage before they are committed.
    lease = options.lease;
    if (lease == nullptr) {
      ARROW_ASSIGN_OR_RAISE(owned_lease, WriteLease::Acquire(store));
      lease = owned_lease;
    }
    DataFileOptions file_options = FileOptionsForTable(snapshot.get(), options.files);
    file_options.file_token = lease->token();
    if (!snapshot) {
      // A new table's first files follow the properties it is created with.
      file_options = ApplyTableProperties(ParseTableProperties(options.configuration),
                                          std::move(file_options));
    }
    // Conversion to the table schema runs on the writer threads.
    file_options.prepare =
        [schema = table_schema](const std::shared_ptr<arrow::RecordBatch>& batch) {
          return ConformBatch(batch, schema);
        };
    ARROW_ASSIGN_OR_RAISE(writer,
                          DataFileWriter::Make(store, table_schema, partition_columns,
                                               std::move(file_options)));
    return arrow::Status::OK();
  }
};

TableWriter::TableWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TableWriter::~TableWriter() = default;

arrow::Result<std::unique_ptr<TableWriter>> TableWriter::Open(
    std::shared_ptr<storage::ObjectStore> store,
    const std::shared_ptr<arrow::Schema>& source_schema, TableWriteOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->store = std::move(store);
  impl->options = std::move(options);
  ARROW_RETURN_NOT_OK(impl->Prepare(source_schema));
  return std::unique_ptr<TableWriter>(new TableWriter(std::move(impl)));
}

bool TableWriter::skipped() const { return impl_->skipped; }
const std::shared_ptr<arrow::Schema>& TableWriter::table_schema() const {
  return impl_->table_schema;
}
const std::shared_ptr<const Snapshot>& TableWriter::read_snapshot() const {
  return impl_->snapshot;
}
int64_t TableWriter::rows_written() const {
  return impl_->writer ? impl_->writer->rows_written() : 0;
}
int64_t TableWriter::bytes_written() const {
  return impl_->writer ? impl_->writer->bytes_written() : 0;
}

arrow::Status TableWriter::Write(const std::shared_ptr<arrow::RecordBatch>& batch) {
  if (impl_->skipped) return arrow::Status::OK();
  if (impl_->done) return arrow::Status::Invalid("write after commit");
  return impl_->writer->Write(batch);
}

void TableWriter::StageRemoves(std::vector<Remove> files,
                               std::vector<std::string> read_keys) {
  for (auto& file : files) impl_->staged_removes.push_back(std::move(file));
  for (auto& key : read_keys) impl_->read_keys.push_back(std::move(key));
}

void TableWriter::SetAppTransaction(SetTransaction txn) {
  impl_->options.app_transaction = std::move(txn);
}

void TableWriter::SetFileTags(NullableStringMap tags) {
  impl_->file_tags = std::move(tags);
}

void TableWriter::StageAdds(std::vector<Add> files) {
  for (auto& file : files) impl_->staged_adds.push_back(std::move(file));
}

void TableWriter::WatchRemovals(std::set<std::string> keys, std::string tag_key) {
  impl_->watched = std::move(keys);
  impl_->watched_tag = std::move(tag_key);
}

void TableWriter::AddOperationMetrics(const std::map<std::string, std::string>& metrics) {
  for (const auto& [key, value] : metrics) impl_->extra_metrics[key] = value;
}

arrow::Result<TableWriteResult> TableWriter::Commit() {
  TableWriteResult result;
  if (impl_->skipped) return result;
  if (impl_->done) return arrow::Status::Invalid("write already committed");
  impl_->done = true;
  auto finished = impl_->writer->Finish();
  if (!finished.ok()) {
    (void)impl_->writer->Abort();
    impl_->ReleaseLease();
    return finished.status();
  }
  std::vector<Add> adds = std::move(*finished);
  arrow::Status present = impl_->CheckFilesExist(adds);
  if (!present.ok()) {
    (void)impl_->writer->Abort();
    impl_->ReleaseLease();
    return present;
  }
  if (impl_->file_tags) {
    for (auto& add : adds) add.tags = impl_->file_tags;
  }
  for (auto& add : impl_->staged_adds) adds.push_back(std::move(add));
  Transaction txn(impl_->store, impl_->snapshot, impl_->options.commit);
  if (impl_->new_protocol) txn.SetProtocol(*impl_->new_protocol);
  if (impl_->new_metadata) txn.SetMetadata(*impl_->new_metadata);
  std::vector<Remove> removes = std::move(impl_->staged_removes);
  txn.ReadFiles(impl_->read_keys);
  txn.WatchRemovals(std::move(impl_->watched), std::move(impl_->watched_tag));
  if (impl_->options.serializable) txn.ConflictWithConcurrentAppends();
  const bool overwrite = impl_->options.mode == SaveMode::kOverwrite && impl_->snapshot;
  if (overwrite) {
    removes.clear();
    for (const auto& add : impl_->snapshot->files()) removes.push_back(RemoveFor(add));
    txn.ReplaceWholeTable();
  }
  result.rows = impl_->writer->rows_written();
  result.bytes = impl_->writer->bytes_written();
  result.files_added = static_cast<int64_t>(adds.size());
  result.files_removed = static_cast<int64_t>(removes.size());
  txn.AddFiles(std::move(adds));
  txn.RemoveFiles(std::move(removes));
  if (impl_->options.app_transaction)
    txn.SetAppTransaction(*impl_->options.app_transaction);
  std::map<std::string, std::string> parameters = impl_->options.operation_parameters;
  if (impl_->options.operation == "WRITE") {
    static const char* kModes[] = {"Append", "Overwrite", "ErrorIfExists", "Ignore"};
    parameters["mode"] = kModes[static_cast<int>(impl_->options.mode)];
    parameters["partitionBy"] = nlohmann::json(impl_->partition_columns).dump();
  }
  txn.SetOperation(impl_->options.operation, parameters);
  std::map<std::string, std::string> metrics = {
      {"numFiles", std::to_string(result.files_added)},
      {"numOutputRows", std::to_string(result.rows)},
      {"numOutputBytes", std::to_string(result.bytes)},
      {"numRemovedFiles", std::to_string(result.files_removed)}};
  for (const auto& [key, value] : impl_->extra_metrics) metrics[key] = value;
  txn.SetOperationMetrics(std::move(metrics));
  auto committed = txn.Commit();
  if (!committed.ok()) {
    // Nothing references the files: remove them so the table stays exactly as it was.
    (void)impl_->writer->Abort();
    impl_->ReleaseLease();
    return committed.status();
  }
  impl_->ReleaseLease();
  impl_->committed = true;
  result.committed = true;
  result.commit = std::move(*committed);
  return result;
}

arrow::Status TableWriter::Abort() {
  // Committed files belong to the table now: an abort after the commit changes nothing.
  if (impl_->committed) return arrow::Status::OK();
  impl_->done = true;
  arrow::Status aborted = impl_->writer ? impl_->writer->Abort() : arrow::Status::OK();
  impl_->ReleaseLease();
  return aborted;
}

}  // namespace ampdelta::delta

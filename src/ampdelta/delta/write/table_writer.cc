#include "ampdelta/delta/write/table_writer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <sstream>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/clustering.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/delta/read/predicate.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/check_constraints.h"
#include "ampdelta/delta/write/data_file_writer.h"
#include "ampdelta/delta/write/file_tags.h"
#include "ampdelta/delta/write/generated_columns.h"
#include "ampdelta/delta/write/identity_columns.h"
#include "ampdelta/delta/write/write_plan.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
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
  // Clustered tables need statistics of their clustering columns (PROTOCOL.md); a
  // clustering domain that does not parse is reported by whoever needs its columns.
  if (auto clustering = ClusteringColumns(*snapshot); clustering.ok()) {
    base.stats.always_indexed = *clustering;
  }
  // A table that tracks rows: rewrites carry the rows' IDs in its materialized columns
  // (a table whose names are missing is refused by CheckWriteSupported first).
  if (auto tracked =
          MaterializedColumns(snapshot->metadata().configuration, *snapshot->schema());
      tracked.ok() && *tracked) {
    base.row_tracking_columns = (*tracked)->names();
  }
  return ApplyTableProperties(snapshot->properties(), std::move(base));
}

class TableWriter::Impl {
 public:
  std::shared_ptr<storage::ObjectStore> store;
  TableWriteOptions options;
  std::shared_ptr<const Snapshot> snapshot;
  std::shared_ptr<arrow::Schema> table_schema;
  std::vector<std::string> partition_columns;
  std::vector<std::string> clustering_columns;
  std::optional<Metadata> new_metadata;
  std::optional<Protocol> new_protocol;
  std::unique_ptr<DataFileWriter> writer;
  IdentityAssigner identity;
  std::shared_ptr<const GeneratedColumns> generated;
  // The change data feed: on when the table (as this commit leaves it) asks for it; the
  // writer opens with the first recorded change.
  bool change_feed = false;
  DataFileOptions change_options;
  std::unique_ptr<ChangeDataWriter> changes;
  std::unique_ptr<DeletionVectorWriter> deletion_vectors;
  std::vector<Remove> staged_removes;
  std::vector<Add> staged_adds;
  std::optional<NullableStringMap> file_tags;
  std::vector<std::string> read_keys;
  std::map<std::string, std::string> extra_metrics;
  std::shared_ptr<WriteLease> lease;
  std::shared_ptr<WriteLease> owned_lease;
  std::set<std::string> watched;
  std::set<std::string> watched_tags;
  bool skipped = false;
  bool done = false;
  bool committed = false;

  struct WrittenFiles {
    std::vector<Add> adds;
    std::vector<Cdc> changes;
  };

  // Before a commit names its files they must still exist. Vacuums that honour leases
  // cannot have deleted them while the lease is held; if it is gone (a vacuum judged this
  // writer dead) or the store is local (cheap to check), look at every file.
  arrow::Status CheckFilesExist(const std::vector<Add>& adds) {
    ARROW_ASSIGN_OR_RAISE(bool held, lease->StillHeld());
    if (held && !store->is_file_system()) return arrow::Status::OK();
    std::vector<std::string> keys;
    for (const auto& add : adds) keys.push_back(DecodeLogPath(add.path));
    if (deletion_vectors) {
      keys.insert(keys.end(), deletion_vectors->files().begin(),
                  deletion_vectors->files().end());
    }
    for (const auto& key : keys) {
      auto head = store->Head(key);
      if (head.ok()) continue;
      if (!IsError(head.status(), ErrorCode::kNotFound)) return head.status();
      return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError, "file ",
                       key,
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
    ARROW_RETURN_NOT_OK(LoadSnapshot());
    ARROW_ASSIGN_OR_RAISE(WritePlan plan, PlanWrite(snapshot.get(), *source_schema,
                                                    options, store->root_uri()));
    if (plan.skipped) {
      skipped = true;
      return arrow::Status::OK();
    }
    ARROW_RETURN_NOT_OK(AdoptPlan(std::move(plan), *source_schema));
    // Vacuum must not take the files for garbage before they are committed.
    lease = options.lease;
    if (lease == nullptr) {
      ARROW_ASSIGN_OR_RAISE(owned_lease, WriteLease::Acquire(store));
      lease = owned_lease;
    }
    ARROW_ASSIGN_OR_RAISE(DataFileOptions file_options, FileOptions());
    change_feed = WritesChangeFeed();
    change_options = file_options;
    if (snapshot && options.mode != SaveMode::kOverwrite &&
        WritesDeletionVectors(*snapshot)) {
      deletion_vectors = std::make_unique<DeletionVectorWriter>(store, lease->token());
    }
    ARROW_ASSIGN_OR_RAISE(writer,
                          DataFileWriter::Make(store, table_schema, partition_columns,
                                               std::move(file_options)));
    return arrow::Status::OK();
  }

  // The table written to: the snapshot given, else the latest, else none (a new table).
  arrow::Status LoadSnapshot() {
    if (options.read_snapshot != nullptr) {
      snapshot = options.read_snapshot;
      return arrow::Status::OK();
    }
    if (options.expect_new_table) return arrow::Status::OK();
    auto loaded = Snapshot::Load(store);
    if (loaded.ok()) {
      snapshot = *loaded;
    } else if (!IsError(loaded.status(), ErrorCode::kNotFound)) {
      return loaded.status();
    }
    return arrow::Status::OK();
  }

  arrow::Status AdoptPlan(WritePlan plan, const arrow::Schema& source_schema) {
    options.partition_by = plan.partition_by;
    table_schema = std::move(plan.table_schema);
    partition_columns = std::move(plan.partition_columns);
    new_metadata = std::move(plan.new_metadata);
    new_protocol = std::move(plan.new_protocol);
    clustering_columns = std::move(plan.clustering_columns);
    ARROW_ASSIGN_OR_RAISE(identity, IdentityAssigner::Make(*table_schema, source_schema,
                                                           options.rewrites_rows));
    ARROW_ASSIGN_OR_RAISE(generated, GeneratedColumns::Make(table_schema, source_schema,
                                                            options.rewrites_rows));
    if (plan.clustering_domain) options.domains.push_back(*plan.clustering_domain);
    return arrow::Status::OK();
  }

  // The table's configuration as this commit leaves it.
  std::map<std::string, std::string> Configuration() const {
    if (new_metadata) return new_metadata->configuration;
    if (snapshot) return snapshot->metadata().configuration;
    return {};
  }

  bool WritesChangeFeed() const {
    if (new_metadata) {
      return ParseTableProperties(new_metadata->configuration).enable_change_data_feed;
    }
    return snapshot && snapshot->properties().enable_change_data_feed;
  }

  // The data files' options: the table's, this write's lease, statistics for the
  // clustering columns, and the conversion every batch goes through.
  arrow::Result<DataFileOptions> FileOptions() const {
    DataFileOptions file_options = FileOptionsForTable(snapshot.get(), options.files);
    file_options.file_token = lease->token();
    if (!snapshot) {
      // A new table's first files follow the properties it is created with.
      file_options = ApplyTableProperties(ParseTableProperties(options.configuration),
                                          std::move(file_options));
    }
    file_options.stats.always_indexed = clustering_columns;
    // Every row the write adds must satisfy the table's CHECK constraints.
    ARROW_ASSIGN_OR_RAISE(auto constraints,
                          TableConstraints(Configuration(), table_schema));
    // A table that tracks rows keeps the IDs of the rows a rewrite copies in its
    // materialized columns (rows without them are new).
    ARROW_ASSIGN_OR_RAISE(auto tracked,
                          MaterializedColumns(Configuration(), *table_schema));
    file_options.row_tracking_columns =
        tracked ? tracked->names() : std::vector<std::string>{};
    file_options.prepare = BatchConversion(std::move(constraints), std::move(tracked));
    return file_options;
  }

  // Each batch in the table's schema (generated columns filled), checked against the
  // table's CHECK constraints, its row IDs carried; it runs on the writer threads.
  decltype(DataFileOptions::prepare) BatchConversion(
      std::vector<CheckConstraint> constraints,
      std::optional<MaterializedRowColumns> tracked) const {
    return [schema = table_schema, generated = generated, tracked = std::move(tracked),
            checks = std::make_shared<const std::vector<CheckConstraint>>(
                std::move(constraints))](const std::shared_ptr<arrow::RecordBatch>& batch)
               -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
      std::shared_ptr<arrow::RecordBatch> rows = batch;
      if (tracked) {
        ARROW_ASSIGN_OR_RAISE(rows, WithoutColumns(batch, tracked->names()));
      }
      ARROW_ASSIGN_OR_RAISE(auto conformed, generated->empty()
                                                ? ConformBatch(rows, schema)
                                                : generated->Conform(rows));
      ARROW_RETURN_NOT_OK(CheckRows(*checks, *conformed));
      if (tracked) return WithMaterializedColumns(conformed, batch, *tracked);
      return conformed;
    };
  }

  // The commit records the identity values handed out: the metadata carries the new
  // high-water marks (a concurrent writer that read the old ones then conflicts).
  arrow::Status RecordHighWaterMarks() {
    if (!identity.assigned()) return arrow::Status::OK();
    Metadata metadata = new_metadata ? *new_metadata : snapshot->metadata();
    ARROW_ASSIGN_OR_RAISE(auto schema, identity.AdvanceHighWaterMarks(table_schema));
    ARROW_ASSIGN_OR_RAISE(metadata.schema_string, SchemaToJson(*schema));
    new_metadata = std::move(metadata);
    return arrow::Status::OK();
  }

  // The files written (checked still there, identity high-water marks recorded) and the
  // change data; nothing is left behind on failure.
  arrow::Result<WrittenFiles> FinishFiles() {
    WrittenFiles files;
    auto finished = writer->Finish();
    if (finished.ok() && changes) {
      auto recorded = changes->Finish();
      if (recorded.ok()) {
        files.changes = std::move(*recorded);
      } else {
        finished = recorded.status();
      }
    }
    if (!finished.ok()) return Fail(finished.status());
    files.adds = std::move(*finished);
    arrow::Status present = CheckFilesExist(files.adds);
    if (present.ok()) present = RecordHighWaterMarks();
    if (!present.ok()) return Fail(present);
    if (file_tags) {
      for (auto& add : files.adds) add.tags = file_tags;
    }
    for (auto& add : staged_adds) files.adds.push_back(std::move(add));
    return files;
  }

  // Modes error and ignore create a table or write nothing: another writer's table, made
  // meanwhile, is not appended to.
  bool CreateOnly() const {
    return snapshot == nullptr && (options.mode == SaveMode::kErrorIfExists ||
                                   options.mode == SaveMode::kIgnore);
  }

  void StageTable(Transaction* txn) const {
    if (CreateOnly()) txn->CreateOnly();
    if (new_protocol) txn->SetProtocol(*new_protocol);
    if (new_metadata) txn->SetMetadata(*new_metadata);
  }

  void StageConflictRules(Transaction* txn) {
    txn->ReadFiles(read_keys);
    txn->WatchRemovals(std::move(watched), std::move(watched_tags));
    if (options.serializable) txn->ConflictWithConcurrentAppends();
  }

  void StageFiles(WrittenFiles files, Transaction* txn, TableWriteResult* result) {
    std::vector<Remove> removes = std::move(staged_removes);
    if (options.mode == SaveMode::kOverwrite && snapshot) {
      removes.clear();
      for (const auto& add : snapshot->files()) removes.push_back(RemoveFor(add));
      txn->ReplaceWholeTable();
    }
    result->rows = writer->rows_written();
    result->bytes = writer->bytes_written();
    // A file marked in a deletion vector is re-added, not written, and stays.
    result->files_marked =
        deletion_vectors ? static_cast<int64_t>(deletion_vectors->files().size()) : 0;
    result->files_added = static_cast<int64_t>(files.adds.size()) - result->files_marked;
    result->files_removed = static_cast<int64_t>(removes.size()) - result->files_marked;
    txn->AddFiles(std::move(files.adds));
    txn->RemoveFiles(std::move(removes));
    txn->AddChangeFiles(std::move(files.changes));
  }

  // What the caller's bookkeeping asks of the commit: its app transaction, the app IDs
  // and adds it claims, its records and domains.
  void StageBookkeeping(Transaction* txn) const {
    if (options.app_transaction) txn->SetAppTransaction(*options.app_transaction);
    if (options.overlapping_app_ids) {
      txn->ConflictWithAppIds(options.overlapping_app_ids);
      txn->SupersedeAppIds(options.superseded_app_ids);
    }
    if (options.claimed_adds) txn->ConflictWithAdds(options.claimed_adds);
    for (const auto& record : options.transaction_records) {
      txn->AddTransactionRecord(record);
    }
    for (const auto& domain : options.domains) txn->SetDomainMetadata(domain);
  }

  void RecordOperation(const TableWriteResult& result, Transaction* txn) const {
    std::map<std::string, std::string> parameters = options.operation_parameters;
    if (options.operation == "WRITE") {
      static const char* kModes[] = {"Append", "Overwrite", "ErrorIfExists", "Ignore"};
      parameters["mode"] = kModes[static_cast<int>(options.mode)];
      parameters["partitionBy"] = nlohmann::json(partition_columns).dump();
    }
    txn->SetOperation(options.operation, parameters);
    std::map<std::string, std::string> metrics = {
        {"numFiles", std::to_string(result.files_added)},
        {"numOutputRows", std::to_string(result.rows)},
        {"numOutputBytes", std::to_string(result.bytes)},
        {"numRemovedFiles", std::to_string(result.files_removed)}};
    if (result.files_marked > 0) {
      metrics["numDeletionVectorsAdded"] = std::to_string(result.files_marked);
    }
    for (const auto& [key, value] : extra_metrics) metrics[key] = value;
    txn->SetOperationMetrics(std::move(metrics));
  }

  // A commit that failed: nothing references the files, so they go and the table stays
  // exactly as it was. A table created meanwhile is what mode ignore asks to skip.
  arrow::Result<TableWriteResult> CommitFailed(const arrow::Status& status,
                                               TableWriteResult result) {
    (void)Fail(status);
    const ErrorDetail* detail = GetErrorDetail(status);
    if (!CreateOnly() || detail == nullptr ||
        detail->subcode() != kTableCreatedConcurrently) {
      return status;
    }
    if (options.mode == SaveMode::kIgnore) {
      skipped = true;  // as if the table had been there: nothing written
      return result;
    }
    return InvalidInputError("table already exists at ", store->root_uri(),
                             " (mode error; another writer created it meanwhile)");
  }

  // Delete what the write wrote and give up its lease; return `status`.
  arrow::Status Fail(arrow::Status status) {
    (void)AbortFiles();
    ReleaseLease();
    return status;
  }

  // Delete the files of a write that does not commit, change data included.
  arrow::Status AbortFiles() {
    arrow::Status aborted = writer ? writer->Abort() : arrow::Status::OK();
    if (changes) aborted &= changes->Abort();
    if (deletion_vectors) aborted &= deletion_vectors->Abort();
    return aborted;
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
  if (!impl_->identity.generates()) return impl_->writer->Write(batch);
  ARROW_ASSIGN_OR_RAISE(auto filled, impl_->identity.Fill(batch));
  return impl_->writer->Write(filled);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TableWriter::Conform(
    const std::shared_ptr<arrow::RecordBatch>& batch) {
  if (impl_->skipped) return batch;
  std::shared_ptr<arrow::RecordBatch> filled = batch;
  if (impl_->identity.generates()) {
    ARROW_ASSIGN_OR_RAISE(filled, impl_->identity.Fill(batch));
  }
  if (!impl_->generated->empty()) return impl_->generated->Conform(filled);
  return ConformBatch(filled, impl_->table_schema);
}

std::vector<std::string> TableWriter::generated_identity_columns() const {
  return impl_->identity.generated_columns();
}

bool TableWriter::records_changes() const {
  return !impl_->skipped && impl_->change_feed;
}

arrow::Status TableWriter::RecordChange(const std::shared_ptr<arrow::RecordBatch>& rows,
                                        ChangeType type) {
  if (!records_changes() || rows->num_rows() == 0) return arrow::Status::OK();
  if (impl_->done) return arrow::Status::Invalid("write after commit");
  if (impl_->changes == nullptr) {
    ARROW_ASSIGN_OR_RAISE(
        impl_->changes,
        ChangeDataWriter::Make(impl_->store, impl_->table_schema,
                               impl_->partition_columns, impl_->change_options));
  }
  return impl_->changes->Write(rows, type);
}

void TableWriter::StageRemoves(std::vector<Remove> files,
                               std::vector<std::string> read_keys) {
  for (auto& file : files) impl_->staged_removes.push_back(std::move(file));
  for (auto& key : read_keys) impl_->read_keys.push_back(std::move(key));
}

void TableWriter::SetAppTransaction(SetTransaction txn) {
  impl_->options.app_transaction = std::move(txn);
}

void TableWriter::AddTransactionRecord(SetTransaction txn) {
  auto& records = impl_->options.transaction_records;
  const bool recorded = std::any_of(records.begin(), records.end(), [&](const auto& r) {
    return r.app_id == txn.app_id;
  });
  if (!recorded) records.push_back(std::move(txn));
}

void TableWriter::SetDomainMetadata(DomainMetadata domain) {
  auto& domains = impl_->options.domains;
  std::erase_if(domains,
                [&](const DomainMetadata& d) { return d.domain == domain.domain; });
  domains.push_back(std::move(domain));
}

arrow::Status TableWriter::WriteEmptyFile() {
  if (!impl_->writer) return arrow::Status::Invalid("this write writes no files");
  NullableStringMap nulls;
  for (const auto& column : impl_->partition_columns) nulls[column] = std::nullopt;
  return impl_->writer->WriteEmptyFile(nulls);
}

void TableWriter::SetFileTags(NullableStringMap tags) {
  impl_->file_tags = std::move(tags);
}

void TableWriter::StageAdds(std::vector<Add> files) {
  for (auto& file : files) impl_->staged_adds.push_back(std::move(file));
}

void TableWriter::StageEdit(RowEdit* edit) {
  StageRemoves(std::move(edit->removes()), std::move(edit->read_keys()));
  StageAdds(edit->TakeMarked());
}

void TableWriter::WatchRemovals(std::set<std::string> keys,
                                std::set<std::string> tag_keys) {
  impl_->watched = std::move(keys);
  impl_->watched_tags = std::move(tag_keys);
}

void TableWriter::AddOperationMetrics(const std::map<std::string, std::string>& metrics) {
  for (const auto& [key, value] : metrics) impl_->extra_metrics[key] = value;
}

DeletionVectorWriter* TableWriter::deletion_vectors() {
  return impl_->deletion_vectors.get();
}

arrow::Result<TableWriteResult> TableWriter::Commit() {
  TableWriteResult result;
  if (impl_->skipped) return result;
  if (impl_->done) return arrow::Status::Invalid("write already committed");
  impl_->done = true;
  ARROW_ASSIGN_OR_RAISE(Impl::WrittenFiles files, impl_->FinishFiles());
  Transaction txn(impl_->store, impl_->snapshot, impl_->options.commit);
  impl_->StageTable(&txn);
  impl_->StageConflictRules(&txn);
  impl_->StageFiles(std::move(files), &txn, &result);
  impl_->StageBookkeeping(&txn);
  impl_->RecordOperation(result, &txn);
  auto committed = txn.Commit();
  if (!committed.ok()) return impl_->CommitFailed(committed.status(), std::move(result));
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
  arrow::Status aborted = impl_->AbortFiles();
  impl_->ReleaseLease();
  return aborted;
}

}  // namespace ampdelta::delta

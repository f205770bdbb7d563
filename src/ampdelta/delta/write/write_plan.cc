#include "ampdelta/delta/write/write_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <arrow/type.h>

#include "ampdelta/delta/log/clustering.h"
#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/reader_support.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/delta/log/type_widening.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

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

// A column whose values the writer computes when the data leaves it out: an identity
// column (identity_columns.h) or a generated one (generated_columns.h).
bool ComputedByWriter(const arrow::Field& field) {
  return FieldMetadataValue(field, "delta.identity.start").has_value() ||
         FieldMetadataValue(field, "delta.generationExpression").has_value();
}

// What a write may do to the table's columns' types (type_widening.h).
struct Widening {
  bool enabled = false;
  // Columns that expressions use (lower case), which keep their type.
  std::set<std::string> pinned;

  bool Pinned(const arrow::Field& column) const {
    return pinned.count(AsciiLower(column.name())) != 0;
  }
  // The column widened for `data`, or null.
  arrow::Result<std::shared_ptr<arrow::Field>> Widened(
      const std::shared_ptr<arrow::Field>& column,
      const std::shared_ptr<arrow::DataType>& data) const {
    if (!enabled || Pinned(*column)) return nullptr;
    return WidenedFor(column, data);
  }
};

// Reconcile the incoming data's schema with the table's (merge_schema semantics); a
// column the data brings in a wider type is widened where `widening` allows.
// Returns the table's new schema, or null when it stays as it is.
arrow::Result<std::shared_ptr<arrow::Schema>> ReconcileSchema(
    const arrow::Schema& table, const arrow::Schema& incoming, bool merge_schema,
    const Widening& widening) {
  std::vector<std::string> added;
  std::vector<std::string> missing;
  std::vector<std::string> changed;
  std::map<int, std::shared_ptr<arrow::Field>> widened;
  bool could_widen = false;
  // Delta column names are case-insensitive: a column differing only in case is the same
  // column (the table's spelling stays).
  for (const auto& field : incoming.fields()) {
    const int index = FindFieldIgnoreCase(table, field->name());
    auto existing = index >= 0 ? table.field(index) : nullptr;
    if (existing == nullptr) {
      added.push_back(field->name());
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto wider, widening.Widened(existing, field->type()));
    if (wider != nullptr) {
      widened[index] = std::move(wider);
    } else if (!CanWriteInto(*field->type(), *existing->type())) {
      const bool pinned = widening.Pinned(*existing);
      const auto would = WidenedFor(existing, field->type());
      could_widen = could_widen || (!pinned && would.ok() && *would != nullptr);
      changed.push_back(field->name() + " (table " + DeltaTypeName(*existing->type()) +
                        ", data " + DeltaTypeName(*field->type()) +
                        (pinned ? "; a generated column or CHECK constraint uses it, so "
                                  "it is never widened"
                                : "") +
                        ")");
    }
  }
  for (const auto& field : table.fields()) {
    if (FindFieldIgnoreCase(incoming, field->name()) < 0 && !ComputedByWriter(*field))
      missing.push_back(field->name());
  }
  if (!changed.empty()) {
    return InvalidInputError(
        "schema mismatch: column types differ: ", PythonList(changed),
        could_widen && !widening.enabled
            ? "; with the table property delta.enableTypeWidening="
              "true a write that merges schemas widens them"
            : "");
  }
  if (!merge_schema && (!added.empty() || !missing.empty())) {
    std::string message = "schema mismatch with merge_schema=false:";
    if (!added.empty())
      message += " columns not in the table: " + PythonList(added) + ";";
    if (!missing.empty())
      message += " table columns missing from the data: " + PythonList(missing) + ";";
    message.pop_back();
    return InvalidInputError(message);
  }
  for (const auto& name : missing) {
    if (!table.field(FindFieldIgnoreCase(table, name))->nullable()) {
      return InvalidInputError("the data has no column '", name,
                               "', which the table requires (not nullable)");
    }
  }
  if (added.empty() && widened.empty()) return std::shared_ptr<arrow::Schema>();
  arrow::FieldVector fields = table.fields();
  for (const auto& [index, wider] : widened) fields[index] = wider;
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
    if (column.empty()) return InvalidInputError("partition_by has an empty column name");
    const int index = FindFieldIgnoreCase(incoming, column);
    if (index < 0) {
      not_found.push_back(column);
      continue;
    }
    const std::string& name = incoming.field(index)->name();
    if (std::find(resolved.begin(), resolved.end(), name) != resolved.end()) {
      return InvalidInputError("partition_by lists column '", column,
                               "' twice (column names are case-insensitive)");
    }
    resolved.push_back(name);
  }
  if (!not_found.empty()) {
    std::vector<std::string> available;
    for (const auto& field : incoming.fields()) available.push_back(field->name());
    return InvalidInputError("Partition columns ", PythonSet(not_found),
                             " not found in table; "
                             "available columns: ",
                             PythonList(available),
                             NestedFieldHint(incoming, not_found.front()));
  }
  if (!resolved.empty() && static_cast<int>(resolved.size()) >= incoming.num_fields()) {
    return InvalidInputError("partition_by names every column of the data (",
                             PythonList(resolved),
                             "): at least one column must stay in the data files");
  }
  for (const auto& column : resolved) {
    const auto& type = *incoming.GetFieldByName(column)->type();
    if (!IsPartitionableType(type)) {
      return InvalidInputError("cannot partition by column '", column, "' of type ",
                               DeltaTypeName(type));
    }
  }
  return resolved;
}

// Under column mapping, give the columns of `schema` that have none an id and a physical
// name above every id the table gave, and record the largest (PROTOCOL.md).
arrow::Result<std::shared_ptr<arrow::Schema>> MapNewColumns(const arrow::Schema& schema,
                                                            const Snapshot* snapshot,
                                                            Metadata* metadata) {
  ARROW_ASSIGN_OR_RAISE(const auto mode, ColumnMappingModeOf(metadata->configuration));
  if (mode == ColumnMappingMode::kNone) return schema.WithMetadata(schema.metadata());
  int64_t max_id =
      MaxColumnId(snapshot ? *snapshot->schema() : schema, metadata->configuration);
  // A column the table has, of the same type, keeps its id and physical name (an
  // overwrite that replaces the schema, as Spark's does): its clustering and partition
  // keys stay valid.
  arrow::FieldVector fields = schema.fields();
  for (auto& field : fields) {
    const int existing =
        snapshot ? FindFieldIgnoreCase(*snapshot->schema(), field->name()) : -1;
    if (existing < 0) continue;
    const auto& kept = snapshot->schema()->field(existing);
    if (kept->type()->Equals(*field->type(), /*check_metadata=*/false)) {
      field = kept->WithName(field->name())->WithNullable(field->nullable());
    }
  }
  auto mapped = AssignColumnMapping(*arrow::schema(std::move(fields)), &max_id);
  metadata->configuration[kMaxColumnIdKey] = std::to_string(max_id);
  return mapped;
}

// Row tracking switched on for an existing table: the rows it has need row IDs
// (PROTOCOL.md), which ampdelta does not backfill; an empty table needs none.
arrow::Status CheckRowTrackingCanStart(const Snapshot& snapshot) {
  if (snapshot.files().empty()) return arrow::Status::OK();
  return InvalidInputError(
      kEnableRowTrackingKey,
      "=true on an existing table needs row IDs for the rows it has, which ampdelta "
      "does not backfill (Spark's ALTER TABLE … SET TBLPROPERTIES ('",
      kEnableRowTrackingKey, "'='true') does); or set it when the table is created");
}

// The table properties a write sets: those that differ from the table's go into the
// commit's metadata, with the protocol they need.
arrow::Status ApplyProperties(const Snapshot* snapshot,
                              const std::map<std::string, std::string>& properties,
                              WritePlan* plan, Protocol* protocol) {
  if (properties.empty() || snapshot == nullptr) return arrow::Status::OK();
  const Metadata& current =
      plan->new_metadata ? *plan->new_metadata : snapshot->metadata();
  std::map<std::string, std::string> changed;
  for (const auto& [key, value] : properties) {
    auto it = current.configuration.find(key);
    if (it == current.configuration.end() || it->second != value) changed[key] = value;
  }
  if (changed.empty()) return arrow::Status::OK();
  if (changed.count(kColumnMappingModeKey) != 0) {
    return InvalidInputError(
        kColumnMappingModeKey,
        " can be set only when a table is created; this table has ",
        current.configuration.count(kColumnMappingModeKey) != 0
            ? "'" + current.configuration.at(kColumnMappingModeKey) + "'"
            : "none",
        " (Spark's ALTER TABLE … SET TBLPROPERTIES changes it)");
  }
  if (ParseTableProperties(changed).enable_in_commit_timestamps &&
      !snapshot->properties().enable_in_commit_timestamps) {
    return InvalidInputError(
        "delta.enableInCommitTimestamps=true can be set only when a table is created; "
        "this table has it off (ampdelta does not write the enablement a later switch "
        "needs)");
  }
  Metadata metadata = current;
  for (const auto& [key, value] : changed) metadata.configuration[key] = value;
  if (RowTrackingEnabled(metadata.configuration) &&
      !RowTrackingEnabled(current.configuration)) {
    ARROW_RETURN_NOT_OK(CheckRowTrackingCanStart(*snapshot));
    NameMaterializedColumns(&metadata.configuration);
  }
  *protocol = UpgradeProtocol(*protocol, *plan->table_schema, metadata.configuration);
  plan->new_metadata = std::move(metadata);
  return arrow::Status::OK();
}

// A table with the change data feed may not have the columns change data readers add.
arrow::Status CheckChangeDataColumns(const Snapshot* snapshot, const WritePlan& plan) {
  const Metadata* metadata = plan.new_metadata ? &*plan.new_metadata
                             : snapshot        ? &snapshot->metadata()
                                               : nullptr;
  if (metadata == nullptr ||
      !ParseTableProperties(metadata->configuration).enable_change_data_feed) {
    return arrow::Status::OK();
  }
  for (const char* reserved : {"_change_type", "_commit_version", "_commit_timestamp"}) {
    if (FindFieldIgnoreCase(*plan.table_schema, reserved) >= 0) {
      return InvalidInputError(
          "column '", reserved,
          "' is reserved by the change data feed (delta.enableChangeDataFeed=true): "
          "readers of the feed add it; rename the column or leave the feed off");
    }
  }
  return arrow::Status::OK();
}

// The clustering columns a write leaves the table with, and the domain recording them
// when they change.
arrow::Status PlanClustering(const Snapshot* snapshot, const TableWriteOptions& options,
                             WritePlan* plan) {
  // Columns ampdelta cannot cluster by (nested ones Spark allows) or a domain that does
  // not parse do not stop a write: only clustering them (optimize) needs them.
  std::optional<std::vector<std::string>> current;
  if (snapshot != nullptr) {
    auto read = ClusteringColumns(*snapshot);
    if (read.ok()) current = std::move(*read);
  } else {
    current.emplace();
  }
  if (!options.cluster_by) {
    plan->clustering_columns = current.value_or(std::vector<std::string>{});
    const bool dropped =
        std::any_of(plan->clustering_columns.begin(), plan->clustering_columns.end(),
                    [&](const std::string& column) {
                      return FindFieldIgnoreCase(*plan->table_schema, column) < 0;
                    });
    if (dropped) {
      // An overwrite replaced the schema without a clustering column: unclustered now.
      plan->clustering_columns.clear();
      plan->clustering_domain = ClusteringDomain({}, *plan->table_schema);
    }
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(plan->clustering_columns,
                        ResolveClusteringColumns(*options.cluster_by, *plan->table_schema,
                                                 plan->partition_columns));
  const bool recorded =
      snapshot != nullptr && snapshot->domain_metadata().count(kClusteringDomain) != 0;
  if (plan->clustering_columns != current ||
      (!recorded && !plan->clustering_columns.empty())) {
    plan->clustering_domain =
        ClusteringDomain(plan->clustering_columns, *plan->table_schema);
  }
  return arrow::Status::OK();
}

// Writer features this write needs: asked for, and clustering's.
std::vector<TableFeature> RequestedWriterFeatures(const TableWriteOptions& options) {
  std::vector<TableFeature> features = options.writer_features;
  if (options.cluster_by && !options.cluster_by->empty()) {
    features.push_back(TableFeature::kDomainMetadata);
    features.push_back(TableFeature::kClustering);
  }
  return features;
}

// The data's schema in the table's types (and, for an existing table, its names).
arrow::Result<std::shared_ptr<arrow::Schema>> IncomingSchema(
    const Snapshot* snapshot, const arrow::Schema& source_schema,
    const TableWriteOptions& options,
    const std::map<std::string, std::string>& configuration) {
  TypeMapping mapping = options.types;
  mapping.column_mapping =
      ColumnMappingModeOf(snapshot ? snapshot->metadata().configuration : configuration)
          .ValueOr(ColumnMappingMode::kNone) != ColumnMappingMode::kNone;
  return snapshot ? ToTableSchemaInto(source_schema, mapping, *snapshot->schema())
                  : ToTableSchema(source_schema, mapping);
}

// An overwrite may replace the schema (and partitioning) when the new rows do not fit
// the table's; when they fit, the table keeps its metadata.
bool ReplacesSchema(const Snapshot& snapshot, const arrow::Schema& incoming,
                    const TableWriteOptions& options,
                    const std::vector<std::string>& partition_by) {
  if (options.mode != SaveMode::kOverwrite || !options.overwrite_schema) return false;
  const bool partitioning_differs =
      !partition_by.empty() && !SameColumns(partition_by, snapshot.partition_columns());
  return partitioning_differs ||
         !ReconcileSchema(*snapshot.schema(), incoming, options.merge_schema, Widening{})
              .ok();
}

// A write into the table's partitioning: partition_by, when given, must be it, and
// every load must bring the partition columns (rows without them would all land in the
// null partition), but for a generated one the writer computes (generated_columns.h).
arrow::Status CheckPartitioningKept(const Snapshot& snapshot,
                                    const arrow::Schema& incoming,
                                    const std::vector<std::string>& partition_by) {
  const auto& partition_columns = snapshot.partition_columns();
  if (!partition_by.empty() && !SameColumns(partition_by, partition_columns)) {
    return InvalidInputError(
        "Specified table partitioning does not match table partitioning: "
        "specified ",
        PythonList(partition_by), ", table ", PythonList(partition_columns));
  }
  std::vector<std::string> absent;
  const auto& table = *snapshot.schema();
  for (const auto& column : partition_columns) {
    const int index = FindFieldIgnoreCase(table, column);
    const bool computed = index >= 0 && ComputedByWriter(*table.field(index));
    if (!computed && FindFieldIgnoreCase(incoming, column) < 0) absent.push_back(column);
  }
  if (absent.empty()) return arrow::Status::OK();
  std::vector<std::string> available;
  for (const auto& field : incoming.fields()) available.push_back(field->name());
  return InvalidInputError("Partition columns ", PythonSet(absent),
                           " not found in the data; "
                           "the table is partitioned by ",
                           PythonList(partition_columns),
                           "; available columns: ", PythonList(available));
}

// Schema evolution of an existing table: new columns, and types widened where the table
// allows it or this write does (type widening's feature then added to the request).
arrow::Status PlanSchemaEvolution(const Snapshot& snapshot,
                                  const std::shared_ptr<arrow::Schema>& incoming,
                                  const TableWriteOptions& options,
                                  const std::map<std::string, std::string>& configuration,
                                  std::vector<TableFeature>* writer_features,
                                  WritePlan* plan) {
  Widening widening;
  widening.enabled =
      options.merge_schema && (TypeWideningEnabled(snapshot.metadata().configuration) ||
                               TypeWideningEnabled(configuration));
  widening.pinned =
      ColumnsExpressionsUse(*snapshot.schema(), snapshot.metadata().configuration);
  ARROW_ASSIGN_OR_RAISE(auto merged, ReconcileSchema(*snapshot.schema(), *incoming,
                                                     options.merge_schema, widening));
  plan->table_schema = snapshot.schema();
  if (merged == nullptr) return arrow::Status::OK();
  if (widening.enabled &&
      !HasWriterFeature(snapshot.protocol(), TableFeature::kTypeWideningPreview))
    writer_features->push_back(TableFeature::kTypeWidening);
  // New or widened columns: the commit carries the new metadata.
  Metadata metadata = snapshot.metadata();
  ARROW_ASSIGN_OR_RAISE(merged, MapNewColumns(*merged, &snapshot, &metadata));
  ARROW_ASSIGN_OR_RAISE(metadata.schema_string, SchemaToJson(*merged));
  plan->table_schema = merged;
  if (NeedsTimestampNtz(*merged) && !NeedsTimestampNtz(*snapshot.schema())) {
    return InvalidInputError(
        "adding a timestamp column without time zone needs the "
        "timestampNtz table feature, which ampdelta does not add to "
        "existing tables");
  }
  plan->new_metadata = std::move(metadata);
  return arrow::Status::OK();
}

// The protocol of a write into an existing table: its own, with what the properties and
// the requested features need.
arrow::Status PlanProtocolUpgrade(const Snapshot& snapshot,
                                  const std::map<std::string, std::string>& configuration,
                                  const std::vector<TableFeature>& writer_features,
                                  WritePlan* plan) {
  Protocol protocol = snapshot.protocol();
  ARROW_RETURN_NOT_OK(ApplyProperties(&snapshot, configuration, plan, &protocol));
  const bool features_missing =
      std::any_of(writer_features.begin(), writer_features.end(),
                  [&](TableFeature f) { return !HasWriterFeature(protocol, f); });
  if (features_missing) {
    const Metadata& metadata =
        plan->new_metadata ? *plan->new_metadata : snapshot.metadata();
    protocol = UpgradeProtocol(protocol, *plan->table_schema, metadata.configuration,
                               writer_features);
  }
  if (!(protocol == snapshot.protocol())) plan->new_protocol = std::move(protocol);
  return arrow::Status::OK();
}

// A write into an existing table that keeps its schema (or evolves it).
arrow::Status PlanWriteIntoTable(const Snapshot& snapshot,
                                 const std::shared_ptr<arrow::Schema>& incoming,
                                 const TableWriteOptions& options,
                                 const std::map<std::string, std::string>& configuration,
                                 std::vector<TableFeature> writer_features,
                                 WritePlan* plan) {
  // A table ampdelta cannot write is refused before anything about the data.
  ARROW_RETURN_NOT_OK(
      CheckWriteSupported(snapshot.protocol(), snapshot.metadata(), *snapshot.schema()));
  ARROW_RETURN_NOT_OK(CheckPartitioningKept(snapshot, *incoming, plan->partition_by));
  plan->partition_columns = snapshot.partition_columns();
  ARROW_RETURN_NOT_OK(PlanSchemaEvolution(snapshot, incoming, options, configuration,
                                          &writer_features, plan));
  return PlanProtocolUpgrade(snapshot, configuration, writer_features, plan);
}

// The partitioning an overwrite that replaces the schema keeps when none is given: the
// table's, when the new rows still have those columns (in any case; the new schema's
// spelling wins) and some column still lands in the data files.
std::vector<std::string> KeptPartitioning(const Snapshot& snapshot,
                                          const arrow::Schema& incoming) {
  std::vector<std::string> kept;
  for (const auto& column : snapshot.partition_columns()) {
    const int index = FindFieldIgnoreCase(incoming, column);
    if (index < 0 || !IsPartitionableType(*incoming.field(index)->type())) return {};
    kept.push_back(incoming.field(index)->name());
  }
  if (static_cast<int>(kept.size()) >= incoming.num_fields()) return {};
  return kept;
}

// The metadata of a new table, or of one whose schema an overwrite replaces (which keeps
// its id, configuration and creation time).
arrow::Result<Metadata> NewTableMetadata(
    const Snapshot* snapshot, const TableWriteOptions& options,
    const std::map<std::string, std::string>& configuration, WritePlan* plan) {
  Metadata metadata;
  metadata.id = snapshot ? snapshot->metadata().id : NewUuid();
  metadata.name = options.name;
  metadata.description = options.description;
  metadata.partition_columns = plan->partition_columns;
  metadata.configuration = snapshot ? snapshot->metadata().configuration : configuration;
  if (RowTrackingEnabled(metadata.configuration))
    NameMaterializedColumns(&metadata.configuration);
  ARROW_ASSIGN_OR_RAISE(plan->table_schema,
                        MapNewColumns(*plan->table_schema, snapshot, &metadata));
  ARROW_ASSIGN_OR_RAISE(metadata.schema_string, SchemaToJson(*plan->table_schema));
  metadata.created_time =
      snapshot ? snapshot->metadata().created_time : std::optional<int64_t>(NowMs());
  return metadata;
}

// A new table, or an overwrite that replaces the schema.
arrow::Status PlanNewTable(const Snapshot* snapshot,
                           const std::shared_ptr<arrow::Schema>& incoming,
                           const TableWriteOptions& options,
                           const std::map<std::string, std::string>& configuration,
                           const std::vector<TableFeature>& writer_features,
                           WritePlan* plan) {
  plan->table_schema = incoming;
  plan->partition_columns = plan->partition_by;
  if (plan->partition_columns.empty() && snapshot) {
    plan->partition_columns = KeptPartitioning(*snapshot, *incoming);
  }
  ARROW_ASSIGN_OR_RAISE(Metadata metadata,
                        NewTableMetadata(snapshot, options, configuration, plan));
  Protocol protocol =
      ProtocolForNewTable(*plan->table_schema, metadata.configuration, writer_features);
  if (snapshot) {
    ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(),
                                            *snapshot->schema()));
    // A replaced schema keeps every feature the table has (never a downgrade).
    protocol = CombineProtocols(snapshot->protocol(), protocol);
  }
  plan->new_metadata = std::move(metadata);
  ARROW_RETURN_NOT_OK(ApplyProperties(snapshot, configuration, plan, &protocol));
  plan->new_protocol = protocol;
  return arrow::Status::OK();
}

// What holds of the table as the write leaves it: change data and row tracking column
// names free, clustering recorded, the declared readers able to read it.
arrow::Status CheckPlannedTable(const Snapshot* snapshot,
                                const TableWriteOptions& options, WritePlan* plan) {
  ARROW_RETURN_NOT_OK(CheckChangeDataColumns(snapshot, *plan));
  const Metadata& metadata =
      plan->new_metadata ? *plan->new_metadata : snapshot->metadata();
  // No column may take the names row tracking keeps row IDs in.
  ARROW_RETURN_NOT_OK(
      MaterializedColumns(metadata.configuration, *plan->table_schema).status());
  ARROW_RETURN_NOT_OK(PlanClustering(snapshot, options, plan));
  ARROW_ASSIGN_OR_RAISE(const auto readers, ParseReaderNames(options.readers));
  return CheckReaders(readers,
                      plan->new_protocol ? *plan->new_protocol : snapshot->protocol(),
                      metadata.configuration);
}

}  // namespace

arrow::Result<WritePlan> PlanWrite(const Snapshot* snapshot,
                                   const arrow::Schema& source_schema,
                                   const TableWriteOptions& options,
                                   const std::string& table_uri) {
  // Table properties as the table records them (canonical keys, checked).
  ARROW_ASSIGN_OR_RAISE(const auto configuration,
                        NormalizeTableProperties(options.configuration));
  WritePlan plan;
  ARROW_ASSIGN_OR_RAISE(auto incoming,
                        IncomingSchema(snapshot, source_schema, options, configuration));
  // partition_by must name columns of the data (the seed's message and the columns).
  ARROW_ASSIGN_OR_RAISE(plan.partition_by,
                        ResolvePartitionColumns(options.partition_by, *incoming));
  if (snapshot != nullptr &&
      !ReplacesSchema(*snapshot, *incoming, options, plan.partition_by)) {
    if (options.mode == SaveMode::kErrorIfExists) {
      return InvalidInputError("table already exists at ", table_uri, " (mode error)");
    }
    if (options.mode == SaveMode::kIgnore) {
      plan.skipped = true;
      return plan;
    }
    ARROW_RETURN_NOT_OK(PlanWriteIntoTable(*snapshot, incoming, options, configuration,
                                           RequestedWriterFeatures(options), &plan));
  } else {
    ARROW_RETURN_NOT_OK(PlanNewTable(snapshot, incoming, options, configuration,
                                     RequestedWriterFeatures(options), &plan));
  }
  ARROW_RETURN_NOT_OK(CheckPlannedTable(snapshot, options, &plan));
  return plan;
}

}  // namespace ampdelta::delta

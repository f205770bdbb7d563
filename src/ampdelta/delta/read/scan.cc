#include "ampdelta/delta/read/scan.h"

#include <algorithm>
#include <functional>
#include <limits>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/io/interfaces.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

namespace cp = arrow::compute;

// Append the Parquet leaf columns of `field` (what a column selection names).
void CollectLeaves(const parquet::arrow::SchemaField& field, std::vector<int>* leaves) {
  if (field.children.empty()) {
    leaves->push_back(field.column_index);
    return;
  }
  for (const auto& child : field.children) CollectLeaves(child, leaves);
}

// Reads one data file batch by batch, producing table-schema batches.
class FileReader {
 public:
  // `columns`: the table columns to read, in table order (empty: all of them).
  // `tracked`: also return each row's stable row ID and commit version, after the
  // table columns (row_tracking.h).
  static arrow::Result<std::unique_ptr<FileReader>> Open(
      const Snapshot& snapshot, const Add& file, const std::vector<int>& columns = {},
      std::optional<MaterializedRowColumns> tracked = std::nullopt) {
    auto reader = std::unique_ptr<FileReader>(new FileReader());
    reader->table_schema_ = snapshot.schema();
    if (!columns.empty()) {
      arrow::FieldVector fields;
      for (int index : columns) fields.push_back(snapshot.schema()->field(index));
      reader->table_schema_ = arrow::schema(std::move(fields));
    }
    reader->schema_ = reader->table_schema_;
    if (tracked) {
      if (!file.base_row_id || !file.default_row_commit_version) {
        return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid, "data file ",
                         file.path,
                         " of a table that tracks rows has no baseRowId or "
                         "defaultRowCommitVersion");
      }
      arrow::FieldVector fields = reader->schema_->fields();
      for (const auto& name : tracked->names())
        fields.push_back(arrow::field(name, arrow::int64()));
      reader->schema_ = arrow::schema(std::move(fields));
      reader->tracked_ = std::move(tracked);
    }
    reader->partition_columns_ = snapshot.partition_columns();
    reader->by_id_ = ColumnMappingModeOf(snapshot.metadata().configuration)
                         .ValueOr(ColumnMappingMode::kNone) == ColumnMappingMode::kId;
    reader->file_ = file;
    const std::string key = snapshot.FileKey(file.path);
    auto input = snapshot.store()->OpenInputFile(key);
    if (!input.ok()) {
      // A file the log names but the store lacks: the table is damaged (a deleted file, a
      // vacuum by a writer that ignored retention), not the caller's input.
      if (IsError(input.status(), ErrorCode::kNotFound)) {
        return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "data file ",
                         key, " of version ", snapshot.version(),
                         " is missing from the table");
      }
      return input.status();
    }
    auto opened = parquet::arrow::OpenFile(*input, arrow::default_memory_pool());
    if (!opened.ok()) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "data file ",
                       key, " is not readable Parquet: ", opened.status().message());
    }
    reader->parquet_ = std::move(*opened);
    // Decode only the file columns the wanted table columns come from (all of them when
    // none does: the row count still comes from the file).
    const auto& manifest = reader->parquet_->manifest();
    std::vector<int> top_level;
    for (const auto& field :
         columns.empty() ? arrow::FieldVector{} : reader->schema_->fields()) {
      // (The materialized columns, unmapped, are found by their own names.)
      arrow::FieldVector file_fields;
      for (const auto& schema_field : manifest.schema_fields) {
        file_fields.push_back(schema_field.field);
      }
      const int index = reader->FindFileField(file_fields, *field);
      if (index >= 0) top_level.push_back(index);
    }
    if (top_level.empty()) {
      ARROW_ASSIGN_OR_RAISE(reader->batches_, reader->parquet_->GetRecordBatchReader());
    } else {
      std::vector<int> leaves;
      for (int index : top_level) {
        CollectLeaves(manifest.schema_fields[static_cast<size_t>(index)], &leaves);
      }
      std::vector<int> row_groups(static_cast<size_t>(
          reader->parquet_->parquet_reader()->metadata()->num_row_groups()));
      for (size_t i = 0; i < row_groups.size(); ++i) row_groups[i] = static_cast<int>(i);
      ARROW_ASSIGN_OR_RAISE(reader->batches_,
                            reader->parquet_->GetRecordBatchReader(row_groups, leaves));
    }
    if (file.deletion_vector) {
      ARROW_ASSIGN_OR_RAISE(auto deleted,
                            LoadDeletionVector(*snapshot.store(), *file.deletion_vector));
      reader->deleted_ = std::make_unique<DeletedRows>(std::move(deleted));
    }
    return reader;
  }

  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() {
    while (true) {
      std::shared_ptr<arrow::RecordBatch> raw;
      ARROW_RETURN_NOT_OK(batches_->ReadNext(&raw));
      if (raw == nullptr) return nullptr;
      const int64_t offset = row_offset_;
      row_offset_ += raw->num_rows();
      ARROW_ASSIGN_OR_RAISE(auto batch, ToTableSchema(*raw));
      if (tracked_) {
        ARROW_ASSIGN_OR_RAISE(batch, WithStableRowIds(*raw, offset, batch));
      }
      if (deleted_ != nullptr) {
        ARROW_ASSIGN_OR_RAISE(auto keep, deleted_->KeepMask(offset, batch->num_rows()));
        ARROW_ASSIGN_OR_RAISE(arrow::Datum filtered, cp::Filter(batch, keep));
        batch = filtered.record_batch();
      }
      if (batch->num_rows() > 0 || raw->num_rows() == 0) return batch;
    }
  }

 private:
  FileReader() = default;

  // `batch` with the stable row IDs and commit versions of the rows of `raw`, which
  // start at physical row `offset` (PROTOCOL.md "Row Tracking": the materialized value
  // where the file has one, else baseRowId + position and defaultRowCommitVersion).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> WithStableRowIds(
      const arrow::RecordBatch& raw, int64_t offset,
      const std::shared_ptr<arrow::RecordBatch>& batch) const {
    const auto stable = [&](const std::string& name,
                            const std::function<int64_t(int64_t)>& fresh)
        -> arrow::Result<std::shared_ptr<arrow::Array>> {
      const auto materialized = raw.GetColumnByName(name);
      if (materialized != nullptr && materialized->type_id() != arrow::Type::INT64) {
        return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                         "materialized row tracking column ", name, " of ", file_.path,
                         " is ", materialized->type()->ToString(), ", not long");
      }
      const auto* values = static_cast<const arrow::Int64Array*>(materialized.get());
      arrow::Int64Builder builder;
      ARROW_RETURN_NOT_OK(builder.Reserve(raw.num_rows()));
      for (int64_t row = 0; row < raw.num_rows(); ++row) {
        builder.UnsafeAppend(values != nullptr && values->IsValid(row)
                                 ? values->Value(row)
                                 : fresh(offset + row));
      }
      return builder.Finish();
    };
    const int64_t base = *file_.base_row_id;
    const int64_t version = *file_.default_row_commit_version;
    if (base < 0 ||
        base > std::numeric_limits<int64_t>::max() - offset - raw.num_rows()) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid, "data file ",
                       file_.path, " has baseRowId ", base,
                       ", whose rows' IDs are outside the range of a long");
    }
    ARROW_ASSIGN_OR_RAISE(auto ids, stable(tracked_->row_id, [base](int64_t position) {
                            return base + position;
                          }));
    ARROW_ASSIGN_OR_RAISE(auto versions, stable(tracked_->row_commit_version,
                                                [version](int64_t) { return version; }));
    std::vector<std::shared_ptr<arrow::Array>> columns = batch->columns();
    columns.push_back(std::move(ids));
    columns.push_back(std::move(versions));
    return arrow::RecordBatch::Make(schema_, batch->num_rows(), std::move(columns));
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> ToTableSchema(
      const arrow::RecordBatch& raw) {
    std::vector<std::shared_ptr<arrow::Array>> columns;
    for (const auto& field : table_schema_->fields()) {
      if (IsPartitionColumn(partition_columns_, field->name())) {
        const std::optional<std::string> value =
            FindPartitionValue(file_.partition_values, *field);
        ARROW_ASSIGN_OR_RAISE(auto scalar, ParsePartitionValue(value, field->type()));
        ARROW_ASSIGN_OR_RAISE(auto array,
                              arrow::MakeArrayFromScalar(*scalar, raw.num_rows()));
        columns.push_back(std::move(array));
        continue;
      }
      const int index = FindFileField(raw.schema()->fields(), *field);
      auto column = index < 0 ? nullptr : raw.column(index);
      if (column == nullptr) {
        // Files written before a column was added read it as null.
        ARROW_ASSIGN_OR_RAISE(auto nulls,
                              arrow::MakeArrayOfNull(field->type(), raw.num_rows()));
        columns.push_back(std::move(nulls));
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(auto logical, ToLogical(column, *field->type(), by_id_));
      columns.push_back(std::move(logical));
    }
    return arrow::RecordBatch::Make(table_schema_, raw.num_rows(), std::move(columns));
  }

  // The index of the file field holding the table field `field`: by physical name, or in
  // `id` mode by Parquet field id (PROTOCOL.md "Column Mapping"); -1 when none does.
  int FindFileField(const arrow::FieldVector& file_fields,
                    const arrow::Field& field) const {
    return FindMappedField(file_fields, field, by_id_);
  }

  static int FindMappedField(const arrow::FieldVector& file_fields,
                             const arrow::Field& field, bool by_id) {
    const std::string physical = PhysicalName(field);
    for (size_t i = 0; i < file_fields.size(); ++i) {
      if (file_fields[i]->name() == physical) return static_cast<int>(i);
    }
    const auto id = FieldMetadataValue(field, "delta.columnMapping.id");
    if (!by_id || !id) return -1;
    for (size_t i = 0; i < file_fields.size(); ++i) {
      const auto& metadata = file_fields[i]->metadata();
      if (metadata != nullptr && metadata->Get("PARQUET:field_id").ValueOr("") == *id) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // Rename column-mapped fields (struct children, in lists and maps too) to their
  // logical names and cast to the table type (older files may hold narrower types or
  // other timestamp units; fields added later read as nulls).
  static arrow::Result<std::shared_ptr<arrow::Array>> ToLogical(
      const std::shared_ptr<arrow::Array>& array, const arrow::DataType& type,
      bool by_id) {
    if (type.id() == arrow::Type::STRUCT && array->type_id() == arrow::Type::STRUCT) {
      const auto& st = static_cast<const arrow::StructArray&>(*array);
      std::vector<std::shared_ptr<arrow::Array>> children;
      for (const auto& child : type.fields()) {
        const int index = FindMappedField(st.struct_type()->fields(), *child, by_id);
        if (index < 0) {
          ARROW_ASSIGN_OR_RAISE(auto nulls,
                                arrow::MakeArrayOfNull(child->type(), st.length()));
          children.push_back(std::move(nulls));
        } else {
          ARROW_ASSIGN_OR_RAISE(auto converted,
                                ToLogical(st.field(index), *child->type(), by_id));
          children.push_back(std::move(converted));
        }
      }
      return std::make_shared<arrow::StructArray>(type.GetSharedPtr(), st.length(),
                                                  std::move(children), st.null_bitmap(),
                                                  st.null_count(), st.offset());
    }
    if (type.id() == arrow::Type::LIST && array->type_id() == arrow::Type::LIST) {
      const auto& list = static_cast<const arrow::ListArray&>(*array);
      ARROW_ASSIGN_OR_RAISE(auto values,
                            ToLogical(list.values(), *type.field(0)->type(), by_id));
      return std::make_shared<arrow::ListArray>(
          type.GetSharedPtr(), list.length(), list.value_offsets(), std::move(values),
          list.null_bitmap(), list.null_count(), list.offset());
    }
    if (type.id() == arrow::Type::MAP && array->type_id() == arrow::Type::MAP) {
      const auto& map = static_cast<const arrow::MapArray&>(*array);
      const auto& map_type = static_cast<const arrow::MapType&>(type);
      ARROW_ASSIGN_OR_RAISE(auto keys,
                            ToLogical(map.keys(), *map_type.key_type(), by_id));
      ARROW_ASSIGN_OR_RAISE(auto items,
                            ToLogical(map.items(), *map_type.item_type(), by_id));
      return std::make_shared<arrow::MapArray>(
          type.GetSharedPtr(), map.length(), map.value_offsets(), std::move(keys),
          std::move(items), map.null_bitmap(), map.null_count(), map.offset());
    }
    if (array->type()->Equals(type)) return array;
    cp::CastOptions options = cp::CastOptions::Safe(type.GetSharedPtr());
    options.allow_time_truncate = true;
    auto cast = cp::Cast(*array, type.GetSharedPtr(), options);
    if (!cast.ok()) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                       "data file column of type ", array->type()->ToString(),
                       " does not match table type ", type.ToString(), ": ",
                       cast.status().message());
    }
    return *cast;
  }

  std::shared_ptr<arrow::Schema> table_schema_;  // the table columns read
  std::shared_ptr<arrow::Schema> schema_;        // of the batches returned
  std::optional<MaterializedRowColumns> tracked_;
  std::vector<std::string> partition_columns_;
  bool by_id_ = false;  // column mapping mode `id`
  Add file_;
  std::unique_ptr<parquet::arrow::FileReader> parquet_;
  std::unique_ptr<arrow::RecordBatchReader> batches_;
  std::unique_ptr<DeletedRows> deleted_;
  int64_t row_offset_ = 0;
};

}  // namespace

class TableScan::Impl {
 public:
  std::shared_ptr<const Snapshot> snapshot;
  ScanOptions options;
  std::shared_ptr<arrow::Schema> output_schema;
  std::vector<int> projection;
  size_t next_file = 0;
  std::unique_ptr<FileReader> current;
  int64_t scanned = 0;
  int64_t skipped = 0;

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() {
    while (true) {
      if (current == nullptr) {
        const auto& files = snapshot->files();
        while (next_file < files.size()) {
          const Add& file = files[next_file];
          if (options.predicate &&
              options.predicate->Classify(file, snapshot->partition_columns()) ==
                  FileMatch::kNone) {
            ++skipped;
            ++next_file;
            continue;
          }
          break;
        }
        if (next_file >= files.size()) return nullptr;
        ARROW_ASSIGN_OR_RAISE(current, FileReader::Open(*snapshot, files[next_file++]));
        ++scanned;
      }
      ARROW_ASSIGN_OR_RAISE(auto batch, current->Next());
      if (batch == nullptr) {
        current.reset();
        continue;
      }
      if (options.predicate) {
        ARROW_ASSIGN_OR_RAISE(auto mask, options.predicate->Evaluate(*batch));
        ARROW_ASSIGN_OR_RAISE(arrow::Datum filtered, cp::Filter(batch, mask));
        batch = filtered.record_batch();
      }
      std::vector<std::shared_ptr<arrow::Array>> columns;
      for (int index : projection) columns.push_back(batch->column(index));
      return arrow::RecordBatch::Make(output_schema, batch->num_rows(),
                                      std::move(columns));
    }
  }
};

TableScan::TableScan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TableScan::~TableScan() = default;

arrow::Result<std::unique_ptr<TableScan>> TableScan::Make(
    std::shared_ptr<const Snapshot> snapshot, ScanOptions options) {
  auto impl = std::make_unique<Impl>();
  const auto& schema = snapshot->schema();
  arrow::FieldVector fields;
  if (options.columns.empty()) {
    for (int i = 0; i < schema->num_fields(); ++i) impl->projection.push_back(i);
    fields = schema->fields();
  } else {
    for (const auto& name : options.columns) {
      const int index = FindFieldIgnoreCase(*schema, name);
      if (index < 0) {
        return InvalidInputError("table has no column '", name, "'");
      }
      impl->projection.push_back(index);
      fields.push_back(schema->field(index));
    }
  }
  impl->output_schema = arrow::schema(std::move(fields));
  impl->snapshot = std::move(snapshot);
  impl->options = std::move(options);
  return std::unique_ptr<TableScan>(new TableScan(std::move(impl)));
}

const std::shared_ptr<arrow::Schema>& TableScan::schema() const {
  return impl_->output_schema;
}
arrow::Result<std::shared_ptr<arrow::RecordBatch>> TableScan::Next() {
  return impl_->Next();
}
int64_t TableScan::files_scanned() const { return impl_->scanned; }
int64_t TableScan::files_skipped() const { return impl_->skipped; }

arrow::Result<std::shared_ptr<arrow::Table>> TableScan::ToTable() {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, Next());
    if (batch == nullptr) break;
    if (batch->num_rows() > 0) batches.push_back(std::move(batch));
  }
  return arrow::Table::FromRecordBatches(impl_->output_schema, batches);
}

namespace {

arrow::Result<std::shared_ptr<arrow::Table>> ReadAll(FileReader* reader) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, reader->Next());
    if (batch == nullptr) break;
    batches.push_back(std::move(batch));
  }
  return arrow::Table::FromRecordBatches(reader->schema(), batches);
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Table>> ReadDataFileWithRowIds(
    const Snapshot& snapshot, const Add& file) {
  ARROW_ASSIGN_OR_RAISE(
      auto tracked,
      MaterializedColumns(snapshot.metadata().configuration, *snapshot.schema()));
  ARROW_ASSIGN_OR_RAISE(auto reader,
                        FileReader::Open(snapshot, file, {}, std::move(tracked)));
  return ReadAll(reader.get());
}

arrow::Result<std::shared_ptr<arrow::Table>> ReadDataFile(
    const Snapshot& snapshot, const Add& file, const std::vector<std::string>& columns) {
  std::vector<int> indices;
  for (const auto& name : columns) {
    const int index = FindFieldIgnoreCase(*snapshot.schema(), name);
    if (index < 0) {
      return InvalidInputError("column '", name, "' is not in the table");
    }
    if (std::find(indices.begin(), indices.end(), index) == indices.end())
      indices.push_back(index);
  }
  std::sort(indices.begin(), indices.end());
  ARROW_ASSIGN_OR_RAISE(auto reader, FileReader::Open(snapshot, file, indices));
  return ReadAll(reader.get());
}

}  // namespace ampdelta::delta

#include "ampdelta/delta/ops/merge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type_traits.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/read/predicate.h"
#include "ampdelta/delta/write/row_edit.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

namespace cp = arrow::compute;

// Row keys as byte strings: equal key values give equal strings whatever the chunking.
// A row with a null key column has no key (it never matches).
class KeyEncoder {
 public:
  static arrow::Status CheckType(const arrow::Field& field) {
    const auto& type = *field.type();
    if (arrow::is_fixed_width(type.id()) || arrow::is_base_binary_like(type.id())) {
      return arrow::Status::OK();
    }
    return InvalidInputError("merge key column '", field.name(), "' has type ",
                             DeltaTypeName(type),
                             ", which cannot be a merge key (use scalar columns)");
  }

  // Encode every row of `batch` on the columns `indices`; nullopt for rows with a null
  // key.
  static std::vector<std::optional<std::string>> Encode(const arrow::RecordBatch& batch,
                                                        const std::vector<int>& indices) {
    std::vector<std::optional<std::string>> keys(static_cast<size_t>(batch.num_rows()),
                                                 std::string());
    for (int index : indices) {
      const arrow::Array& column = *batch.column(index);
      for (int64_t row = 0; row < batch.num_rows(); ++row) {
        auto& key = keys[static_cast<size_t>(row)];
        if (!key) continue;
        if (column.IsNull(row)) {
          key.reset();
          continue;
        }
        AppendValue(column, row, &*key);
      }
    }
    return keys;
  }

 private:
  static void AppendValue(const arrow::Array& column, int64_t row, std::string* out) {
    const auto id = column.type_id();
    if (id == arrow::Type::BOOL) {
      out->push_back(static_cast<const arrow::BooleanArray&>(column).Value(row) ? '\1'
                                                                                : '\0');
      return;
    }
    if (id == arrow::Type::FLOAT || id == arrow::Type::DOUBLE) {
      // Equal numbers encode equally: -0.0 is 0.0, and every NaN is the same NaN.
      double number = id == arrow::Type::FLOAT
                          ? static_cast<double>(
                                static_cast<const arrow::FloatArray&>(column).Value(row))
                          : static_cast<const arrow::DoubleArray&>(column).Value(row);
      if (number == 0) number = 0.0;
      if (std::isnan(number)) number = std::numeric_limits<double>::quiet_NaN();
      out->append(reinterpret_cast<const char*>(&number), sizeof(number));
      return;
    }
    std::string_view value;
    if (id == arrow::Type::STRING || id == arrow::Type::BINARY) {
      value = static_cast<const arrow::BinaryArray&>(column).GetView(row);
    } else if (id == arrow::Type::LARGE_STRING || id == arrow::Type::LARGE_BINARY) {
      value = static_cast<const arrow::LargeBinaryArray&>(column).GetView(row);
    } else if (id == arrow::Type::STRING_VIEW || id == arrow::Type::BINARY_VIEW) {
      value = static_cast<const arrow::BinaryViewArray&>(column).GetView(row);
    } else {
      const int width = column.type()->byte_width();
      const uint8_t* values = column.data()->buffers[1]->data();
      value = std::string_view(
          reinterpret_cast<const char*>(values) + (column.offset() + row) * width,
          static_cast<size_t>(width));
    }
    // Length-prefixed so that ("ab","c") and ("a","bc") differ.
    const uint32_t length = static_cast<uint32_t>(value.size());
    out->append(reinterpret_cast<const char*>(&length), sizeof(length));
    out->append(value);
  }
};

arrow::Result<std::shared_ptr<arrow::BooleanArray>> MaskOf(
    const std::vector<bool>& keep) {
  arrow::BooleanBuilder mask;
  ARROW_RETURN_NOT_OK(mask.AppendValues(keep));
  std::shared_ptr<arrow::BooleanArray> array;
  ARROW_RETURN_NOT_OK(mask.Finish(&array));
  return array;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FilterRows(
    const std::shared_ptr<arrow::RecordBatch>& batch, const std::vector<bool>& keep) {
  ARROW_ASSIGN_OR_RAISE(auto mask, MaskOf(keep));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum kept, cp::Filter(batch, mask));
  return kept.record_batch();
}

std::string Quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out.push_back(c);
    if (c == '\'') out.push_back('\'');
  }
  return out + "'";
}

// A predicate `k BETWEEN min AND max AND …` over the source's key ranges, for pruning the
// table's files by partition values and statistics; nullopt when no key can prune.
arrow::Result<std::optional<Predicate>> KeyRangePredicate(
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& source,
    const std::shared_ptr<arrow::Schema>& schema, const std::vector<int>& indices) {
  std::string text;
  for (int index : indices) {
    const auto& field = schema->field(index);
    if (!IsPartitionableType(*field->type()) || field->type()->id() == arrow::Type::BOOL)
      continue;
    arrow::ArrayVector chunks;
    for (const auto& batch : source) chunks.push_back(batch->column(index));
    ARROW_ASSIGN_OR_RAISE(auto column, arrow::ChunkedArray::Make(chunks, field->type()));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum range, cp::MinMax(column));
    const auto& pair = static_cast<const arrow::StructScalar&>(*range.scalar());
    if (!pair.value[0]->is_valid) continue;  // every key null
    std::string bounds[2];
    bool ok = true;
    for (int i = 0; i < 2; ++i) {
      ARROW_ASSIGN_OR_RAISE(auto one, arrow::MakeArrayFromScalar(*pair.value[i], 1));
      auto serialised = SerializePartitionValue(*one, 0);
      if (!serialised.ok() || !serialised->has_value()) {
        ok = false;
        break;
      }
      bounds[i] = **serialised;
    }
    if (!ok) continue;
    if (!text.empty()) text += " AND ";
    std::string name = field->name();
    std::string quoted = "`";
    for (char c : name) quoted += c == '`' ? std::string("``") : std::string(1, c);
    text += quoted + "` BETWEEN " + Quote(bounds[0]) + " AND " + Quote(bounds[1]);
  }
  if (text.empty()) return std::optional<Predicate>();
  auto parsed = Predicate::Parse(text, schema);
  if (!parsed.ok()) {
    // Pruning is an optimisation: without it every file is read.
    AMPDELTA_LOG_DEBUG("merge: no key-range pruning (", parsed.status().message(), ")");
    return std::optional<Predicate>();
  }
  return std::optional<Predicate>(std::move(*parsed));
}

// An updated row keeps the identity values the table gave it (Spark's UPDATE SET * leaves
// identity columns alone); a new row keeps those the writer assigned it.
class KeptIdentity {
 public:
  KeptIdentity(const arrow::Schema& schema, const std::vector<std::string>& columns) {
    for (const auto& name : columns) {
      const int index = FindFieldIgnoreCase(schema, name);
      if (index >= 0) indices_.push_back(index);
    }
  }

  // Remember the identity values of table row `row`, replaced by the source's `key`.
  void Remember(const arrow::RecordBatch& rows, int64_t row, const std::string& key) {
    if (indices_.empty()) return;
    auto& values = values_[key];
    values.clear();
    for (int index : indices_) {
      const auto& column = static_cast<const arrow::Int64Array&>(*rows.column(index));
      values.push_back(column.IsNull(row) ? std::nullopt
                                          : std::optional<int64_t>(column.Value(row)));
    }
  }

  // `rows` (the source's, keyed by `keys`) with the remembered values of matched keys.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Apply(
      const std::shared_ptr<arrow::RecordBatch>& rows,
      const std::vector<std::optional<std::string>>& keys) const {
    if (values_.empty()) return rows;
    std::shared_ptr<arrow::RecordBatch> out = rows;
    for (size_t i = 0; i < indices_.size(); ++i) {
      const int index = indices_[i];
      const auto& column = static_cast<const arrow::Int64Array&>(*rows->column(index));
      arrow::Int64Builder builder;
      ARROW_RETURN_NOT_OK(builder.Reserve(rows->num_rows()));
      for (int64_t row = 0; row < rows->num_rows(); ++row) {
        const auto& key = keys[static_cast<size_t>(row)];
        const auto kept = key ? values_.find(*key) : values_.end();
        std::optional<int64_t> value = kept != values_.end() ? kept->second[i]
                                       : column.IsNull(row)
                                           ? std::nullopt
                                           : std::optional<int64_t>(column.Value(row));
        if (value) {
          builder.UnsafeAppend(*value);
        } else {
          builder.UnsafeAppendNull();
        }
      }
      ARROW_ASSIGN_OR_RAISE(auto array, builder.Finish());
      ARROW_ASSIGN_OR_RAISE(out,
                            out->SetColumn(index, rows->schema()->field(index), array));
    }
    return out;
  }

 private:
  std::vector<int> indices_;
  std::unordered_map<std::string, std::vector<std::optional<int64_t>>> values_;
};

// The row IDs of the table rows the merge replaces (row tracking, row_tracking.h): an
// updated row keeps its ID and takes the merge's commit version.
class KeptRowIds {
 public:
  explicit KeptRowIds(std::optional<MaterializedRowColumns> columns)
      : columns_(std::move(columns)) {}

  // Remember the row ID of table row `row` of `read` (a file's rows with their IDs),
  // replaced by the source's `key`.
  void Remember(const arrow::RecordBatch& read, int64_t row, const std::string& key) {
    if (!columns_) return;
    const auto& ids =
        static_cast<const arrow::Int64Array&>(*read.GetColumnByName(columns_->row_id));
    ids_[key] = ids.Value(row);
  }

  // `rows` (the source's, keyed by `keys`) with the materialized columns: the
  // remembered IDs of matched keys, nulls (fresh IDs) for the rest.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Apply(
      const std::shared_ptr<arrow::RecordBatch>& rows,
      const std::vector<std::optional<std::string>>& keys) const {
    if (!columns_) return rows;
    arrow::Int64Builder builder;
    ARROW_RETURN_NOT_OK(builder.Reserve(rows->num_rows()));
    for (int64_t row = 0; row < rows->num_rows(); ++row) {
      const auto& key = keys[static_cast<size_t>(row)];
      const auto kept = key ? ids_.find(*key) : ids_.end();
      if (kept != ids_.end()) {
        builder.UnsafeAppend(kept->second);
      } else {
        builder.UnsafeAppendNull();
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto ids, builder.Finish());
    const auto carried = arrow::RecordBatch::Make(
        arrow::schema({arrow::field(columns_->row_id, arrow::int64())}), rows->num_rows(),
        {std::move(ids)});
    return WithMaterializedColumns(rows, carried, *columns_);
  }

  // `rows` (a file's, in the table schema) with the IDs and commit versions `read`
  // carries: copied rows keep both.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Carry(
      const std::shared_ptr<arrow::RecordBatch>& rows,
      const std::shared_ptr<arrow::RecordBatch>& read) const {
    if (!columns_) return rows;
    return WithMaterializedColumns(rows, read, *columns_);
  }

  std::vector<std::string> names() const {
    return columns_ ? columns_->names() : std::vector<std::string>{};
  }

 private:
  std::optional<MaterializedRowColumns> columns_;
  std::unordered_map<std::string, int64_t> ids_;
};

// Record the merge's surviving source rows in the change data feed: a row whose key
// matched a table row is its update_postimage, any other an insert.
arrow::Status RecordSourceChanges(TableWriter* writer,
                                  const std::shared_ptr<arrow::RecordBatch>& rows,
                                  const std::vector<int>& indices,
                                  const std::unordered_set<std::string>& matched) {
  const auto keys = KeyEncoder::Encode(*rows, indices);
  std::vector<bool> updates(keys.size());
  std::vector<bool> inserts(keys.size());
  for (size_t row = 0; row < keys.size(); ++row) {
    updates[row] = keys[row] && matched.count(*keys[row]) != 0;
    inserts[row] = !updates[row];
  }
  ARROW_ASSIGN_OR_RAISE(auto after, FilterRows(rows, updates));
  ARROW_RETURN_NOT_OK(writer->RecordChange(after, ChangeType::kUpdatePostimage));
  ARROW_ASSIGN_OR_RAISE(auto added, FilterRows(rows, inserts));
  return writer->RecordChange(added, ChangeType::kInsert);
}

// The commit's write options: an append that is serializable (a concurrent append
// conflicts), recorded as Spark records a MERGE.
TableWriteOptions MergeWriteOptions(const MergeOptions& options) {
  TableWriteOptions write = options.write;
  write.mode = SaveMode::kAppend;
  write.operation = "MERGE";
  write.serializable = true;
  std::string predicate;
  for (const auto& key : options.keys) {
    predicate +=
        (predicate.empty() ? "" : " AND ") + ("target." + key + " = source." + key);
  }
  write.operation_parameters["predicate"] = predicate;
  write.operation_parameters["matchedPredicates"] = R"([{"actionType":"update"}])";
  write.operation_parameters["notMatchedPredicates"] = R"([{"actionType":"insert"}])";
  return write;
}

std::string FieldNames(const arrow::Schema& schema) {
  std::vector<std::string> names;
  for (const auto& field : schema.fields()) names.push_back(field->name());
  return json_util::DumpJsonLossy(nlohmann::json(names));
}

// The key columns' indices in the table's schema as the writer will write it; each key
// is in the source and the existing table (key names are case-insensitive, as every
// Delta column name), named once, and of a type that encodes.
arrow::Result<std::vector<int>> ResolveKeys(const TableWriter& writer,
                                            const arrow::Schema& source_schema,
                                            const std::vector<std::string>& keys) {
  const auto& schema = writer.table_schema();
  const auto& existing = writer.read_snapshot();
  std::vector<int> indices;
  for (const auto& key : keys) {
    const int index = FindFieldIgnoreCase(*schema, key);
    if (index < 0 || FindFieldIgnoreCase(source_schema, key) < 0) {
      return InvalidInputError(
          "merge key column '", key,
          "' not found in the data; available columns: ", FieldNames(source_schema));
    }
    // A key the existing table lacks matches no row: every source row would be a new one.
    if (existing != nullptr && FindFieldIgnoreCase(*existing->schema(), key) < 0) {
      return InvalidInputError("merge key column '", key,
                               "' is not a column of the table; table columns: ",
                               FieldNames(*existing->schema()));
    }
    if (std::find(indices.begin(), indices.end(), index) != indices.end()) {
      return InvalidInputError("merge_keys lists column '", key,
                               "' twice (column names are case-insensitive)");
    }
    ARROW_RETURN_NOT_OK(KeyEncoder::CheckType(*schema->field(index)));
    indices.push_back(index);
  }
  return indices;
}

// The source in the table's types, so its keys encode exactly as the table's do.
struct MergeSource {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;   // none empty
  std::vector<std::vector<std::optional<std::string>>> keys;  // per batch, per row
  // key -> (batch, row) of its last occurrence: the row that wins.
  std::unordered_map<std::string, std::pair<size_t, int64_t>> last;
  int64_t rows = 0;

  bool Wins(const std::string& key, size_t batch, int64_t row) const {
    const auto& winner = last.at(key);
    return winner.first == batch && winner.second == row;
  }
};

arrow::Result<MergeSource> ConformSource(
    TableWriter* writer, const std::vector<std::shared_ptr<arrow::RecordBatch>>& source,
    const std::vector<int>& indices) {
  MergeSource conformed;
  for (const auto& batch : source) {
    if (batch->num_rows() == 0) continue;
    ARROW_ASSIGN_OR_RAISE(auto converted, writer->Conform(batch));
    auto keys = KeyEncoder::Encode(*converted, indices);
    for (int64_t row = 0; row < converted->num_rows(); ++row) {
      const auto& key = keys[static_cast<size_t>(row)];
      if (key) conformed.last[*key] = {conformed.batches.size(), row};
    }
    conformed.rows += converted->num_rows();
    conformed.batches.push_back(std::move(converted));
    conformed.keys.push_back(std::move(keys));
  }
  return conformed;
}

// The table files a merge reads: those the source's key ranges may match, in the
// table's order, decided from partition values and statistics before any is read.
struct MergePlan {
  std::vector<const Add*> files;
  int64_t files_skipped = 0;
};

arrow::Result<MergePlan> PlanMerge(const Snapshot& snapshot, const MergeSource& source,
                                   const std::shared_ptr<arrow::Schema>& schema,
                                   const std::vector<int>& indices) {
  MergePlan plan;
  ARROW_ASSIGN_OR_RAISE(auto prune, KeyRangePredicate(source.batches, schema, indices));
  for (const auto& file : snapshot.files()) {
    if (prune &&
        prune->Classify(file, snapshot.partition_columns()) == FileMatch::kNone) {
      ++plan.files_skipped;
    } else {
      plan.files.push_back(&file);
    }
  }
  return plan;
}

// A merge's execution through its writer: the table rows a source row replaces go (their
// identity values and row IDs passed to the replacing rows), then the winning source
// rows are written and the whole committed.
class MergeRun {
 public:
  MergeRun(TableWriter* writer, const MergeSource& source, std::vector<int> indices,
           std::optional<MaterializedRowColumns> tracked)
      : writer_(writer),
        source_(source),
        indices_(std::move(indices)),
        kept_identity_(*writer->table_schema(), writer->generated_identity_columns()),
        kept_row_ids_(std::move(tracked)) {
    result_.source_rows = source.rows;
  }

  arrow::Status ReplaceMatchedRows(const Snapshot& snapshot, const MergePlan& plan) {
    result_.files_skipped = plan.files_skipped;
    RowEdit edit(snapshot, writer_);
    for (const Add* file : plan.files) {
      ++result_.files_read;
      ARROW_RETURN_NOT_OK(ReplaceInFile(*file, &edit));
    }
    writer_->StageEdit(&edit);
    return arrow::Status::OK();
  }

  // The source rows that survive: the last occurrence of each key, and every null-keyed
  // row.
  arrow::Status WriteSource() {
    for (size_t b = 0; b < source_.batches.size(); ++b) {
      ARROW_RETURN_NOT_OK(WriteSourceBatch(b));
    }
    const int64_t kept = result_.source_rows - result_.source_duplicates;
    result_.rows_inserted = kept - static_cast<int64_t>(matched_.size());
    return arrow::Status::OK();
  }

  arrow::Result<MergeResult> Commit() {
    writer_->AddOperationMetrics({
        {"numSourceRows", std::to_string(result_.source_rows)},
        {"numTargetRowsInserted", std::to_string(result_.rows_inserted)},
        {"numTargetRowsUpdated", std::to_string(result_.rows_updated)},
        {"numTargetRowsCopied", std::to_string(result_.rows_copied)},
        {"numTargetRowsDeleted", "0"},
        {"numTargetFilesRemoved", std::to_string(result_.files_rewritten)},
        {"numTargetDeletionVectorsAdded", std::to_string(result_.files_marked)},
    });
    ARROW_ASSIGN_OR_RAISE(result_.write, writer_->Commit());
    return result_;
  }

 private:
  arrow::Status ReplaceInFile(const Add& file, RowEdit* edit) {
    ARROW_ASSIGN_OR_RAISE(auto read_rows, edit->Read(file));
    ARROW_ASSIGN_OR_RAISE(auto rows, WithoutColumns(read_rows, kept_row_ids_.names()));
    ARROW_ASSIGN_OR_RAISE(rows, ConformBatch(rows, writer_->table_schema()));
    auto keys = KeyEncoder::Encode(*rows, indices_);
    std::vector<bool> keep(keys.size(), true);
    int64_t replaced = 0;
    for (size_t row = 0; row < keys.size(); ++row) {
      if (!keys[row] || source_.last.count(*keys[row]) == 0) continue;
      keep[row] = false;
      matched_.insert(*keys[row]);
      kept_identity_.Remember(*rows, static_cast<int64_t>(row), *keys[row]);
      kept_row_ids_.Remember(*read_rows, static_cast<int64_t>(row), *keys[row]);
      ++replaced;
    }
    if (replaced == 0) {
      edit->AlsoRead(file);  // statistics were loose: the file stays as it is
      return arrow::Status::OK();
    }
    // The replaced rows go (row_edit.h); a rewrite carries the kept rows' row IDs.
    std::shared_ptr<arrow::RecordBatch> carried;
    if (edit->rewrites() && replaced < rows->num_rows()) {
      ARROW_ASSIGN_OR_RAISE(carried, kept_row_ids_.Carry(rows, read_rows));
    }
    ARROW_ASSIGN_OR_RAISE(auto mask, MaskOf(keep));
    ARROW_ASSIGN_OR_RAISE(
        const FileEdit done,
        edit->Drop(file, rows, mask, ChangeType::kUpdatePreimage, std::move(carried)));
    result_.rows_updated += replaced;
    if (done.marked != nullptr) ++result_.files_marked;
    if (done.marked == nullptr) ++result_.files_rewritten;
    if (done.rewritten) result_.rows_copied += done.rows_kept;
    return arrow::Status::OK();
  }

  arrow::Status WriteSourceBatch(size_t b) {
    const auto& keys = source_.keys[b];
    std::vector<bool> keep(keys.size(), true);
    int64_t dropped = 0;
    for (size_t row = 0; row < keys.size(); ++row) {
      if (keys[row] && !source_.Wins(*keys[row], b, static_cast<int64_t>(row))) {
        keep[row] = false;
        ++dropped;
      }
    }
    result_.source_duplicates += dropped;
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::RecordBatch> rows,
                          kept_identity_.Apply(source_.batches[b], keys));
    ARROW_ASSIGN_OR_RAISE(rows, kept_row_ids_.Apply(rows, keys));
    if (dropped > 0) {
      ARROW_ASSIGN_OR_RAISE(rows, FilterRows(rows, keep));
    }
    if (rows->num_rows() == 0) return arrow::Status::OK();
    ARROW_RETURN_NOT_OK(writer_->Write(rows));
    if (writer_->records_changes() && !matched_.empty()) {
      // Rows that replaced a table row are updates; the rest are inserts.
      ARROW_RETURN_NOT_OK(RecordSourceChanges(writer_, rows, indices_, matched_));
    }
    return arrow::Status::OK();
  }

  TableWriter* writer_;
  const MergeSource& source_;
  const std::vector<int> indices_;
  KeptIdentity kept_identity_;
  KeptRowIds kept_row_ids_;
  std::unordered_set<std::string> matched_;
  MergeResult result_;
};

arrow::Result<MergeResult> MergeOnce(
    const std::shared_ptr<storage::ObjectStore>& store,
    const std::shared_ptr<arrow::Schema>& source_schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& source,
    const MergeOptions& options) {
  ARROW_ASSIGN_OR_RAISE(
      auto writer, TableWriter::Open(store, source_schema, MergeWriteOptions(options)));
  ARROW_ASSIGN_OR_RAISE(const std::vector<int> indices,
                        ResolveKeys(*writer, *source_schema, options.keys));
  ARROW_ASSIGN_OR_RAISE(const MergeSource conformed,
                        ConformSource(writer.get(), source, indices));
  const auto& snapshot = writer->read_snapshot();
  if (snapshot != nullptr && conformed.rows == 0) {
    ARROW_RETURN_NOT_OK(writer->Abort());
    return MergeResult{};  // nothing to merge: no commit
  }
  std::optional<MaterializedRowColumns> tracked;
  if (snapshot != nullptr) {
    ARROW_ASSIGN_OR_RAISE(tracked, MaterializedColumns(snapshot->metadata().configuration,
                                                       *snapshot->schema()));
  }
  MergeRun run(writer.get(), conformed, indices, std::move(tracked));
  // Only null keys match nothing.
  if (snapshot != nullptr && !conformed.last.empty()) {
    ARROW_ASSIGN_OR_RAISE(
        const MergePlan plan,
        PlanMerge(*snapshot, conformed, writer->table_schema(), indices));
    ARROW_RETURN_NOT_OK(run.ReplaceMatchedRows(*snapshot, plan));
  }
  ARROW_RETURN_NOT_OK(run.WriteSource());
  return run.Commit();
}

}  // namespace

arrow::Result<MergeResult> MergeRows(
    std::shared_ptr<storage::ObjectStore> store,
    const std::shared_ptr<arrow::Schema>& source_schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& source,
    const MergeOptions& options) {
  if (options.keys.empty()) {
    return InvalidInputError("merge needs merge_keys: the columns that identify a row");
  }
  arrow::Status last_conflict;
  for (int attempt = 1; attempt <= std::max(1, options.max_attempts); ++attempt) {
    auto merged = MergeOnce(store, source_schema, source, options);
    if (merged.ok()) {
      merged->attempts = attempt;
      return merged;
    }
    if (!IsError(merged.status(), ErrorCode::kCommitConflict)) return merged.status();
    // A concurrent commit changed what the merge read: merge again against the new
    // version.
    last_conflict = merged.status();
    AMPDELTA_LOG_INFO("merge attempt ", attempt,
                      " conflicted: ", last_conflict.message());
  }
  return last_conflict;
}

}  // namespace ampdelta::delta

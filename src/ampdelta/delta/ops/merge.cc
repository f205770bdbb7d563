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

arrow::Result<MergeResult> MergeOnce(
    const std::shared_ptr<storage::ObjectStore>& store,
    const std::shared_ptr<arrow::Schema>& source_schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& source,
    const MergeOptions& options) {
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
  ARROW_ASSIGN_OR_RAISE(auto writer, TableWriter::Open(store, source_schema, write));
  const auto& schema = writer->table_schema();
  std::vector<int> indices;
  for (const auto& key : options.keys) {
    // Key names are case-insensitive, as every Delta column name.
    const int index = FindFieldIgnoreCase(*schema, key);
    if (index < 0 || FindFieldIgnoreCase(*source_schema, key) < 0) {
      std::vector<std::string> available;
      for (const auto& field : source_schema->fields())
        available.push_back(field->name());
      return InvalidInputError("merge key column '", key,
                               "' not found in the data; available columns: ",
                               json_util::DumpJsonLossy(nlohmann::json(available)));
    }
    // A key the existing table lacks matches no row: every source row would be a new one.
    const auto& existing = writer->read_snapshot();
    if (existing != nullptr && FindFieldIgnoreCase(*existing->schema(), key) < 0) {
      std::vector<std::string> columns;
      for (const auto& field : existing->schema()->fields())
        columns.push_back(field->name());
      return InvalidInputError("merge key column '", key,
                               "' is not a column of the table; table "
                               "columns: ",
                               nlohmann::json(columns).dump());
    }
    if (std::find(indices.begin(), indices.end(), index) != indices.end()) {
      return InvalidInputError("merge_keys lists column '", key,
                               "' twice (column names are case-insensitive)");
    }
    ARROW_RETURN_NOT_OK(KeyEncoder::CheckType(*schema->field(index)));
    indices.push_back(index);
  }

  MergeResult result;
  // The source in the table's types, so its keys encode exactly as the table's do.
  std::vector<std::shared_ptr<arrow::RecordBatch>> conformed;
  std::vector<std::vector<std::optional<std::string>>> source_keys;
  // key -> (batch, row) of its last occurrence.
  std::unordered_map<std::string, std::pair<size_t, int64_t>> last;
  for (const auto& batch : source) {
    if (batch->num_rows() == 0) continue;
    ARROW_ASSIGN_OR_RAISE(auto converted, writer->Conform(batch));
    auto keys = KeyEncoder::Encode(*converted, indices);
    for (int64_t row = 0; row < converted->num_rows(); ++row) {
      const auto& key = keys[static_cast<size_t>(row)];
      if (key) last[*key] = {conformed.size(), row};
    }
    result.source_rows += converted->num_rows();
    conformed.push_back(std::move(converted));
    source_keys.push_back(std::move(keys));
  }

  const auto& snapshot = writer->read_snapshot();
  if (snapshot != nullptr && result.source_rows == 0) {
    ARROW_RETURN_NOT_OK(writer->Abort());
    return result;  // nothing to merge: no commit
  }
  std::unordered_set<std::string> matched;
  KeptIdentity kept_identity(*schema, writer->generated_identity_columns());
  std::optional<MaterializedRowColumns> tracked;
  if (snapshot != nullptr) {
    ARROW_ASSIGN_OR_RAISE(tracked, MaterializedColumns(snapshot->metadata().configuration,
                                                       *snapshot->schema()));
  }
  KeptRowIds kept_row_ids(std::move(tracked));
  if (snapshot != nullptr && !last.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto prune, KeyRangePredicate(conformed, schema, indices));
    RowEdit edit(*snapshot, writer.get());
    for (const auto& file : snapshot->files()) {
      if (prune &&
          prune->Classify(file, snapshot->partition_columns()) == FileMatch::kNone) {
        ++result.files_skipped;
        continue;
      }
      ++result.files_read;
      ARROW_ASSIGN_OR_RAISE(auto read_rows, edit.Read(file));
      ARROW_ASSIGN_OR_RAISE(auto rows, WithoutColumns(read_rows, kept_row_ids.names()));
      ARROW_ASSIGN_OR_RAISE(rows, ConformBatch(rows, schema));
      auto keys = KeyEncoder::Encode(*rows, indices);
      std::vector<bool> keep(keys.size(), true);
      int64_t replaced = 0;
      for (size_t row = 0; row < keys.size(); ++row) {
        if (keys[row] && last.count(*keys[row]) != 0) {
          keep[row] = false;
          matched.insert(*keys[row]);
          kept_identity.Remember(*rows, static_cast<int64_t>(row), *keys[row]);
          kept_row_ids.Remember(*read_rows, static_cast<int64_t>(row), *keys[row]);
          ++replaced;
        }
      }
      if (replaced == 0) {
        edit.AlsoRead(file);  // statistics were loose: the file stays as it is
        continue;
      }
      // The replaced rows go (row_edit.h); a rewrite carries the kept rows' row IDs.
      std::shared_ptr<arrow::RecordBatch> carried;
      if (edit.rewrites() && replaced < rows->num_rows()) {
        ARROW_ASSIGN_OR_RAISE(carried, kept_row_ids.Carry(rows, read_rows));
      }
      ARROW_ASSIGN_OR_RAISE(auto mask, MaskOf(keep));
      ARROW_ASSIGN_OR_RAISE(
          const FileEdit done,
          edit.Drop(file, rows, mask, ChangeType::kUpdatePreimage, std::move(carried)));
      result.rows_updated += replaced;
      if (done.marked != nullptr) ++result.files_marked;
      if (done.marked == nullptr) ++result.files_rewritten;
      if (done.rewritten) result.rows_copied += done.rows_kept;
    }
    writer->StageEdit(&edit);
  }

  // The source rows that survive: the last occurrence of each key, and every null-keyed
  // row.
  for (size_t b = 0; b < conformed.size(); ++b) {
    const auto& keys = source_keys[b];
    std::vector<bool> keep(keys.size(), true);
    int64_t dropped = 0;
    for (size_t row = 0; row < keys.size(); ++row) {
      if (!keys[row]) continue;
      const auto& winner = last.at(*keys[row]);
      if (winner.first != b || winner.second != static_cast<int64_t>(row)) {
        keep[row] = false;
        ++dropped;
      }
    }
    result.source_duplicates += dropped;
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::RecordBatch> rows,
                          kept_identity.Apply(conformed[b], keys));
    ARROW_ASSIGN_OR_RAISE(rows, kept_row_ids.Apply(rows, keys));
    if (dropped > 0) {
      ARROW_ASSIGN_OR_RAISE(rows, FilterRows(rows, keep));
    }
    if (rows->num_rows() == 0) continue;
    ARROW_RETURN_NOT_OK(writer->Write(rows));
    if (writer->records_changes() && !matched.empty()) {
      // Rows that replaced a table row are updates; the rest are inserts.
      ARROW_RETURN_NOT_OK(RecordSourceChanges(writer.get(), rows, indices, matched));
    }
  }
  const int64_t kept = result.source_rows - result.source_duplicates;
  result.rows_inserted = kept - static_cast<int64_t>(matched.size());

  writer->AddOperationMetrics({
      {"numSourceRows", std::to_string(result.source_rows)},
      {"numTargetRowsInserted", std::to_string(result.rows_inserted)},
      {"numTargetRowsUpdated", std::to_string(result.rows_updated)},
      {"numTargetRowsCopied", std::to_string(result.rows_copied)},
      {"numTargetRowsDeleted", "0"},
      {"numTargetFilesRemoved", std::to_string(result.files_rewritten)},
      {"numTargetDeletionVectorsAdded", std::to_string(result.files_marked)},
  });
  ARROW_ASSIGN_OR_RAISE(result.write, writer->Commit());
  return result;
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

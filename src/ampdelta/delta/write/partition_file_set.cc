#include "ampdelta/delta/write/partition_file_set.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/compute/row/grouper.h>
#include <arrow/io/interfaces.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/compression.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/write/column_plan.h"
#include "ampdelta/delta/write/stats.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

namespace cp = arrow::compute;

// In-memory Arrow bytes after which a row group is flushed even if it has fewer rows:
// keeps memory bounded for wide rows and lets files roll near their target size.
constexpr int64_t kMaxBufferedRowGroupBytes = 64 * 1024 * 1024;
// Open partition files beyond this are closed (least recently written first).
constexpr size_t kMaxOpenFiles = 64;

// One Parquet file being written.
struct OpenFile {
  std::string key;
  NullableStringMap partition_values;
  std::shared_ptr<arrow::io::OutputStream> sink;
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  std::unique_ptr<StatsCollector> stats;
  int64_t rows = 0;
  int64_t buffered_bytes = 0;
  int64_t buffered_rows = 0;
};

}  // namespace

class PartitionFileSet::Impl {
 public:
  Impl(std::shared_ptr<storage::ObjectStore> store,
       std::shared_ptr<arrow::Schema> table_schema,
       std::vector<std::string> partition_columns, DataFileOptions options)
      : store_(std::move(store)),
        table_schema_(std::move(table_schema)),
        partition_columns_(std::move(partition_columns)),
        options_(std::move(options)) {}

  arrow::Status Init() {
    // Data files name columns physically (column mapping; column_mapping.h).
    const auto physical = PhysicalSchema(*table_schema_);
    arrow::FieldVector data_fields;
    for (int i = 0; i < table_schema_->num_fields(); ++i) {
      const auto& field = table_schema_->field(i);
      // The log may spell a partition column in another case than the schema (names are
      // case-insensitive); partitionValues keys and folders follow the log's spelling.
      const auto partition =
          std::find_if(partition_columns_.begin(), partition_columns_.end(),
                       [&](const std::string& column) {
                         return EqualsIgnoreAsciiCase(column, field->name());
                       });
      if (partition != partition_columns_.end()) {
        partition_indices_.push_back(i);
        const bool mapped = PhysicalName(*field) != field->name();
        partition_names_.push_back(mapped ? physical->field(i)->name() : *partition);
        partition_logical_.push_back(*partition);
      } else {
        data_indices_.push_back(i);
        data_fields.push_back(physical->field(i));
      }
    }
    if (partition_names_.size() != partition_columns_.size()) {
      for (const auto& column : partition_columns_) {
        if (std::find(partition_logical_.begin(), partition_logical_.end(), column) ==
            partition_logical_.end()) {
          return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                           "partition column '", column, "' is not in the schema");
        }
      }
    }
    stats_schema_ = arrow::schema(data_fields);
    arrow::FieldVector expected = table_schema_->fields();
    for (const auto& name : options_.row_tracking_columns) {
      data_fields.push_back(arrow::field(name, arrow::int64()));
      expected.push_back(data_fields.back());
    }
    expected_schema_ = arrow::schema(std::move(expected));
    data_schema_ = arrow::schema(std::move(data_fields));
    // Statistics are keyed by physical name too.
    if (options_.stats.stats_columns) {
      for (auto& column : *options_.stats.stats_columns) {
        column = PhysicalColumnPath(*table_schema_, column);
      }
    }
    for (auto& column : options_.stats.always_indexed) {
      column = PhysicalColumnName(*table_schema_, column);
    }
    properties_ = MakeWriterProperties(ColumnPlan{}, options_, *data_schema_);
    parquet::ArrowWriterProperties::Builder arrow_builder;
    arrow_builder.coerce_timestamps(arrow::TimeUnit::MICRO);
    arrow_builder.enable_compliant_nested_types();
    // Encode a row group's columns in parallel on Arrow's CPU pool: files are written one
    // at a time from this thread, so the pool cannot deadlock on nested file writes.
    arrow_builder.set_use_threads(options_.parallel_encoding);
    arrow_properties_ = arrow_builder.build();
    return arrow::Status::OK();
  }

  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& input) {
    if (input->num_rows() == 0) return arrow::Status::OK();
    std::shared_ptr<arrow::RecordBatch> batch = input;
    if (options_.prepare) {
      ARROW_ASSIGN_OR_RAISE(batch, options_.prepare(input));
    }
    if (!batch->schema()->Equals(*expected_schema_, /*check_metadata=*/false)) {
      return arrow::Status::Invalid("batch schema ", batch->schema()->ToString(),
                                    " differs from the table schema ",
                                    expected_schema_->ToString());
    }
    if (partition_indices_.empty()) return WriteToPartition({}, batch);
    // Group rows by their partition values.
    std::vector<arrow::TypeHolder> key_types;
    std::vector<arrow::Datum> keys;
    for (int index : partition_indices_) {
      key_types.emplace_back(batch->column(index)->type());
      keys.emplace_back(batch->column(index));
    }
    ARROW_ASSIGN_OR_RAISE(auto grouper, cp::Grouper::Make(key_types));
    ARROW_ASSIGN_OR_RAISE(cp::ExecBatch key_batch, cp::ExecBatch::Make(keys));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum ids, grouper->Consume(cp::ExecSpan(key_batch)));
    ARROW_ASSIGN_OR_RAISE(auto groupings,
                          cp::Grouper::MakeGroupings(*ids.array_as<arrow::UInt32Array>(),
                                                     grouper->num_groups()));
    ARROW_ASSIGN_OR_RAISE(cp::ExecBatch uniques, grouper->GetUniques());
    for (uint32_t group = 0; group < grouper->num_groups(); ++group) {
      NullableStringMap values;
      for (size_t k = 0; k < partition_indices_.size(); ++k) {
        const auto& unique = uniques.values[k].make_array();
        ARROW_ASSIGN_OR_RAISE(auto value, SerializePartitionValue(*unique, group));
        values[partition_names_[k]] = std::move(value);
      }
      auto indices = groupings->value_slice(group);
      ARROW_ASSIGN_OR_RAISE(arrow::Datum taken, cp::Take(batch, indices));
      ARROW_RETURN_NOT_OK(WriteToPartition(std::move(values), taken.record_batch()));
    }
    return arrow::Status::OK();
  }

  // A file with no rows in the given partition (it carries tags when nothing else is
  // left).
  // `values` may be keyed by logical or physical name.
  arrow::Status WriteEmptyFile(const NullableStringMap& values) {
    NullableStringMap keyed;
    for (size_t k = 0; k < partition_names_.size(); ++k) {
      const bool physical = values.count(partition_names_[k]) != 0;
      keyed[partition_names_[k]] = FindPartitionValue(
          values, physical ? partition_names_[k] : partition_logical_[k]);
    }
    ARROW_ASSIGN_OR_RAISE(auto empty, arrow::RecordBatch::MakeEmpty(data_schema_));
    ARROW_ASSIGN_OR_RAISE(auto it, OpenFor(keyed, *empty));
    return CloseFile(it);
  }

  // The files stay listed: Abort() after Finish() (a failed commit) still deletes them.
  arrow::Result<std::vector<Add>> Finish() {
    while (!open_.empty()) ARROW_RETURN_NOT_OK(CloseFile(open_.begin()));
    finished_ = true;
    return added_;
  }

  arrow::Status Abort() {
    std::vector<std::string> staged;
    for (auto& [key, file] : open_) {
      if (file.writer) (void)file.writer->Close();
      (void)file.sink->Abort();
      staged.push_back(file.key);
    }
    open_.clear();
    std::vector<std::string> paths;
    for (const auto& add : added_) paths.push_back(DecodeLogPath(add.path));
    added_.clear();
    return store_->DeleteWithFolders(paths, staged);
  }

  int64_t bytes_written() const { return bytes_written_; }
  int64_t rows_written() const { return rows_written_; }

  void set_file_numbering(int64_t first, int64_t step) {
    file_counter_ = first;
    file_step_ = step;
  }

  ~Impl() {
    if (!finished_ && (!open_.empty() || !added_.empty())) {
      arrow::Status status = Abort();
      if (!status.ok())
        AMPDELTA_LOG_WARN("delta abandoned data files not removed: ", status.ToString());
    }
  }

 private:
  using OpenFiles = std::map<std::string, OpenFile>;

  arrow::Result<OpenFiles::iterator> OpenFor(const NullableStringMap& values,
                                             const arrow::RecordBatch& sample) {
    const std::string folder = PartitionFolder(partition_names_, values);
    auto it = open_.find(folder);
    if (it != open_.end()) {
      Touch(folder);
      return it;
    }
    if (open_.size() >= kMaxOpenFiles) {
      auto oldest = open_.find(recency_.front());
      ARROW_RETURN_NOT_OK(CloseFile(oldest));
    }
    OpenFile file;
    const int64_t number = file_counter_;
    file_counter_ += file_step_;
    file.key = NewDataFileKey(options_, folder, number);
    file.partition_values = values;
    ARROW_ASSIGN_OR_RAISE(auto plan, PlanColumns(sample, options_));
    const auto properties =
        plan.empty() ? properties_ : MakeWriterProperties(plan, options_, *data_schema_);
    ARROW_ASSIGN_OR_RAISE(file.sink, store_->OpenOutputStream(file.key));
    ARROW_ASSIGN_OR_RAISE(file.writer, parquet::arrow::FileWriter::Open(
                                           *data_schema_, arrow::default_memory_pool(),
                                           file.sink, properties, arrow_properties_));
    file.stats = std::make_unique<StatsCollector>(stats_schema_, options_.stats);
    recency_.push_back(folder);
    return open_.emplace(folder, std::move(file)).first;
  }

  // The columns of `data` that get statistics: all but the materialized ones.
  std::shared_ptr<arrow::RecordBatch> StatsColumns(
      const std::shared_ptr<arrow::RecordBatch>& data) const {
    if (stats_schema_->num_fields() == data->num_columns()) return data;
    std::vector<std::shared_ptr<arrow::Array>> columns(
        data->columns().begin(), data->columns().begin() + stats_schema_->num_fields());
    return arrow::RecordBatch::Make(stats_schema_, data->num_rows(), std::move(columns));
  }

  void Touch(const std::string& folder) {
    recency_.remove(folder);
    recency_.push_back(folder);
  }

  arrow::Status WriteToPartition(NullableStringMap values,
                                 const std::shared_ptr<arrow::RecordBatch>& batch) {
    std::vector<std::shared_ptr<arrow::Array>> columns;
    for (size_t i = 0; i < data_indices_.size(); ++i) {
      // Nested fields take their physical names (no copy).
      columns.push_back(ViewAs(batch->column(data_indices_[i]),
                               data_schema_->field(static_cast<int>(i))->type()));
    }
    for (int i = table_schema_->num_fields(); i < batch->num_columns(); ++i) {
      columns.push_back(batch->column(i));  // materialized row tracking columns
    }
    std::shared_ptr<arrow::RecordBatch> data =
        arrow::RecordBatch::Make(data_schema_, batch->num_rows(), std::move(columns));
    int64_t offset = 0;
    while (offset < data->num_rows()) {
      ARROW_ASSIGN_OR_RAISE(auto it, OpenFor(values, *data));
      OpenFile& file = it->second;
      int64_t take = data->num_rows() - offset;
      if (options_.max_rows_per_file > 0) {
        take = std::min(take, options_.max_rows_per_file - file.rows);
      }
      std::shared_ptr<arrow::RecordBatch> slice =
          offset == 0 && take == data->num_rows() ? data : data->Slice(offset, take);
      ARROW_RETURN_NOT_OK(file.writer->WriteRecordBatch(*slice));
      ARROW_RETURN_NOT_OK(file.stats->Update(*StatsColumns(slice)));
      file.rows += take;
      file.buffered_rows += take;
      const int64_t bytes = arrow::util::TotalBufferSize(*slice);
      file.buffered_bytes += bytes;
      buffered_bytes_ += bytes;
      rows_written_ += take;
      offset += take;
      // Flush the row group when it grows large in memory, then roll by size.
      if (file.buffered_rows >= options_.max_rows_per_group ||
          file.buffered_bytes >= RowGroupBytes()) {
        ARROW_ASSIGN_OR_RAISE(const bool closed, FlushRowGroup(it));
        if (closed) continue;
      }
      if (options_.max_rows_per_file > 0 && file.rows >= options_.max_rows_per_file) {
        ARROW_RETURN_NOT_OK(CloseFile(it));
      }
      ARROW_RETURN_NOT_OK(KeepWithinBudget());
    }
    return arrow::Status::OK();
  }

  // A row group's size in memory before it is flushed: 64 MiB, less for small target
  // files, never more than the budget.
  int64_t RowGroupBytes() const {
    return std::min({kMaxBufferedRowGroupBytes,
                     std::max<int64_t>(options_.target_file_size, 1 << 20),
                     std::max<int64_t>(options_.memory_budget_bytes, 1 << 20)});
  }

  // Flush the row group of the file at `it`, then close the file once it reached its
  // target size; return true when it was closed.
  arrow::Result<bool> FlushRowGroup(OpenFiles::iterator it) {
    OpenFile& file = it->second;
    ARROW_RETURN_NOT_OK(file.writer->NewBufferedRowGroup());
    buffered_bytes_ -= file.buffered_bytes;
    file.buffered_rows = 0;
    file.buffered_bytes = 0;
    ARROW_ASSIGN_OR_RAISE(int64_t size, file.sink->Tell());
    if (size < options_.target_file_size) return false;
    ARROW_RETURN_NOT_OK(CloseFile(it));
    return true;
  }

  // Row groups open in many partitions at once may not hold more than the budget: the
  // largest is flushed until they fit.
  arrow::Status KeepWithinBudget() {
    while (buffered_bytes_ > options_.memory_budget_bytes && !open_.empty()) {
      auto largest =
          std::max_element(open_.begin(), open_.end(), [](const auto& a, const auto& b) {
            return a.second.buffered_bytes < b.second.buffered_bytes;
          });
      if (largest->second.buffered_bytes == 0) break;
      ARROW_RETURN_NOT_OK(FlushRowGroup(largest).status());
    }
    return arrow::Status::OK();
  }

  arrow::Status CloseFile(OpenFiles::iterator it) {
    OpenFile file = std::move(it->second);
    buffered_bytes_ -= file.buffered_bytes;
    recency_.remove(it->first);
    open_.erase(it);
    ARROW_RETURN_NOT_OK(file.writer->Close());
    ARROW_ASSIGN_OR_RAISE(int64_t size, file.sink->Tell());
    ARROW_RETURN_NOT_OK(file.sink->Close());
    Add add;
    add.path = EncodeLogPath(file.key);
    add.partition_values = std::move(file.partition_values);
    add.size = size;
    add.modification_time = NowMs();
    add.data_change = true;
    add.stats = file.stats->ToJson();
    bytes_written_ += size;
    AMPDELTA_LOG_DEBUG("delta data file path=", file.key, " rows=", file.rows,
                       " bytes=", size);
    added_.push_back(std::move(add));
    return arrow::Status::OK();
  }

  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<arrow::Schema> table_schema_;
  std::vector<std::string> partition_columns_;
  DataFileOptions options_;
  std::vector<int> partition_indices_;
  // Keys of partitionValues and folder names: physical names under column mapping, else
  // as partition_columns_ spells them.
  std::vector<std::string> partition_names_;
  std::vector<std::string> partition_logical_;  // as partition_columns_ spells them
  std::vector<int> data_indices_;
  std::shared_ptr<arrow::Schema> data_schema_;
  std::shared_ptr<arrow::Schema> stats_schema_;     // data_schema_ but row tracking's
  std::shared_ptr<arrow::Schema> expected_schema_;  // of batches: table + row tracking
  std::shared_ptr<parquet::WriterProperties> properties_;
  std::shared_ptr<parquet::ArrowWriterProperties> arrow_properties_;
  OpenFiles open_;
  std::list<std::string> recency_;
  std::vector<Add> added_;
  int64_t file_counter_ = 0;
  int64_t file_step_ = 1;
  int64_t bytes_written_ = 0;
  int64_t rows_written_ = 0;
  int64_t buffered_bytes_ = 0;  // of the row groups of every open file
  bool finished_ = false;
};

PartitionFileSet::PartitionFileSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PartitionFileSet::~PartitionFileSet() = default;

arrow::Result<std::unique_ptr<PartitionFileSet>> PartitionFileSet::Make(
    std::shared_ptr<storage::ObjectStore> store,
    std::shared_ptr<arrow::Schema> table_schema,
    std::vector<std::string> partition_columns, DataFileOptions options,
    int64_t first_number, int64_t number_step) {
  auto impl = std::make_unique<Impl>(std::move(store), std::move(table_schema),
                                     std::move(partition_columns), std::move(options));
  impl->set_file_numbering(first_number, number_step);
  ARROW_RETURN_NOT_OK(impl->Init());
  return std::unique_ptr<PartitionFileSet>(new PartitionFileSet(std::move(impl)));
}

arrow::Status PartitionFileSet::Write(const std::shared_ptr<arrow::RecordBatch>& batch) {
  return impl_->Write(batch);
}
arrow::Status PartitionFileSet::WriteEmptyFile(
    const NullableStringMap& partition_values) {
  return impl_->WriteEmptyFile(partition_values);
}
arrow::Result<std::vector<Add>> PartitionFileSet::Finish() { return impl_->Finish(); }
arrow::Status PartitionFileSet::Abort() { return impl_->Abort(); }
int64_t PartitionFileSet::bytes_written() const { return impl_->bytes_written(); }
int64_t PartitionFileSet::rows_written() const { return impl_->rows_written(); }

}  // namespace ampdelta::delta

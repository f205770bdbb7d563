#include "ampdelta/delta/write/data_file_writer.h"

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

#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

namespace cp = arrow::compute;

// In-memory Arrow bytes after which a row group is flushed even if it has fewer rows:
// keeps memory bounded for wide rows and lets files roll near their target size.
constexpr int64_t kMaxBufferedRowGroupBytes = 64 * 1024 * 1024;
// Open partition files beyond this are closed (least recently written first).
constexpr size_t kMaxOpenFiles = 64;

parquet::Compression::type ToParquet(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed:
      return parquet::Compression::UNCOMPRESSED;
    case Codec::kSnappy:
      return parquet::Compression::SNAPPY;
    case Codec::kGzip:
      return parquet::Compression::GZIP;
    case Codec::kZstd:
      return parquet::Compression::ZSTD;
    case Codec::kLz4:
      return parquet::Compression::LZ4;
    case Codec::kBrotli:
      return parquet::Compression::BROTLI;
  }
  return parquet::Compression::ZSTD;
}

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

void CollectFloatPaths(const arrow::Field& field, const std::string& prefix,
                       std::vector<std::string>* out) {
  const std::string path = prefix.empty() ? field.name() : prefix + "." + field.name();
  const auto& type = *field.type();
  switch (type.id()) {
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
      out->push_back(path);
      break;
    case arrow::Type::STRUCT:
      for (const auto& child : type.fields()) CollectFloatPaths(*child, path, out);
      break;
    case arrow::Type::LIST: {
      // Compliant nested types: <name>.list.element
      const auto element = type.field(0)->WithName("element");
      CollectFloatPaths(*element, path + ".list", out);
      break;
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(type);
      CollectFloatPaths(*map.key_field()->WithName("key"), path + ".key_value", out);
      CollectFloatPaths(*map.item_field()->WithName("value"), path + ".key_value", out);
      break;
    }
    default:
      break;
  }
}

std::vector<std::string> FloatColumnPaths(const arrow::Schema& schema) {
  std::vector<std::string> out;
  for (const auto& field : schema.fields()) CollectFloatPaths(*field, "", &out);
  return out;
}

}  // namespace

arrow::Result<Codec> ParseCodec(const std::string& name) {
  const std::string lower = AsciiLower(name);
  if (lower == "zstd") return Codec::kZstd;
  if (lower == "snappy") return Codec::kSnappy;
  if (lower == "gzip") return Codec::kGzip;
  if (lower == "lz4" || lower == "lz4_raw") return Codec::kLz4;
  if (lower == "brotli") return Codec::kBrotli;
  if (lower == "uncompressed" || lower == "none") return Codec::kUncompressed;
  return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                   "unknown compression codec '", name,
                   "' (use zstd, snappy, gzip, lz4, brotli or uncompressed)");
}

const char* CodecName(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed:
      return "uncompressed";
    case Codec::kSnappy:
      return "snappy";
    case Codec::kGzip:
      return "gzip";
    case Codec::kZstd:
      return "zstd";
    case Codec::kLz4:
      return "lz4";
    case Codec::kBrotli:
      return "brotli";
  }
  return "zstd";
}

// Writes files from the calling thread only.
class SerialWriter {
 public:
  SerialWriter(std::shared_ptr<storage::ObjectStore> store,
               std::shared_ptr<arrow::Schema> table_schema,
               std::vector<std::string> partition_columns, DataFileOptions options)
      : store_(std::move(store)),
        table_schema_(std::move(table_schema)),
        partition_columns_(std::move(partition_columns)),
        options_(std::move(options)) {}

  arrow::Status Init() {
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
        partition_names_.push_back(*partition);
      } else {
        data_indices_.push_back(i);
        // Parquet needs no Delta field metadata.
        data_fields.push_back(field->WithMetadata(nullptr));
      }
    }
    if (partition_names_.size() != partition_columns_.size()) {
      for (const auto& column : partition_columns_) {
        if (std::find(partition_names_.begin(), partition_names_.end(), column) ==
            partition_names_.end()) {
          return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                           "partition column '", column, "' is not in the schema");
        }
      }
    }
    data_schema_ = arrow::schema(std::move(data_fields));
    properties_ = MakeProperties(ColumnPlan{});
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
    if (!batch->schema()->Equals(*table_schema_, /*check_metadata=*/false)) {
      return arrow::Status::Invalid("batch schema ", batch->schema()->ToString(),
                                    " differs from the table schema ",
                                    table_schema_->ToString());
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
  arrow::Status WriteEmptyFile(const NullableStringMap& values) {
    ARROW_ASSIGN_OR_RAISE(auto empty, arrow::RecordBatch::MakeEmpty(data_schema_));
    ARROW_ASSIGN_OR_RAISE(auto it, OpenFor(values, *empty));
    return CloseFile(it);
  }

  // The files stay listed: Abort() after Finish() (a failed commit) still deletes them.
  arrow::Result<std::vector<Add>> Finish() {
    while (!open_.empty()) ARROW_RETURN_NOT_OK(CloseFile(open_.begin()));
    finished_ = true;
    return added_;
  }

  arrow::Status Abort() {
    for (auto& [key, file] : open_) {
      if (file.writer) (void)file.writer->Close();
      (void)file.sink->Abort();
    }
    open_.clear();
    std::vector<std::string> paths;
    for (const auto& add : added_) paths.push_back(DecodeLogPath(add.path));
    added_.clear();
    return store_->DeleteMany(paths);
  }

  int64_t bytes_written() const { return bytes_written_; }
  int64_t rows_written() const { return rows_written_; }

  void set_file_numbering(int64_t first, int64_t step) {
    file_counter_ = first;
    file_step_ = step;
  }

  ~SerialWriter() {
    if (!finished_ && (!open_.empty() || !added_.empty())) {
      arrow::Status status = Abort();
      if (!status.ok())
        AMPDELTA_LOG_WARN("delta abandoned data files not removed: ", status.ToString());
    }
  }

 private:
  // How a file's columns are encoded, decided from its first rows.
  struct ColumnPlan {
    // Mostly-distinct columns (hashes, signatures, ids): no dictionary, no min/max.
    std::vector<std::string> plain;
    // Values the codec cannot shrink (random bytes): stored uncompressed.
    std::vector<std::string> uncompressed;
    bool empty() const { return plain.empty() && uncompressed.empty(); }
  };

  // Writer properties for `plan`.
  std::shared_ptr<parquet::WriterProperties> MakeProperties(
      const ColumnPlan& plan) const {
    parquet::WriterProperties::Builder builder;
    builder.compression(ToParquet(options_.codec));
    if (options_.compression_level)
      builder.compression_level(*options_.compression_level);
    for (const auto& column : plan.uncompressed) {
      builder.compression(column, parquet::Compression::UNCOMPRESSED);
    }
    builder.max_row_group_length(std::max<int64_t>(1, options_.max_rows_per_group));
    if (options_.dictionary) {
      builder.enable_dictionary();
      for (const auto& column : plan.plain) builder.disable_dictionary(column);
    } else {
      builder.disable_dictionary();
    }
    if (options_.parquet_statistics) {
      builder.enable_statistics();
      builder.enable_write_page_index();
      // Parquet min/max leave NaN out, so engines that sort NaN above +Infinity (Spark,
      // DuckDB) would skip row groups holding NaN: no Parquet statistics for floats.
      for (const auto& path : FloatColumnPaths(*data_schema_))
        builder.disable_statistics(path);
      // Min/max of mostly-distinct binary columns (hashes, signatures) prune nothing:
      // their values are spread uniformly, and comparing them costs ~5% of a write.
      for (const auto& column : plan.plain) {
        auto field = data_schema_->GetFieldByName(column);
        if (field != nullptr && arrow::is_binary_like(field->type()->id())) {
          builder.disable_statistics(column);
        }
      }
    } else {
      builder.disable_statistics();
    }
    builder.created_by("ampdelta");
    return builder.build();
  }

  // The value bytes of a binary-like column's first `rows` rows (empty for other types).
  static std::string_view ValueBytes(const arrow::Array& column, int64_t rows) {
    const auto& data = *column.data();
    if (column.type_id() == arrow::Type::BINARY ||
        column.type_id() == arrow::Type::STRING) {
      const auto* offsets = data.GetValues<int32_t>(1);
      const auto* values = data.buffers[2] ? data.buffers[2]->data() : nullptr;
      if (values == nullptr) return {};
      return std::string_view(reinterpret_cast<const char*>(values) + offsets[0],
                              static_cast<size_t>(offsets[rows] - offsets[0]));
    }
    if (column.type_id() == arrow::Type::FIXED_SIZE_BINARY) {
      const int width = column.type()->byte_width();
      return std::string_view(
          reinterpret_cast<const char*>(data.buffers[1]->data()) + data.offset * width,
          static_cast<size_t>(rows * width));
    }
    return {};
  }

  // Top-level columns whose first rows are mostly distinct (hashes, signatures, ids): a
  // dictionary would not shrink them and costs encoding time, so they are written plain.
  // Columns that repeat (block hashes, addresses, flags) keep their dictionary. Plain
  // binary columns the codec cannot shrink by 10% (random hashes and signatures) skip
  // compression: the file is as large, and compressing them was most of the codec's time.
  arrow::Result<ColumnPlan> PlanColumns(const arrow::RecordBatch& sample) const {
    ColumnPlan plan;
    if (!options_.dictionary || sample.num_rows() < kCardinalitySampleMinRows)
      return plan;
    const int64_t rows = std::min<int64_t>(sample.num_rows(), kCardinalitySampleRows);
    std::unique_ptr<arrow::util::Codec> codec;
    if (options_.codec != Codec::kUncompressed) {
      ARROW_ASSIGN_OR_RAISE(codec, arrow::util::Codec::Create(ToParquet(options_.codec)));
    }
    for (int i = 0; i < sample.num_columns(); ++i) {
      const auto& column = sample.column(i);
      if (column->type()->num_fields() > 0 || column->type_id() == arrow::Type::BOOL)
        continue;
      ARROW_ASSIGN_OR_RAISE(
          arrow::Datum distinct,
          arrow::compute::CallFunction("count_distinct", {column->Slice(0, rows)}));
      const int64_t count =
          static_cast<const arrow::Int64Scalar&>(*distinct.scalar()).value;
      if (count * 2 <= rows) continue;
      const std::string& name = sample.schema()->field(i)->name();
      plan.plain.push_back(name);
      const std::string_view bytes = ValueBytes(*column->Slice(0, rows), rows);
      if (codec == nullptr || bytes.size() < 4096) continue;
      std::vector<uint8_t> out(static_cast<size_t>(
          codec->MaxCompressedLen(static_cast<int64_t>(bytes.size()),
                                  reinterpret_cast<const uint8_t*>(bytes.data()))));
      ARROW_ASSIGN_OR_RAISE(
          int64_t compressed,
          codec->Compress(static_cast<int64_t>(bytes.size()),
                          reinterpret_cast<const uint8_t*>(bytes.data()),
                          static_cast<int64_t>(out.size()), out.data()));
      if (compressed * 10 > static_cast<int64_t>(bytes.size()) * 9)
        plan.uncompressed.push_back(name);
    }
    return plan;
  }

  static constexpr int64_t kCardinalitySampleMinRows = 256;
  static constexpr int64_t kCardinalitySampleRows = 8192;

  using OpenFiles = std::map<std::string, OpenFile>;

  arrow::Result<OpenFiles::iterator> OpenFor(const NullableStringMap& values,
                                             const arrow::RecordBatch& sample) {
    const std::string folder = PartitionFolder(partition_columns_, values);
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
    const std::string token =
        options_.file_token.empty() ? "" : options_.file_token + "-";
    const std::string name = "part-" + std::to_string(100000 + number).substr(1) + "-" +
                             NewUuid() + "-" + token + "c000." +
                             CodecName(options_.codec) + ".parquet";
    file.key = folder.empty() ? name : folder + "/" + name;
    file.partition_values = values;
    ARROW_ASSIGN_OR_RAISE(auto plan, PlanColumns(sample));
    const auto properties = plan.empty() ? properties_ : MakeProperties(plan);
    ARROW_ASSIGN_OR_RAISE(file.sink, store_->OpenOutputStream(file.key));
    ARROW_ASSIGN_OR_RAISE(file.writer, parquet::arrow::FileWriter::Open(
                                           *data_schema_, arrow::default_memory_pool(),
                                           file.sink, properties, arrow_properties_));
    file.stats = std::make_unique<StatsCollector>(data_schema_, options_.stats);
    recency_.push_back(folder);
    return open_.emplace(folder, std::move(file)).first;
  }

  void Touch(const std::string& folder) {
    recency_.remove(folder);
    recency_.push_back(folder);
  }

  arrow::Status WriteToPartition(NullableStringMap values,
                                 const std::shared_ptr<arrow::RecordBatch>& batch) {
    std::vector<std::shared_ptr<arrow::Array>> columns;
    for (int index : data_indices_) columns.push_back(batch->column(index));
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
      ARROW_RETURN_NOT_OK(file.stats->Update(*slice));
      file.rows += take;
      file.buffered_rows += take;
      file.buffered_bytes += arrow::util::TotalBufferSize(*slice);
      rows_written_ += take;
      offset += take;
      // Flush the row group when it grows large in memory, then roll by size.
      if (file.buffered_rows >= options_.max_rows_per_group ||
          file.buffered_bytes >=
              std::min(kMaxBufferedRowGroupBytes,
                       std::max<int64_t>(options_.target_file_size, 1 << 20))) {
        ARROW_RETURN_NOT_OK(file.writer->NewBufferedRowGroup());
        file.buffered_rows = 0;
        file.buffered_bytes = 0;
        ARROW_ASSIGN_OR_RAISE(int64_t size, file.sink->Tell());
        if (size >= options_.target_file_size) {
          ARROW_RETURN_NOT_OK(CloseFile(it));
          continue;
        }
      }
      if (options_.max_rows_per_file > 0 && file.rows >= options_.max_rows_per_file) {
        ARROW_RETURN_NOT_OK(CloseFile(it));
      }
    }
    return arrow::Status::OK();
  }

  arrow::Status CloseFile(OpenFiles::iterator it) {
    OpenFile file = std::move(it->second);
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
  std::vector<std::string> partition_names_;  // as partition_columns_ spells them
  std::vector<int> data_indices_;
  std::shared_ptr<arrow::Schema> data_schema_;
  std::shared_ptr<parquet::WriterProperties> properties_;
  std::shared_ptr<parquet::ArrowWriterProperties> arrow_properties_;
  OpenFiles open_;
  std::list<std::string> recency_;
  std::vector<Add> added_;
  int64_t file_counter_ = 0;
  int64_t file_step_ = 1;
  int64_t bytes_written_ = 0;
  int64_t rows_written_ = 0;
  bool finished_ = false;
};

// Fans batches out to worker threads, each with its own SerialWriter (own files, own
// statistics), so encoding, compression and fsync use every core. Small writes stay on
// one worker and produce one file; queues are bounded, so memory stays bounded.
class DataFileWriter::Impl {
 public:
  Impl(std::shared_ptr<storage::ObjectStore> store,
       std::shared_ptr<arrow::Schema> table_schema,
       std::vector<std::string> partition_columns, DataFileOptions options) {
    int threads = options.num_threads > 0
                      ? options.num_threads
                      : static_cast<int>(std::thread::hardware_concurrency());
    threads = std::max(1, std::min(threads, 8));
    if (threads > 1) options.parallel_encoding = false;  // our threads replace Arrow's
    threshold_ = options.parallel_threshold_bytes;
    for (int i = 0; i < threads; ++i) {
      auto worker = std::make_unique<Worker>();
      worker->writer =
          std::make_unique<SerialWriter>(store, table_schema, partition_columns, options);
      worker->writer->set_file_numbering(i, threads);
      workers_.push_back(std::move(worker));
    }
  }

  ~Impl() { StopWorkers(); }

  arrow::Status Init() {
    for (auto& worker : workers_) ARROW_RETURN_NOT_OK(worker->writer->Init());
    if (workers_.size() > 1) {
      for (auto& worker : workers_) {
        Worker* raw = worker.get();
        raw->thread = std::thread([raw] { raw->Run(); });
      }
    }
    return arrow::Status::OK();
  }

  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& batch) {
    if (workers_.size() == 1) return workers_[0]->writer->Write(batch);
    ARROW_RETURN_NOT_OK(FirstError());
    // The first bytes go to one worker: small writes make one file.
    size_t target = 0;
    if (bytes_dispatched_ >= threshold_) target = next_++ % workers_.size();
    bytes_dispatched_ += arrow::util::TotalBufferSize(*batch);
    rows_ += batch->num_rows();
    return workers_[target]->Push(batch);
  }

  // Last before Finish(): the workers stop (their queues drained) so one thread writes.
  arrow::Status WriteEmptyFile(const NullableStringMap& values) {
    StopWorkers();
    ARROW_RETURN_NOT_OK(FirstError());
    return workers_[0]->writer->WriteEmptyFile(values);
  }

  arrow::Result<std::vector<Add>> Finish() {
    StopWorkers();
    ARROW_RETURN_NOT_OK(FirstError());
    std::vector<Add> adds;
    for (auto& worker : workers_) {
      ARROW_ASSIGN_OR_RAISE(auto part, worker->writer->Finish());
      for (auto& add : part) adds.push_back(std::move(add));
    }
    return adds;
  }

  arrow::Status Abort() {
    StopWorkers();
    arrow::Status first;
    for (auto& worker : workers_) {
      arrow::Status status = worker->writer->Abort();
      if (!status.ok() && first.ok()) first = status;
    }
    return first;
  }

  int64_t bytes_written() const {
    int64_t total = 0;
    for (const auto& worker : workers_) total += worker->writer->bytes_written();
    return total;
  }

  int64_t rows_written() const {
    if (workers_.size() > 1) return rows_;
    return workers_[0]->writer->rows_written();
  }

 private:
  static constexpr size_t kQueueDepth = 2;

  struct Worker {
    std::unique_ptr<SerialWriter> writer;
    std::thread thread;
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::shared_ptr<arrow::RecordBatch>> queue;
    bool stopping = false;
    arrow::Status status;

    arrow::Status Push(std::shared_ptr<arrow::RecordBatch> batch) {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return queue.size() < kQueueDepth || !status.ok(); });
      if (!status.ok()) return status;
      queue.push_back(std::move(batch));
      changed.notify_all();
      return arrow::Status::OK();
    }

    void Run() {
      while (true) {
        std::shared_ptr<arrow::RecordBatch> batch;
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return !queue.empty() || stopping; });
          if (queue.empty()) return;
          batch = std::move(queue.front());
          queue.pop_front();
          changed.notify_all();
        }
        arrow::Status result = status.ok() ? writer->Write(batch) : arrow::Status::OK();
        if (!result.ok()) {
          std::lock_guard<std::mutex> lock(mutex);
          status = result;
          queue.clear();
          changed.notify_all();
        }
      }
    }
  };

  void StopWorkers() {
    for (auto& worker : workers_) {
      {
        std::lock_guard<std::mutex> lock(worker->mutex);
        worker->stopping = true;
      }
      worker->changed.notify_all();
    }
    for (auto& worker : workers_) {
      if (worker->thread.joinable()) worker->thread.join();
    }
  }

  arrow::Status FirstError() {
    for (auto& worker : workers_) {
      std::lock_guard<std::mutex> lock(worker->mutex);
      if (!worker->status.ok()) return worker->status;
    }
    return arrow::Status::OK();
  }

  std::vector<std::unique_ptr<Worker>> workers_;
  int64_t threshold_ = 0;
  int64_t bytes_dispatched_ = 0;
  size_t next_ = 0;
  int64_t rows_ = 0;
};

DataFileWriter::DataFileWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DataFileWriter::~DataFileWriter() = default;

arrow::Result<std::unique_ptr<DataFileWriter>> DataFileWriter::Make(
    std::shared_ptr<storage::ObjectStore> store,
    std::shared_ptr<arrow::Schema> table_schema,
    std::vector<std::string> partition_columns, DataFileOptions options) {
  auto impl = std::make_unique<Impl>(std::move(store), std::move(table_schema),
                                     std::move(partition_columns), std::move(options));
  ARROW_RETURN_NOT_OK(impl->Init());
  return std::unique_ptr<DataFileWriter>(new DataFileWriter(std::move(impl)));
}

arrow::Status DataFileWriter::Write(const std::shared_ptr<arrow::RecordBatch>& batch) {
  return impl_->Write(batch);
}
arrow::Status DataFileWriter::WriteEmptyFile(const NullableStringMap& partition_values) {
  return impl_->WriteEmptyFile(partition_values);
}
arrow::Result<std::vector<Add>> DataFileWriter::Finish() { return impl_->Finish(); }
arrow::Status DataFileWriter::Abort() { return impl_->Abort(); }
int64_t DataFileWriter::bytes_written() const { return impl_->bytes_written(); }
int64_t DataFileWriter::rows_written() const { return impl_->rows_written(); }

}  // namespace ampdelta::delta

#include "ampdelta/devserver/parquet_dataset.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/io/file.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/util/key_value_metadata.h>
#include <nlohmann/json.hpp>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include "ampdelta/util/hex.h"
#include "ampdelta/util/json_internal.h"

namespace ampdelta::devserver {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

arrow::Result<std::unique_ptr<parquet::arrow::FileReader>> OpenParquet(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto input, arrow::io::ReadableFile::Open(path));
  return parquet::arrow::OpenFile(input, arrow::default_memory_pool());
}

// Parse the file's `nozzle_metadata` ranges (Amp writes one per network).
arrow::Result<std::vector<std::pair<std::string, ServedRange>>> ReadRanges(
    const std::string& path, const parquet::FileMetaData& metadata) {
  const auto kv = metadata.key_value_metadata();
  const int index = kv == nullptr ? -1 : kv->FindKey("nozzle_metadata");
  if (index < 0) {
    return arrow::Status::Invalid("Parquet file ", path,
                                  " has no 'nozzle_metadata' key-value entry");
  }
  json doc = json_util::ParseJson(kv->value(index));
  if (!doc.is_object() || !doc.contains("ranges") || !doc["ranges"].is_array()) {
    return arrow::Status::Invalid("Parquet file ", path,
                                  " has malformed 'nozzle_metadata'");
  }
  // Members are checked one by one: json::value() and get() throw on a wrong type.
  auto malformed = [&path]() {
    return arrow::Status::Invalid("Parquet file ", path, " has a malformed range");
  };
  auto text = [](const json& object, const char* key) -> std::optional<std::string> {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::string();
    if (!it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  std::vector<std::pair<std::string, ServedRange>> out;
  for (const auto& item : doc["ranges"]) {
    if (!item.is_object()) return malformed();
    auto network = item.find("network");
    auto numbers = item.find("numbers");
    if (network == item.end() || !network->is_string() || numbers == item.end() ||
        !numbers->is_object()) {
      return malformed();
    }
    ServedRange range;
    auto start = numbers->find("start");
    auto end = numbers->find("end");
    std::optional<uint64_t> start_number = uint64_t{0};
    std::optional<uint64_t> end_number = uint64_t{0};
    if (start != numbers->end()) start_number = json_util::AsUint64(*start);
    if (end != numbers->end()) end_number = json_util::AsUint64(*end);
    auto hash = text(item, "hash");
    auto prev_hash = text(item, "prev_hash");
    if (!start_number || !end_number || !hash || !prev_hash) return malformed();
    range.start = *start_number;
    range.end = *end_number;
    range.hash = std::move(*hash);
    range.prev_hash = std::move(*prev_hash);
    if (item.contains("timestamp") && item["timestamp"].is_number_unsigned()) {
      range.timestamp = item["timestamp"].get<uint64_t>();
    }
    out.emplace_back(network->get<std::string>(), range);
  }
  return out;
}

class ParquetIterator : public BatchIterator {
 public:
  ParquetIterator(std::vector<ParquetDataset::File> files, uint64_t from, uint64_t to,
                  std::string block_column)
      : files_(std::move(files)),
        from_(from),
        to_(to),
        block_column_(std::move(block_column)) {}

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override {
    while (true) {
      if (reader_ == nullptr) {
        if (next_file_ >= files_.size()) return nullptr;
        const ParquetDataset::File& file = files_[next_file_++];
        ARROW_ASSIGN_OR_RAISE(file_reader_, OpenParquet(file.path));
        ARROW_ASSIGN_OR_RAISE(reader_, file_reader_->GetRecordBatchReader());
        // Files wholly inside the range need no row filter.
        needs_filter_ = file.range.start < from_ || file.range.end > to_;
      }
      std::shared_ptr<arrow::RecordBatch> batch;
      ARROW_RETURN_NOT_OK(reader_->ReadNext(&batch));
      if (batch == nullptr) {
        reader_.reset();
        file_reader_.reset();
        continue;
      }
      if (!needs_filter_) return batch;
      auto column = batch->GetColumnByName(block_column_);
      if (column == nullptr) return batch;
      namespace cp = arrow::compute;
      ARROW_ASSIGN_OR_RAISE(
          auto low, cp::CallFunction("greater_equal", {column, arrow::Datum(from_)}));
      ARROW_ASSIGN_OR_RAISE(auto high,
                            cp::CallFunction("less_equal", {column, arrow::Datum(to_)}));
      ARROW_ASSIGN_OR_RAISE(auto mask, cp::CallFunction("and", {low, high}));
      ARROW_ASSIGN_OR_RAISE(auto filtered, cp::Filter(batch, mask));
      return filtered.record_batch();
    }
  }

 private:
  std::vector<ParquetDataset::File> files_;
  uint64_t from_;
  uint64_t to_;
  std::string block_column_;
  size_t next_file_ = 0;
  std::unique_ptr<parquet::arrow::FileReader> file_reader_;
  std::unique_ptr<arrow::RecordBatchReader> reader_;
  bool needs_filter_ = false;
};

// The entries of a directory. The std::filesystem overloads without an error_code throw.
arrow::Result<std::vector<fs::directory_entry>> ListDirectory(const fs::path& dir) {
  std::error_code error;
  std::vector<fs::directory_entry> entries;
  fs::directory_iterator it(dir, error);
  for (const fs::directory_iterator end; !error && it != end; it.increment(error)) {
    entries.push_back(*it);
  }
  if (error) {
    return arrow::Status::IOError("cannot list '", dir.string(), "': ", error.message());
  }
  return entries;
}

bool IsDirectory(const fs::directory_entry& entry) {
  std::error_code error;
  return entry.is_directory(error);
}

}  // namespace

arrow::Result<std::shared_ptr<ParquetDataset>> ParquetDataset::Open(
    const std::string& name, const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return arrow::Status::IOError("dataset directory '", dir, "' does not exist");
  }
  std::shared_ptr<ParquetDataset> dataset(new ParquetDataset());
  dataset->name_ = name;
  std::map<uint64_t, ServedRange> distinct;
  ARROW_ASSIGN_OR_RAISE(auto table_dirs, ListDirectory(dir));
  for (const auto& table_dir : table_dirs) {
    if (!IsDirectory(table_dir)) continue;
    // The newest revision wins: revision folders are UUIDv7s, which sort by creation
    // time.
    std::string newest;
    ARROW_ASSIGN_OR_RAISE(auto revisions, ListDirectory(table_dir.path()));
    for (const auto& revision : revisions) {
      if (IsDirectory(revision)) {
        newest = std::max(newest, revision.path().filename().string());
      }
    }
    if (newest.empty()) continue;
    Table table;
    ARROW_ASSIGN_OR_RAISE(auto entries, ListDirectory(table_dir.path() / newest));
    for (const auto& entry : entries) {
      if (entry.path().extension() != ".parquet") continue;
      File file;
      file.path = entry.path().string();
      ARROW_ASSIGN_OR_RAISE(auto reader, OpenParquet(file.path));
      const auto metadata = reader->parquet_reader()->metadata();
      file.num_rows = metadata->num_rows();
      ARROW_ASSIGN_OR_RAISE(auto ranges, ReadRanges(file.path, *metadata));
      if (ranges.size() != 1) {
        return arrow::Status::NotImplemented("Parquet file ", file.path, " covers ",
                                             ranges.size(),
                                             " networks; one is supported");
      }
      if (dataset->network_.empty()) dataset->network_ = ranges[0].first;
      if (dataset->network_ != ranges[0].first) {
        return arrow::Status::Invalid("dataset '", dir, "' mixes networks '",
                                      dataset->network_, "' and '", ranges[0].first, "'");
      }
      file.range = ranges[0].second;
      if (table.schema == nullptr) ARROW_RETURN_NOT_OK(reader->GetSchema(&table.schema));
      distinct[file.range.start] = file.range;
      table.files.push_back(std::move(file));
    }
    if (table.files.empty()) continue;
    std::sort(table.files.begin(), table.files.end(),
              [](const File& a, const File& b) { return a.range.start < b.range.start; });
    dataset->tables_[table_dir.path().filename().string()] = std::move(table);
  }
  if (dataset->tables_.empty()) {
    return arrow::Status::Invalid("dataset directory '", dir,
                                  "' holds no <table>/<revision>/*.parquet files");
  }
  for (auto& [start, range] : distinct) dataset->ranges_.push_back(range);
  ARROW_RETURN_NOT_OK(dataset->IndexBlocks());
  return dataset;
}

arrow::Status ParquetDataset::IndexBlocks() {
  auto blocks = tables_.find("blocks");
  if (blocks == tables_.end()) return arrow::Status::OK();
  const auto& schema = *blocks->second.schema;
  const int number = schema.GetFieldIndex("block_num");
  const int hash = schema.GetFieldIndex("hash");
  const int time = schema.GetFieldIndex("timestamp");
  if (number < 0 || hash < 0 ||
      schema.field(hash)->type()->id() != arrow::Type::FIXED_SIZE_BINARY) {
    return arrow::Status::OK();
  }
  for (const auto& file : blocks->second.files) {
    ARROW_ASSIGN_OR_RAISE(auto reader, OpenParquet(file.path));
    std::vector<int> columns = {number, hash};
    if (time >= 0) columns.push_back(time);
    ARROW_ASSIGN_OR_RAISE(auto table, reader->ReadTable(columns));
    ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
    ARROW_ASSIGN_OR_RAISE(auto numbers,
                          arrow::compute::Cast(*batch->column(0), arrow::uint64()));
    const auto& values = static_cast<const arrow::UInt64Array&>(*numbers);
    const auto& hashes =
        static_cast<const arrow::FixedSizeBinaryArray&>(*batch->column(1));
    const arrow::TimestampArray* times =
        time >= 0 && batch->column(2)->type_id() == arrow::Type::TIMESTAMP
            ? static_cast<const arrow::TimestampArray*>(batch->column(2).get())
            : nullptr;
    int64_t per_second = 1;
    if (times != nullptr) {
      switch (static_cast<const arrow::TimestampType&>(*times->type()).unit()) {
        case arrow::TimeUnit::SECOND:
          per_second = 1;
          break;
        case arrow::TimeUnit::MILLI:
          per_second = 1000;
          break;
        case arrow::TimeUnit::MICRO:
          per_second = 1000000;
          break;
        case arrow::TimeUnit::NANO:
          per_second = 1000000000;
          break;
      }
    }
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      if (values.IsNull(i) || hashes.IsNull(i)) continue;
      Block block;
      block.hash = ToHex0x(hashes.GetView(i));
      if (times != nullptr && times->IsValid(i) && times->Value(i) >= 0) {
        block.timestamp = static_cast<uint64_t>(times->Value(i) / per_second);
      }
      blocks_[values.Value(i)] = std::move(block);
    }
  }
  return arrow::Status::OK();
}

ServedRange ParquetDataset::RangeOf(uint64_t start, uint64_t end) const {
  ServedRange range;
  range.start = start;
  range.end = end;
  auto last = blocks_.find(end);
  if (last != blocks_.end()) {
    range.hash = last->second.hash;
    range.timestamp = last->second.timestamp;
  }
  auto before = start > 0 ? blocks_.find(start - 1) : blocks_.end();
  if (before != blocks_.end()) {
    range.prev_hash = before->second.hash;
  } else {
    // The first block: its parent is only known from the files' metadata.
    for (const auto& file_range : ranges_) {
      if (file_range.start == start) range.prev_hash = file_range.prev_hash;
    }
  }
  return range;
}

std::vector<std::string> ParquetDataset::table_names() const {
  std::vector<std::string> names;
  for (const auto& [name, table] : tables_) names.push_back(name);
  return names;
}

arrow::Result<std::shared_ptr<arrow::Schema>> ParquetDataset::TableSchema(
    const std::string& table) const {
  auto it = tables_.find(table);
  if (it == tables_.end()) {
    return arrow::Status::KeyError("table '", table, "' not found in dataset '", name_,
                                   "'");
  }
  return it->second.schema;
}

std::optional<ScanRange> ParquetDataset::Synced() const {
  if (ranges_.empty()) return std::nullopt;
  ScanRange out;
  out.range = ranges_.back();
  out.range.start = ranges_.front().start;
  out.range.prev_hash = ranges_.front().prev_hash;
  return out;
}

std::optional<ScanRange> ParquetDataset::NextMicrobatch(
    const std::optional<ChainPosition>& previous, uint64_t max_blocks) const {
  if (ranges_.empty()) return std::nullopt;
  if (blocks_.empty()) {
    // No block index: the files' ranges, as they were written.
    for (const auto& range : ranges_) {
      if (!previous || range.start > previous->number) return ScanRange{range, nullptr};
    }
    return std::nullopt;
  }
  const uint64_t first = ranges_.front().start;
  const uint64_t last = ranges_.back().end;
  uint64_t start = first;
  if (previous) {
    // As ampd: a block it never had (below the first) means no microbatch, ever; a block
    // not yet synced means wait; a canonical one continues after it; a stale hash
    // re-serves from that block (the files never fork).
    if (previous->number < first || previous->number > last) return std::nullopt;
    auto known = blocks_.find(previous->number);
    if (known == blocks_.end()) return std::nullopt;
    start =
        known->second.hash == previous->hash ? previous->number + 1 : previous->number;
  }
  if (start > last) return std::nullopt;
  const uint64_t end = std::min(last, start + std::max<uint64_t>(max_blocks, 1) - 1);
  return ScanRange{RangeOf(start, end), nullptr};
}

void ParquetDataset::WaitForChange(uint64_t seen,
                                   std::chrono::milliseconds timeout) const {
  (void)seen;  // the files never change
  std::this_thread::sleep_for(timeout);
}

std::vector<ScanRange> ParquetDataset::ScanPieces(const std::string& table,
                                                  const ScanRange& range,
                                                  uint64_t piece_blocks) const {
  (void)piece_blocks;
  std::set<uint64_t> cuts = {range.range.start};
  auto it = tables_.find(table);
  if (it != tables_.end()) {
    for (const auto& file : it->second.files) {
      if (file.range.start > range.range.start && file.range.start <= range.range.end)
        cuts.insert(file.range.start);
    }
  }
  std::vector<ScanRange> pieces;
  for (auto cut = cuts.begin(); cut != cuts.end(); ++cut) {
    ScanRange piece = range;
    piece.range.start = *cut;
    const auto next = std::next(cut);
    piece.range.end = next == cuts.end() ? range.range.end : *next - 1;
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

arrow::Result<std::unique_ptr<BatchIterator>> ParquetDataset::Scan(
    const std::string& table, const ScanRange& range) const {
  auto it = tables_.find(table);
  if (it == tables_.end()) return TableSchema(table).status();
  std::vector<File> files;
  for (const auto& file : it->second.files) {
    if (file.range.end >= range.range.start && file.range.start <= range.range.end) {
      files.push_back(file);
    }
  }
  const std::string block_column =
      it->second.schema->GetFieldIndex("_block_num") >= 0 ? "_block_num" : "block_num";
  return std::make_unique<ParquetIterator>(std::move(files), range.range.start,
                                           range.range.end, block_column);
}

}  // namespace ampdelta::devserver

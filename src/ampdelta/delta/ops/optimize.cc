#include "ampdelta/delta/ops/optimize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/clustering.h"
#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/column_plan.h"
#include "ampdelta/delta/write/data_file_writer.h"
#include "ampdelta/delta/write/file_tags.h"
#include "ampdelta/delta/write/parquet_stitch.h"
#include "ampdelta/delta/write/stats.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

// A row group this large is kept as it is by a stitch, however few its rows (a wide
// table's).
constexpr int64_t kStitchMinGroupBytes = 4 * 1024 * 1024;

// A file's lowest and highest value of `column`, from its statistics.
std::optional<std::pair<nlohmann::json, nlohmann::json>> StatsRange(
    const Add& file, const std::string& column) {
  const FileStats stats = FileStats::Of(file);
  auto value = [&](StatsSection section) -> std::optional<nlohmann::json> {
    const FileStats::Json* bound = stats.FindIgnoringCase(section, column);
    if (bound == nullptr || !(bound->is_number() || bound->is_string())) {
      return std::nullopt;
    }
    return nlohmann::json(*bound);
  };
  auto low = value(StatsSection::kMinValues);
  auto high = value(StatsSection::kMaxValues);
  if (!low || !high || low->is_number() != high->is_number()) return std::nullopt;
  return std::make_pair(std::move(*low), std::move(*high));
}

// `files` in the order of their least value of `column`; files without one last, in the
// order they came.
void OrderByLeast(std::vector<const Add*>* files, const std::string& column) {
  std::vector<std::pair<std::optional<nlohmann::json>, const Add*>> keyed;
  for (const Add* file : *files) {
    auto range = StatsRange(*file, column);
    keyed.emplace_back(range ? std::optional(std::move(range->first)) : std::nullopt,
                       file);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (!a.first || !b.first) return a.first.has_value() && !b.first.has_value();
    return *a.first < *b.first;
  });
  for (size_t i = 0; i < keyed.size(); ++i) (*files)[i] = keyed[i].second;
}

// Close `bin`: kept when rewriting it gains something (several files, or deleted rows to
// purge).
void FlushBin(std::vector<const Add*>* bin, int64_t* bytes,
              std::vector<std::vector<const Add*>>* bins) {
  if (bin->size() > 1 || (bin->size() == 1 && bin->front()->deletion_vector)) {
    bins->push_back(*bin);
  }
  bin->clear();
  *bytes = 0;
}

// Bins of a clustered table's files: in order of their first clustering column, files
// whose ranges overlap always together (their rows are sorted into files that do not),
// neighbours packed up to the target size. Files another clustering implementation
// wrote are left to it (PROTOCOL.md).
std::vector<std::vector<const Add*>> ClusteringBins(std::vector<const Add*> files,
                                                    const std::string& column,
                                                    int64_t target_size) {
  std::erase_if(files, [](const Add* file) {
    return file->clustering_provider && *file->clustering_provider != kLiquidProvider;
  });
  std::vector<std::pair<const Add*, std::pair<nlohmann::json, nlohmann::json>>> ranged;
  // Files without a usable range of the column (no statistics, null bounds) cannot be
  // ordered: they form a component of their own, packed and sorted together.
  std::vector<const Add*> unknown;
  for (const Add* file : files) {
    if (auto range = StatsRange(*file, column)) {
      ranged.emplace_back(file, std::move(*range));
    } else {
      unknown.push_back(file);
    }
  }
  std::vector<std::vector<const Add*>> components;
  std::sort(ranged.begin(), ranged.end(),
            [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  nlohmann::json high;
  for (const auto& [file, range] : ranged) {
    // Ranges that only touch (a block cut between two sorted files) do not overlap.
    if (components.empty() || range.first >= high) {
      components.emplace_back();
      high = range.second;
    } else if (range.second > high) {
      high = range.second;
    }
    components.back().push_back(file);
  }
  if (!unknown.empty()) components.push_back(std::move(unknown));
  // Files an earlier clustering run wrote overlap one another only as their statistics
  // see them (strings cut to 32 characters, null bounds): that run sorted their rows
  // together already, and sorting them again would rewrite the same rows into the same
  // files on every run. Such a component stays unless it has rows to purge.
  std::erase_if(components, [](const std::vector<const Add*>& component) {
    return component.size() > 1 &&
           std::all_of(component.begin(), component.end(), [](const Add* file) {
             return file->clustering_provider && !file->deletion_vector;
           });
  });
  std::vector<std::vector<const Add*>> bins;
  std::vector<const Add*> bin;
  int64_t bytes = 0;
  auto flush = [&] { FlushBin(&bin, &bytes, &bins); };
  for (const auto& component : components) {
    int64_t size = 0;
    for (const Add* file : component) size += file->size;
    // A large file on its own is clustered already; small neighbours are packed.
    if (component.size() == 1 && size >= target_size) {
      flush();
      bin = component;
      flush();
      continue;
    }
    if (!bin.empty() && bytes + size > target_size) flush();
    bin.insert(bin.end(), component.begin(), component.end());
    bytes += size;
  }
  flush();
  return bins;
}

// Rows of `table` in the order of `columns` (ascending, nulls last).
arrow::Result<std::shared_ptr<arrow::Table>> SortedBy(
    const std::shared_ptr<arrow::Table>& table, const std::vector<std::string>& columns) {
  std::vector<arrow::compute::SortKey> keys;
  for (const auto& column : columns) {
    const int index = FindFieldIgnoreCase(*table->schema(), column);
    if (index < 0) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                       "the table clusters by column '", column, "', which it lacks");
    }
    keys.emplace_back(arrow::FieldRef(index));
  }
  ARROW_ASSIGN_OR_RAISE(auto indices,
                        arrow::compute::SortIndices(arrow::Datum(table),
                                                    arrow::compute::SortOptions(keys)));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum sorted,
                        arrow::compute::Take(arrow::Datum(table), arrow::Datum(indices)));
  return sorted.table();
}

// Write every row of `table`; return how many.
arrow::Result<int64_t> WriteRows(const arrow::Table& table, DataFileWriter* writer) {
  arrow::TableBatchReader reader(table);
  int64_t rows = 0;
  std::shared_ptr<arrow::RecordBatch> batch;
  while (true) {
    ARROW_RETURN_NOT_OK(reader.ReadNext(&batch));
    if (batch == nullptr) return rows;
    ARROW_RETURN_NOT_OK(writer->Write(batch));
    rows += batch->num_rows();
  }
}

// True when `footer`'s column chunks are compressed with `codec`: all of them, but for
// columns left uncompressed (as the writer leaves those compression does not shrink)
// beside at least one compressed with it.
bool CompressedWith(const parquet::FileMetaData& footer, Codec codec) {
  const auto wanted = ToParquetCompression(codec);
  bool any_wanted = footer.num_row_groups() == 0;
  for (int r = 0; r < footer.num_row_groups(); ++r) {
    auto group = footer.RowGroup(r);
    for (int c = 0; c < group->num_columns(); ++c) {
      const auto compression = group->ColumnChunk(c)->compression();
      if (compression == wanted) {
        any_wanted = true;
      } else if (compression != parquet::Compression::UNCOMPRESSED) {
        return false;
      }
    }
  }
  return any_wanted;
}

// The files of a stitch bin, opened, when their footers say stitching them keeps what a
// rewrite would: the codec asked for, at most an eighth of the rows in small row groups,
// one schema. nullopt otherwise.
arrow::Result<std::optional<std::vector<StitchInput>>> StitchInputs(
    const Snapshot& snapshot, const std::vector<const Add*>& bin,
    int64_t min_rows_per_group, Codec codec) {
  std::vector<StitchInput> inputs;
  int64_t rows = 0;
  int64_t rows_in_small_groups = 0;
  for (const Add* file : bin) {
    StitchInput input;
    ARROW_ASSIGN_OR_RAISE(input.file,
                          snapshot.store()->OpenInputFile(snapshot.FileKey(file->path)));
    ARROW_ASSIGN_OR_RAISE(input.footer, ReadParquetFooter(input.file));
    if (!CompressedWith(*input.footer, codec)) return std::nullopt;
    for (int r = 0; r < input.footer->num_row_groups(); ++r) {
      auto group = input.footer->RowGroup(r);
      rows += group->num_rows();
      if (group->num_rows() < min_rows_per_group &&
          group->total_compressed_size() < kStitchMinGroupBytes) {
        rows_in_small_groups += group->num_rows();
      }
    }
    inputs.push_back(std::move(input));
  }
  if (rows == 0 || rows_in_small_groups * 8 > rows) return std::nullopt;
  const arrow::Status stitchable = CheckStitchable(inputs);
  if (stitchable.IsNotImplemented()) {
    AMPDELTA_LOG_DEBUG("optimize rewrites a bin: ", stitchable.message());
    return std::nullopt;
  }
  ARROW_RETURN_NOT_OK(stitchable);
  return inputs;
}

// One new file holding the row groups of `bin`'s files, with statistics merged from
// theirs; NotImplemented (nothing left behind) when the files cannot be stitched after
// all.
arrow::Result<Add> StitchBin(const Snapshot& snapshot, const std::vector<const Add*>& bin,
                             const std::vector<StitchInput>& inputs,
                             const DataFileOptions& file_options,
                             const std::vector<std::string>& partition_keys) {
  const auto& store = snapshot.store();
  const std::string key = NewDataFileKey(
      file_options, PartitionFolder(partition_keys, bin.front()->partition_values), 0);
  ARROW_ASSIGN_OR_RAISE(auto sink, store->OpenOutputStream(key));
  auto stitched = StitchParquetFiles(inputs, sink.get());
  arrow::Status closed = sink->Close();
  if (stitched.ok() && !closed.ok()) stitched = closed;
  if (!stitched.ok()) {
    (void)store->Delete(key);
    return stitched.status();
  }
  Add add;
  add.path = EncodeLogPath(key);
  add.partition_values = bin.front()->partition_values;
  add.size = stitched->bytes;
  add.modification_time = NowMs();
  add.data_change = true;
  std::vector<std::optional<std::string>> stats;
  for (const Add* file : bin) stats.push_back(file->stats);
  add.stats = MergeStats(stats, *PhysicalSchema(*snapshot.schema()), stitched->rows);
  return add;
}

// `bin` stitched into one new file when that is worth it and possible, else nullopt (the
// caller rewrites it).
arrow::Result<std::optional<Add>> TryStitch(
    const Snapshot& snapshot, const std::vector<const Add*>& bin,
    const OptimizeOptions& options, const DataFileOptions& file_options,
    const std::vector<std::string>& partition_keys) {
  ARROW_ASSIGN_OR_RAISE(
      auto inputs,
      StitchInputs(snapshot, bin, options.stitch_min_rows_per_group, file_options.codec));
  if (!inputs) return std::nullopt;
  auto stitched = StitchBin(snapshot, bin, *inputs, file_options, partition_keys);
  if (stitched.status().IsNotImplemented()) {
    AMPDELTA_LOG_DEBUG("optimize rewrites a bin: ", stitched.status().message());
    return std::nullopt;
  }
  ARROW_RETURN_NOT_OK(stitched.status());
  return std::move(*stitched);
}

// How a bin's files become new ones.
enum class BinStrategy : uint8_t {
  // Their row groups copied into one file when the footers allow (StitchInputs), else
  // rewritten.
  kStitch,
  // Their rows read (deleted ones dropped, row IDs kept) and written again.
  kRewrite,
  // Their rows read, sorted by the clustering columns and written into files of about
  // the target size.
  kCluster,
};

// Files compacted together, with how.
struct OptimizeBin {
  std::vector<const Add*> files;
  BinStrategy strategy = BinStrategy::kRewrite;
};

// What an optimize will do, decided from the log alone.
struct OptimizePlan {
  std::vector<std::string> clustering;      // the table's clustering columns
  std::vector<std::string> partition_keys;  // files' partitionValues keys (physical)
  std::vector<OptimizeBin> bins;
};

// Files' partitionValues keys: physical names under column mapping.
std::vector<std::string> PartitionKeys(const Snapshot& snapshot) {
  std::vector<std::string> keys;
  for (const auto& column : snapshot.partition_columns()) {
    keys.push_back(PhysicalColumnName(*snapshot.schema(), column));
  }
  return keys;
}

// Small files (or files with deleted rows to purge), grouped by partition and by the
// keys of their tags: files of one writer's bookkeeping (a stream's block ranges) are
// never merged with files outside it, whose rows that bookkeeping does not describe.
std::map<std::string, std::vector<const Add*>> CandidateGroups(
    const Snapshot& snapshot, const OptimizeOptions& options, const OptimizePlan& plan) {
  std::map<std::string, std::vector<const Add*>> groups;
  for (const auto& add : snapshot.files()) {
    // A clustered table's large files count too: they may overlap others.
    if (plan.clustering.empty() && add.size >= options.target_size &&
        !add.deletion_vector) {
      continue;
    }
    if (options.eligible && !options.eligible(add)) continue;
    std::string group = PartitionFolder(plan.partition_keys, add.partition_values);
    if (add.tags) {
      for (const auto& [key, value] : *add.tags) group += std::string(1, '\0') + key;
    }
    groups[group].push_back(&add);
  }
  return groups;
}

// `files` packed in their order into bins of about `target_size`.
std::vector<std::vector<const Add*>> PackBins(const std::vector<const Add*>& files,
                                              int64_t target_size) {
  std::vector<std::vector<const Add*>> bins;
  std::vector<const Add*> bin;
  int64_t bytes = 0;
  for (const Add* file : files) {
    if (!bin.empty() && bytes + file->size > target_size) FlushBin(&bin, &bytes, &bins);
    bin.push_back(file);
    bytes += file->size;
  }
  FlushBin(&bin, &bytes, &bins);
  return bins;
}

// A packed bin is stitched only where that keeps what a rewrite would: no deleted rows
// to purge, no row IDs to keep (a table tracking them keeps them in columns a rewrite
// adds).
BinStrategy PackedBinStrategy(const Snapshot& snapshot, const OptimizeOptions& options,
                              const std::vector<const Add*>& bin) {
  if (options.stitch_min_rows_per_group <= 0 ||
      RowTrackingEnabled(snapshot.metadata().configuration)) {
    return BinStrategy::kRewrite;
  }
  const bool purges = std::any_of(bin.begin(), bin.end(), [](const Add* file) {
    return file->deletion_vector.has_value();
  });
  return purges ? BinStrategy::kRewrite : BinStrategy::kStitch;
}

// The bins of one candidate group: clustered, or packed in the order asked for.
void PlanGroup(const Snapshot& snapshot, const OptimizeOptions& options,
               std::vector<const Add*> files, OptimizePlan* plan) {
  if (!plan->clustering.empty()) {
    for (auto& bin :
         ClusteringBins(std::move(files),
                        PhysicalColumnName(*snapshot.schema(), plan->clustering.front()),
                        options.target_size)) {
      plan->bins.push_back({std::move(bin), BinStrategy::kCluster});
    }
    return;
  }
  if (options.order_by) {
    OrderByLeast(&files, PhysicalColumnName(*snapshot.schema(), *options.order_by));
  }
  for (auto& bin : PackBins(files, options.target_size)) {
    const BinStrategy strategy = PackedBinStrategy(snapshot, options, bin);
    plan->bins.push_back({std::move(bin), strategy});
  }
}

arrow::Result<OptimizePlan> PlanOptimize(const Snapshot& snapshot,
                                         const OptimizeOptions& options) {
  OptimizePlan plan;
  ARROW_ASSIGN_OR_RAISE(plan.clustering, ClusteringColumns(snapshot));
  plan.partition_keys = PartitionKeys(snapshot);
  for (auto& [group, files] : CandidateGroups(snapshot, options, plan)) {
    PlanGroup(snapshot, options, std::move(files), &plan);
  }
  return plan;
}

// An optimize's execution: each bin written its way, then one commit. Every failure
// deletes the files written.
class OptimizeRun {
 public:
  static arrow::Result<std::unique_ptr<OptimizeRun>> Open(
      std::shared_ptr<const Snapshot> snapshot, const OptimizeOptions& options,
      const OptimizePlan& plan) {
    auto run =
        std::unique_ptr<OptimizeRun>(new OptimizeRun(std::move(snapshot), options, plan));
    ARROW_ASSIGN_OR_RAISE(run->lease_, WriteLease::Acquire(run->store()));
    run->file_options_ = FileOptionsForTable(run->snapshot_.get(), options.files);
    run->file_options_.target_file_size = options.target_size;
    run->file_options_.num_threads = 1;  // one output file per bin
    run->file_options_.file_token = run->lease_->token();
    return run;
  }

  arrow::Result<OptimizeResult> Execute() {
    auto done = ExecuteOrFail();
    if (!done.ok()) Abort();
    return done;
  }

 private:
  OptimizeRun(std::shared_ptr<const Snapshot> snapshot, const OptimizeOptions& options,
              const OptimizePlan& plan)
      : snapshot_(std::move(snapshot)), options_(options), plan_(plan) {}

  const std::shared_ptr<storage::ObjectStore>& store() const {
    return snapshot_->store();
  }

  arrow::Result<OptimizeResult> ExecuteOrFail() {
    for (const OptimizeBin& bin : plan_.bins) {
      ARROW_RETURN_NOT_OK(RunBin(bin));
    }
    return Commit();
  }

  arrow::Status RunBin(const OptimizeBin& bin) {
    ARROW_ASSIGN_OR_RAISE(std::optional<NullableStringMap> tags, BinTags(bin.files));
    partitions_.insert(
        PartitionFolder(plan_.partition_keys, bin.files.front()->partition_values));
    switch (bin.strategy) {
      case BinStrategy::kStitch: {
        ARROW_ASSIGN_OR_RAISE(bool stitched, Stitch(bin.files, tags));
        if (stitched) return arrow::Status::OK();
        return Rewrite(bin.files, tags);
      }
      case BinStrategy::kRewrite:
        return Rewrite(bin.files, tags);
      case BinStrategy::kCluster:
        return Cluster(bin.files, tags);
    }
    return arrow::Status::OK();
  }

  arrow::Result<std::optional<NullableStringMap>> BinTags(
      const std::vector<const Add*>& files) const {
    if (options_.merge_tags) return options_.merge_tags(files);
    return MergeFileTags(files);
  }

  // True when the files were stitched into one; false when they must be rewritten.
  arrow::Result<bool> Stitch(const std::vector<const Add*>& files,
                             const std::optional<NullableStringMap>& tags) {
    ARROW_ASSIGN_OR_RAISE(
        std::optional<Add> stitched,
        TryStitch(*snapshot_, files, options_, file_options_, plan_.partition_keys));
    if (!stitched) return false;
    for (const Add* file : files) Replace(*file);
    stitched->tags = tags;
    result_.rows = SaturatingAdd(result_.rows, StatsNumRecords(*stitched).value_or(0));
    result_.files_stitched += static_cast<int64_t>(files.size());
    adds_.push_back(std::move(*stitched));
    return true;
  }

  arrow::Status Rewrite(const std::vector<const Add*>& files,
                        const std::optional<NullableStringMap>& tags) {
    ARROW_ASSIGN_OR_RAISE(auto writer, MakeWriter(file_options_));
    for (const Add* file : files) {
      ARROW_ASSIGN_OR_RAISE(auto rows, ReadToReplace(*file));
      ARROW_ASSIGN_OR_RAISE(const int64_t written, WriteRows(*rows, writer.get()));
      result_.rows += written;
    }
    return FinishBin(files, tags, std::nullopt, writer.get());
  }

  // The bin's rows sorted by the clustering columns, into files that follow each other
  // in that order.
  arrow::Status Cluster(const std::vector<const Add*>& files,
                        const std::optional<NullableStringMap>& tags) {
    ARROW_ASSIGN_OR_RAISE(auto writer, MakeWriter(ClusteredFileOptions(files)));
    std::vector<std::shared_ptr<arrow::Table>> tables;
    for (const Add* file : files) {
      ARROW_ASSIGN_OR_RAISE(auto rows, ReadToReplace(*file));
      tables.push_back(std::move(rows));
    }
    ARROW_ASSIGN_OR_RAISE(auto rows, arrow::ConcatenateTables(tables));
    tables.clear();
    ARROW_ASSIGN_OR_RAISE(rows, SortedBy(rows, plan_.clustering));
    ARROW_ASSIGN_OR_RAISE(const int64_t written, WriteRows(*rows, writer.get()));
    result_.rows += written;
    return FinishBin(files, tags, std::string(kLiquidProvider), writer.get());
  }

  // Sorted rows go to files of about the target size, however small: a file per slice
  // of the order is what data skipping needs (the writer rolls files only at row groups
  // of at least 1 MiB otherwise).
  DataFileOptions ClusteredFileOptions(const std::vector<const Add*>& files) const {
    DataFileOptions bin_options = file_options_;
    int64_t rows = 0;
    int64_t bytes = 0;
    for (const Add* file : files) {
      rows = SaturatingAdd(rows, StatsNumRecords(*file).value_or(0));
      bytes = SaturatingAdd(bytes, file->size);
    }
    if (rows > 0 && bytes > options_.target_size) {
      // Below 2^63 before the cast, which is undefined past it.
      const double per_file =
          std::min(static_cast<double>(options_.target_size) * static_cast<double>(rows) /
                       static_cast<double>(bytes),
                   9e18);
      bin_options.max_rows_per_file =
          std::max<int64_t>(1, static_cast<int64_t>(per_file));
    }
    return bin_options;
  }

  // A bin's writer; one dropped unfinished (its bin failed) deletes what it wrote.
  arrow::Result<std::unique_ptr<DataFileWriter>> MakeWriter(
      const DataFileOptions& bin_options) const {
    return DataFileWriter::Make(store(), snapshot_->schema(),
                                snapshot_->partition_columns(), bin_options);
  }

  // A file's live rows with their row IDs (row_tracking.h), which they keep in the files
  // they move to; the file is removed by the commit.
  arrow::Result<std::shared_ptr<arrow::Table>> ReadToReplace(const Add& file) {
    ARROW_ASSIGN_OR_RAISE(auto rows, ReadDataFileWithRowIds(*snapshot_, file));
    Replace(file);
    return rows;
  }

  void Replace(const Add& file) {
    removes_.push_back(RemoveFor(file, /*data_change=*/false));
    read_.push_back(snapshot_->FileKey(file.path));
  }

  arrow::Status FinishBin(const std::vector<const Add*>& files,
                          const std::optional<NullableStringMap>& tags,
                          const std::optional<std::string>& clustering_provider,
                          DataFileWriter* writer) {
    if (writer->rows_written() == 0 && tags && !tags->empty()) {
      // Only 0-row files (what a delete leaves to hold a stream's ranges): one keeps
      // them.
      ARROW_RETURN_NOT_OK(writer->WriteEmptyFile(files.front()->partition_values));
    }
    ARROW_ASSIGN_OR_RAISE(auto bin_files, writer->Finish());
    for (auto& add : bin_files) {
      add.tags = tags;
      add.clustering_provider = clustering_provider;
      adds_.push_back(std::move(add));
    }
    return arrow::Status::OK();
  }

  arrow::Result<OptimizeResult> Commit() {
    result_.files_removed = static_cast<int64_t>(removes_.size());
    result_.files_added = static_cast<int64_t>(adds_.size());
    result_.partitions_optimized = static_cast<int64_t>(partitions_.size());
    Transaction txn(store(), snapshot_, options_.commit);
    txn.SetDataChange(false);
    txn.ReadFiles(read_);
    txn.AddFiles(adds_);
    txn.RemoveFiles(std::move(removes_));
    std::map<std::string, std::string> parameters = {
        {"predicate", "[]"}, {"targetSize", std::to_string(options_.target_size)}};
    if (!plan_.clustering.empty()) {
      parameters["clusterBy"] = nlohmann::json(plan_.clustering).dump();
    }
    txn.SetOperation("OPTIMIZE", std::move(parameters));
    txn.SetOperationMetrics(
        {{"numRemovedFiles", std::to_string(result_.files_removed)},
         {"numAddedFiles", std::to_string(result_.files_added)},
         {"partitionsOptimized", std::to_string(result_.partitions_optimized)}});
    ARROW_ASSIGN_OR_RAISE(auto committed, txn.Commit());
    result_.version = committed.version;
    return result_;
  }

  void Abort() {
    std::vector<std::string> written;
    for (const auto& add : adds_) written.push_back(DecodeLogPath(add.path));
    (void)store()->DeleteMany(written);
  }

  std::shared_ptr<const Snapshot> snapshot_;
  const OptimizeOptions& options_;
  const OptimizePlan& plan_;
  std::shared_ptr<WriteLease> lease_;
  DataFileOptions file_options_;
  OptimizeResult result_;
  std::set<std::string> partitions_;
  std::vector<Add> adds_;
  std::vector<Remove> removes_;
  std::vector<std::string> read_;
};

}  // namespace

arrow::Result<OptimizeResult> Optimize(std::shared_ptr<storage::ObjectStore> store,
                                       const OptimizeOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Snapshot::Load(store));
  return Optimize(std::move(snapshot), options);
}

arrow::Result<OptimizeResult> Optimize(std::shared_ptr<const Snapshot> snapshot,
                                       const OptimizeOptions& options) {
  ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(),
                                          *snapshot->schema()));
  ARROW_ASSIGN_OR_RAISE(const OptimizePlan plan, PlanOptimize(*snapshot, options));
  if (plan.bins.empty()) return OptimizeResult{};
  ARROW_ASSIGN_OR_RAISE(auto run, OptimizeRun::Open(std::move(snapshot), options, plan));
  return run->Execute();
}

}  // namespace ampdelta::delta

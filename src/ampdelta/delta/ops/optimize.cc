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

// The files of `bin`, opened, when stitching them is worth it and keeps what a rewrite
// would: no deleted rows to purge, no row IDs to keep (a table tracking them keeps them
// in columns a rewrite adds), the codec asked for, at most an eighth of the rows in
// small row groups, one schema. nullopt otherwise.
arrow::Result<std::optional<std::vector<StitchInput>>> StitchInputs(
    const Snapshot& snapshot, const std::vector<const Add*>& bin,
    int64_t min_rows_per_group, Codec codec) {
  if (min_rows_per_group <= 0 || RowTrackingEnabled(snapshot.metadata().configuration))
    return std::nullopt;
  if (std::any_of(bin.begin(), bin.end(),
                  [](const Add* file) { return file->deletion_vector.has_value(); })) {
    return std::nullopt;
  }
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

}  // namespace

arrow::Result<OptimizeResult> Optimize(std::shared_ptr<storage::ObjectStore> store,
                                       const OptimizeOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Snapshot::Load(store));
  return Optimize(std::move(snapshot), options);
}

arrow::Result<OptimizeResult> Optimize(std::shared_ptr<const Snapshot> snapshot,
                                       const OptimizeOptions& options) {
  const std::shared_ptr<storage::ObjectStore>& store = snapshot->store();
  ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(),
                                          *snapshot->schema()));
  // Small files (or files with deleted rows to purge), grouped by partition and by the
  // keys of their tags: files of one writer's bookkeeping (a stream's block ranges) are
  // never merged with files outside it, whose rows that bookkeeping does not describe.
  ARROW_ASSIGN_OR_RAISE(const std::vector<std::string> clustering,
                        ClusteringColumns(*snapshot));
  // Files' partitionValues keys: physical names under column mapping.
  std::vector<std::string> partition_keys;
  for (const auto& column : snapshot->partition_columns()) {
    partition_keys.push_back(PhysicalColumnName(*snapshot->schema(), column));
  }
  std::map<std::string, std::vector<const Add*>> by_partition;
  for (const auto& add : snapshot->files()) {
    // A clustered table's large files count too: they may overlap others.
    if (clustering.empty() && add.size >= options.target_size && !add.deletion_vector)
      continue;
    if (options.eligible && !options.eligible(add)) continue;
    std::string group = PartitionFolder(partition_keys, add.partition_values);
    if (add.tags) {
      for (const auto& [key, value] : *add.tags) group += std::string(1, '\0') + key;
    }
    by_partition[group].push_back(&add);
  }
  // Bins of about target_size; a bin of one file without deletions gains nothing.
  std::vector<std::vector<const Add*>> bins;
  for (auto& [partition, files] : by_partition) {
    if (!clustering.empty()) {
      for (auto& bin : ClusteringBins(
               files, PhysicalColumnName(*snapshot->schema(), clustering.front()),
               options.target_size)) {
        bins.push_back(std::move(bin));
      }
      continue;
    }
    if (options.order_by) {
      OrderByLeast(&files, PhysicalColumnName(*snapshot->schema(), *options.order_by));
    }
    std::vector<const Add*> bin;
    int64_t bytes = 0;
    auto flush = [&] { FlushBin(&bin, &bytes, &bins); };
    for (const Add* file : files) {
      if (!bin.empty() && bytes + file->size > options.target_size) flush();
      bin.push_back(file);
      bytes += file->size;
    }
    flush();
  }
  OptimizeResult result;
  if (bins.empty()) return result;
  ARROW_ASSIGN_OR_RAISE(auto lease, WriteLease::Acquire(store));
  DataFileOptions file_options = FileOptionsForTable(snapshot.get(), options.files);
  file_options.target_file_size = options.target_size;
  file_options.num_threads = 1;  // one output file per bin
  file_options.file_token = lease->token();
  std::set<std::string> partitions;
  std::vector<Add> adds;
  std::vector<Remove> removes;
  std::vector<std::string> read;
  // Files written by bins already finished are deleted when anything fails.
  std::vector<std::string> written;
  auto discard = [&](arrow::Status status) {
    for (const auto& add : adds) written.push_back(DecodeLogPath(add.path));
    (void)store->DeleteMany(written);
    return status;
  };
  auto bin_tags = [&](const std::vector<const Add*>& bin)
      -> arrow::Result<std::optional<NullableStringMap>> {
    if (options.merge_tags) return options.merge_tags(bin);
    return MergeFileTags(bin);
  };
  arrow::Status compacted = [&]() -> arrow::Status {
    for (const auto& bin : bins) {
      ARROW_ASSIGN_OR_RAISE(std::optional<NullableStringMap> tags, bin_tags(bin));
      if (clustering.empty()) {
        ARROW_ASSIGN_OR_RAISE(
            std::optional<Add> stitched,
            TryStitch(*snapshot, bin, options, file_options, partition_keys));
        if (stitched) {
          for (const Add* file : bin) {
            removes.push_back(RemoveFor(*file, /*data_change=*/false));
            read.push_back(snapshot->FileKey(file->path));
          }
          stitched->tags = tags;
          result.rows += StatsNumRecords(*stitched).value_or(0);
          result.files_stitched += static_cast<int64_t>(bin.size());
          adds.push_back(std::move(*stitched));
          partitions.insert(
              PartitionFolder(partition_keys, bin.front()->partition_values));
          continue;
        }
      }
      DataFileOptions bin_options = file_options;
      if (!clustering.empty()) {
        // Sorted rows go to files of about the target size, however small: a file per
        // slice of the order is what data skipping needs (the writer rolls files only
        // at row groups of at least 1 MiB otherwise).
        int64_t rows = 0;
        int64_t bytes = 0;
        for (const Add* file : bin) {
          rows += StatsNumRecords(*file).value_or(0);
          bytes += file->size;
        }
        if (rows > 0 && bytes > options.target_size) {
          bin_options.max_rows_per_file = std::max<int64_t>(
              1, static_cast<int64_t>(static_cast<double>(options.target_size) *
                                      static_cast<double>(rows) /
                                      static_cast<double>(bytes)));
        }
      }
      ARROW_ASSIGN_OR_RAISE(
          auto writer, DataFileWriter::Make(store, snapshot->schema(),
                                            snapshot->partition_columns(), bin_options));
      std::vector<std::shared_ptr<arrow::Table>> tables;
      for (const Add* file : bin) {
        // Rows keep their row IDs (row_tracking.h) in the files they move to.
        ARROW_ASSIGN_OR_RAISE(auto table, ReadDataFileWithRowIds(*snapshot, *file));
        removes.push_back(RemoveFor(*file, /*data_change=*/false));
        read.push_back(snapshot->FileKey(file->path));
        if (!clustering.empty()) {
          tables.push_back(std::move(table));
          continue;
        }
        ARROW_ASSIGN_OR_RAISE(const int64_t rows, WriteRows(*table, writer.get()));
        result.rows += rows;
      }
      if (!clustering.empty()) {
        // The bin's rows sorted by the clustering columns, into files that follow each
        // other in that order.
        ARROW_ASSIGN_OR_RAISE(auto rows, arrow::ConcatenateTables(tables));
        tables.clear();
        ARROW_ASSIGN_OR_RAISE(rows, SortedBy(rows, clustering));
        ARROW_ASSIGN_OR_RAISE(const int64_t sorted_rows, WriteRows(*rows, writer.get()));
        result.rows += sorted_rows;
      }
      if (writer->rows_written() == 0 && tags && !tags->empty()) {
        // Only 0-row files (what a delete leaves to hold a stream's ranges): one keeps
        // them.
        ARROW_RETURN_NOT_OK(writer->WriteEmptyFile(bin.front()->partition_values));
      }
      ARROW_ASSIGN_OR_RAISE(auto bin_files, writer->Finish());
      for (auto& add : bin_files) {
        add.tags = tags;
        if (!clustering.empty()) add.clustering_provider = std::string(kLiquidProvider);
        adds.push_back(std::move(add));
      }
      partitions.insert(PartitionFolder(partition_keys, bin.front()->partition_values));
    }
    return arrow::Status::OK();
  }();
  if (!compacted.ok()) return discard(compacted);
  for (const auto& add : adds) written.push_back(DecodeLogPath(add.path));
  result.files_removed = static_cast<int64_t>(removes.size());
  result.files_added = static_cast<int64_t>(adds.size());
  result.partitions_optimized = static_cast<int64_t>(partitions.size());
  Transaction txn(store, snapshot, options.commit);
  txn.SetDataChange(false);
  txn.ReadFiles(read);
  txn.AddFiles(std::move(adds));
  txn.RemoveFiles(std::move(removes));
  std::map<std::string, std::string> parameters = {
      {"predicate", "[]"}, {"targetSize", std::to_string(options.target_size)}};
  if (!clustering.empty()) parameters["clusterBy"] = nlohmann::json(clustering).dump();
  txn.SetOperation("OPTIMIZE", std::move(parameters));
  txn.SetOperationMetrics(
      {{"numRemovedFiles", std::to_string(result.files_removed)},
       {"numAddedFiles", std::to_string(result.files_added)},
       {"partitionsOptimized", std::to_string(result.partitions_optimized)}});
  auto committed = txn.Commit();
  if (!committed.ok()) {
    (void)store->DeleteMany(written);
    return committed.status();
  }
  result.version = committed->version;
  return result;
}

}  // namespace ampdelta::delta

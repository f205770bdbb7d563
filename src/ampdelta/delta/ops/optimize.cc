#include "ampdelta/delta/ops/optimize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/table_features.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/file_tags.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

arrow::Result<OptimizeResult> Optimize(std::shared_ptr<storage::ObjectStore> store,
                                       const OptimizeOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Snapshot::Load(store));
  ARROW_RETURN_NOT_OK(CheckWriteSupported(snapshot->protocol(), snapshot->metadata(),
                                          *snapshot->schema()));
  // Small files (or files with deleted rows to purge), grouped by partition and by the
  // keys of their tags: files of one writer's bookkeeping (a stream's block ranges) are
  // never merged with files outside it, whose rows that bookkeeping does not describe.
  std::map<std::string, std::vector<const Add*>> by_partition;
  for (const auto& add : snapshot->files()) {
    if (add.size >= options.target_size && !add.deletion_vector) continue;
    if (options.eligible && !options.eligible(add)) continue;
    std::string group =
        PartitionFolder(snapshot->partition_columns(), add.partition_values);
    if (add.tags) {
      for (const auto& [key, value] : *add.tags) group += std::string(1, '\0') + key;
    }
    by_partition[group].push_back(&add);
  }
  // Bins of about target_size; a bin of one file without deletions gains nothing.
  std::vector<std::vector<const Add*>> bins;
  for (auto& [partition, files] : by_partition) {
    std::vector<const Add*> bin;
    int64_t bytes = 0;
    auto flush = [&] {
      if (bin.size() > 1 || (bin.size() == 1 && bin.front()->deletion_vector))
        bins.push_back(bin);
      bin.clear();
      bytes = 0;
    };
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
  arrow::Status compacted = [&]() -> arrow::Status {
    for (const auto& bin : bins) {
      ARROW_ASSIGN_OR_RAISE(
          auto writer, DataFileWriter::Make(store, snapshot->schema(),
                                            snapshot->partition_columns(), file_options));
      for (const Add* file : bin) {
        ARROW_ASSIGN_OR_RAISE(auto table, ReadDataFile(*snapshot, *file));
        arrow::TableBatchReader reader(*table);
        std::shared_ptr<arrow::RecordBatch> batch;
        while (true) {
          ARROW_RETURN_NOT_OK(reader.ReadNext(&batch));
          if (batch == nullptr) break;
          ARROW_RETURN_NOT_OK(writer->Write(batch));
          result.rows += batch->num_rows();
        }
        removes.push_back(RemoveFor(*file, /*data_change=*/false));
        read.push_back(snapshot->FileKey(file->path));
      }
      std::optional<NullableStringMap> tags;
      if (options.merge_tags) {
        ARROW_ASSIGN_OR_RAISE(tags, options.merge_tags(bin));
      } else {
        tags = MergeFileTags(bin);
      }
      if (writer->rows_written() == 0 && tags && !tags->empty()) {
        // Only 0-row files (what a delete leaves to hold a stream's ranges): one keeps
        // them.
        ARROW_RETURN_NOT_OK(writer->WriteEmptyFile(bin.front()->partition_values));
      }
      ARROW_ASSIGN_OR_RAISE(auto bin_files, writer->Finish());
      for (auto& add : bin_files) {
        add.tags = tags;
        adds.push_back(std::move(add));
      }
      partitions.insert(
          PartitionFolder(snapshot->partition_columns(), bin.front()->partition_values));
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
  txn.SetOperation("OPTIMIZE", {{"predicate", "[]"},
                                {"targetSize", std::to_string(options.target_size)}});
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

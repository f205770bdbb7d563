#include "ampdelta/loader/batch_loader.h"

#include <chrono>
#include <cstdlib>

#include <arrow/record_batch.h>
#include <arrow/util/byte_size.h>

#include "ampdelta/delta/maintenance.h"
#include "ampdelta/delta/table_writer.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

arrow::Result<delta::TableWriteOptions> WriteOptions(const DeltaLakeConfig& config,
                                                     const LoadOptions& options) {
  delta::TableWriteOptions write;
  if (options.mode == "merge" || options.mode == "upsert") {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::NotImplemented, "mode '",
                     options.mode, "' is not available in this version of ampdelta yet "
                     "(use append, overwrite, error or ignore)");
  }
  ARROW_ASSIGN_OR_RAISE(write.mode, delta::ParseSaveMode(options.mode));
  write.partition_by = config.partition_by;
  write.merge_schema = config.merge_schema;
  // schema_evolution: an overwrite may replace the table's schema.
  write.overwrite_schema = config.schema_evolution;
  ARROW_ASSIGN_OR_RAISE(write.files.codec, delta::ParseCodec(options.compression));
  write.files.compression_level = options.compression_level;
  if (config.file_size_hint) write.files.target_file_size = *config.file_size_hint;
  if (config.max_rows_per_file) write.files.max_rows_per_file = *config.max_rows_per_file;
  if (config.max_rows_per_group) write.files.max_rows_per_group = *config.max_rows_per_group;
  return write;
}

arrow::Status Run(amp::Client& client, const std::string& sql, const DeltaLakeConfig& config,
                  const LoadOptions& options, LoadResult* result) {
  ARROW_ASSIGN_OR_RAISE(auto write, WriteOptions(config, options));
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(config.table_path, config.storage_options));
  amp::QueryOptions query;
  query.stream = false;
  ARROW_ASSIGN_OR_RAISE(auto stream, client.Query(sql, query));
  ARROW_ASSIGN_OR_RAISE(auto writer, delta::TableWriter::Open(store, stream->schema(), write));
  int64_t rows = 0;
  int64_t bytes = 0;
  while (true) {
    auto message = stream->Next();
    if (!message.ok()) {
      (void)writer->Abort();
      return message.status();
    }
    if (!message->has_value()) break;
    const auto& batch = (*message)->data;
    if (batch->num_rows() == 0) continue;  // markers and keep-alives carry no rows
    arrow::Status written = writer->Write(batch);
    if (!written.ok()) {
      stream->Cancel();
      (void)writer->Abort();
      return written;
    }
    rows += batch->num_rows();
    bytes += arrow::util::TotalBufferSize(*batch);
    if (options.progress) options.progress(rows, bytes);
  }
  ARROW_ASSIGN_OR_RAISE(auto committed, writer->Commit());
  result->rows_loaded = rows;
  result->metadata["operation"] = "load_table";
  result->metadata["rows_loaded"] = std::to_string(rows);
  result->metadata["write_mode"] = options.mode;
  result->metadata["committed"] = committed.committed ? "true" : "false";
  if (committed.committed) {
    result->metadata["table_version"] = std::to_string(committed.commit.version);
    result->metadata["files_added"] = std::to_string(committed.files_added);
    result->metadata["files_removed"] = std::to_string(committed.files_removed);
    result->metadata["bytes_written"] = std::to_string(committed.bytes);
    result->metadata["commit_attempts"] = std::to_string(committed.commit.attempts);
  }
  // Maintenance runs once per load, after the commit: a failure is reported, the load stands.
  if (committed.committed && config.optimize_after_write) {
    delta::OptimizeOptions optimize;
    if (config.file_size_hint) optimize.target_size = *config.file_size_hint;
    optimize.files.codec = write.files.codec;
    auto compacted = delta::Optimize(store, optimize);
    if (compacted.ok()) {
      if (compacted->version) {
        result->metadata["optimize_version"] = std::to_string(*compacted->version);
        result->metadata["optimize_files_removed"] = std::to_string(compacted->files_removed);
      }
    } else {
      result->metadata["optimize_error"] = compacted.status().message();
    }
  }
  if (committed.committed && config.vacuum_after_write) {
    auto vacuumed = delta::Vacuum(store);
    if (vacuumed.ok()) {
      result->metadata["vacuum_files_deleted"] = std::to_string(vacuumed->files.size());
    } else {
      result->metadata["vacuum_error"] = vacuumed.status().message();
    }
  }
  return arrow::Status::OK();
}

}  // namespace

LoadResult LoadBatch(amp::Client& client, const std::string& sql, const DeltaLakeConfig& config,
                     const LoadOptions& options) {
  LoadResult result;
  result.table_name = options.destination.empty() ? config.table_path : options.destination;
  const auto start = std::chrono::steady_clock::now();
  arrow::Status status = Run(client, sql, config, options, &result);
  result.duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.success = status.ok();
  if (!status.ok()) {
    result.error = status.message();
    result.rows_loaded = 0;
  }
  result.ops_per_second = result.duration > 0 ? static_cast<double>(result.rows_loaded) / result.duration : 0;
  return result;
}

}  // namespace ampdelta::loader

#include "ampdelta/loader/batch_loader.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <arrow/record_batch.h>
#include <arrow/util/byte_size.h>

#include "ampdelta/amp/server_error.h"
#include "ampdelta/delta/ops/merge.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/loader/load_common.h"
#include "ampdelta/loader/telemetry.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

using internal::Backoff;
using internal::IsMerge;
using internal::RunMaintenance;
using internal::WriteOptions;

using Clock = std::chrono::steady_clock;

// What one attempt of a load has done so far.
struct Progress {
  int64_t rows = 0;
  int64_t bytes = 0;
  int64_t batches = 0;
  int commits = 0;
  int64_t rows_committed = 0;
  int64_t files_added = 0;
  int64_t files_removed = 0;
  int64_t bytes_written = 0;
  int64_t table_version = -1;
  int commit_attempts = 0;
};

// Count a commit of the load, and tell operators (`commit` event, metrics).
void Record(const delta::TableWriteResult& written, const std::string& table_name,
            Clock::time_point commit_start, Progress* progress) {
  if (!written.committed) return;
  telemetry::Committed(
      {table_name,
       written.commit.version,
       written.rows,
       written.files_added,
       written.bytes,
       std::chrono::duration<double>(Clock::now() - commit_start).count(),
       {}});
  ++progress->commits;
  progress->rows_committed += written.rows;
  progress->files_added += written.files_added;
  progress->files_removed += written.files_removed;
  progress->bytes_written += written.bytes;
  progress->table_version = written.commit.version;
  progress->commit_attempts += written.commit.attempts;
}

std::string RangesText(const amp::BatchMetadata& metadata) {
  std::string text;
  for (const auto& range : metadata.ranges) {
    if (!text.empty()) text += ",";
    text += range.network + ":" + std::to_string(range.start) + "-" +
            std::to_string(range.end);
  }
  return text;
}

bool Stopped(const LoadOptions& options) {
  return options.stop != nullptr && options.stop->load();
}

arrow::Status StoppedError() {
  return arrow::Status::Cancelled("load stopped before its commit: nothing committed");
}

void ReportBatch(const LoadOptions& options, const std::string& table_name, int64_t rows,
                 const amp::BatchMetadata& metadata, const Progress& progress,
                 double seconds) {
  if (!options.on_batch || options.read_all) return;
  LoadResult batch;
  batch.table_name = table_name;
  batch.success = true;
  batch.rows_loaded = rows;
  batch.duration = seconds;
  batch.ops_per_second =
      seconds > 0 ? static_cast<double>(batch.rows_loaded) / seconds : 0;
  batch.progress.batch_index = progress.batches - 1;
  batch.progress.total_rows = progress.rows;
  batch.progress.total_bytes = progress.bytes;
  batch.metadata["batch_index"] = std::to_string(batch.progress.batch_index);
  batch.metadata["total_rows"] = std::to_string(progress.rows);
  batch.metadata["total_bytes"] = std::to_string(progress.bytes);
  const std::string ranges = RangesText(metadata);
  if (!ranges.empty()) batch.metadata["block_ranges"] = ranges;
  options.on_batch(batch);
}

// One run of the query into the table.
arrow::Status LoadOnce(amp::Client& client, const std::string& sql,
                       const LoadOptions& options, delta::TableWriteOptions write,
                       const std::shared_ptr<storage::ObjectStore>& store,
                       const std::string& table_name,
                       const internal::LoadRecords& records, Progress* progress,
                       std::optional<delta::MergeResult>* merged, bool* mid_stream) {
  amp::QueryOptions query;
  query.stream = false;
  query.idle_timeout = options.idle_timeout;
  query.stop = options.stop;
  query.stop_cancels_reads = true;
  ARROW_ASSIGN_OR_RAISE(auto stream, client.Query(sql, query));
  const ScopedCancellation cancellable(options.cancellation, stream.get());
  telemetry::Connected(RedactUrl(client.url()), table_name, /*stream=*/false);
  const bool merge = IsMerge(options.mode);
  std::unique_ptr<delta::TableWriter> writer;
  std::vector<std::shared_ptr<arrow::RecordBatch>> merge_source;
  auto fail = [&](const arrow::Status& status) {
    stream->Cancel();
    if (writer) (void)writer->Abort();
    return status;
  };
  if (!merge) {
    auto opened = delta::TableWriter::Open(store, stream->schema(), write);
    if (!opened.ok()) return fail(opened.status());
    writer = std::move(*opened);
    if (!records.file_tags.empty()) writer->SetFileTags(records.file_tags);
    // mode ignore on an existing table: nothing to read.
    if (writer->skipped()) return fail(arrow::Status::OK());
  }
  int64_t rows_in_commit = 0;
  auto last = Clock::now();
  while (true) {
    auto message = stream->Next();
    if (!message.ok()) {
      *mid_stream = true;
      return fail(message.status());
    }
    if (!message->has_value()) break;
    if (Stopped(options)) return fail(StoppedError());
    const auto& received = (*message)->data;
    if (received->num_rows() == 0) continue;  // markers and keep-alives carry no rows
    // The SDK's batch_size: what arrives is written (and reported) in slices of at most
    // that many rows.
    const int64_t chunk = options.batch_size.value_or(received->num_rows());
    for (int64_t offset = 0; offset < received->num_rows(); offset += chunk) {
      const std::shared_ptr<arrow::RecordBatch> batch = received->Slice(offset, chunk);
      if (merge) {
        merge_source.push_back(batch);
      } else {
        // With commit_every_rows a batch may be split across commits.
        std::shared_ptr<arrow::RecordBatch> rest = batch;
        while (rest->num_rows() > 0) {
          std::shared_ptr<arrow::RecordBatch> part = rest;
          if (options.commit_every_rows) {
            const int64_t room = *options.commit_every_rows - rows_in_commit;
            part = rest->Slice(0, std::min(room, rest->num_rows()));
          }
          arrow::Status written = writer->Write(part);
          if (!written.ok()) return fail(written);
          rows_in_commit += part->num_rows();
          rest = rest->Slice(part->num_rows());
          if (options.commit_every_rows && rows_in_commit >= *options.commit_every_rows) {
            const auto commit_start = Clock::now();
            auto committed = writer->Commit();
            if (!committed.ok()) return fail(committed.status());
            Record(*committed, table_name, commit_start, progress);
            // Later commits of the load add to what the first one left (its table
            // properties included).
            write.mode = delta::SaveMode::kAppend;
            write.configuration.clear();
            auto reopened = delta::TableWriter::Open(store, stream->schema(), write);
            if (!reopened.ok()) return fail(reopened.status());
            writer = std::move(*reopened);
            if (!records.file_tags.empty()) writer->SetFileTags(records.file_tags);
            rows_in_commit = 0;
          }
        }
      }
      progress->rows += batch->num_rows();
      if (offset == 0) progress->bytes += arrow::util::TotalBufferSize(*received);
      ++progress->batches;
      const auto now = Clock::now();
      ReportBatch(options, table_name, batch->num_rows(), (*message)->metadata, *progress,
                  std::chrono::duration<double>(now - last).count());
      last = now;
    }
  }
  // A stop asked for while the last batch was reported (a progress callback that raised)
  // still prevents the commit.
  if (Stopped(options)) return fail(StoppedError());
  if (merge) {
    delta::MergeOptions merge_options;
    merge_options.keys = options.merge_keys;
    merge_options.write = write;
    const auto commit_start = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto result, delta::MergeRows(store, stream->schema(),
                                                        merge_source, merge_options));
    Record(result.write, table_name, commit_start, progress);
    *merged = std::move(result);
    return arrow::Status::OK();
  }
  if (rows_in_commit == 0 && progress->commits > 0) return writer->Abort();
  if (records.before_commit) {
    arrow::Status recorded = records.before_commit(rows_in_commit, writer.get());
    if (!recorded.ok()) return fail(recorded);
  }
  const auto commit_start = Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto committed, writer->Commit());
  Record(committed, table_name, commit_start, progress);
  return arrow::Status::OK();
}

arrow::Status Run(amp::Client& client, const std::string& sql,
                  const DeltaLakeConfig& config, const LoadOptions& options,
                  const internal::LoadRecords& records, LoadResult* result) {
  if (options.batch_size && *options.batch_size < 1) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "batch_size must be at least 1 row, got ", *options.batch_size);
  }
  ARROW_ASSIGN_OR_RAISE(auto write, WriteOptions(config, options));
  // A stop during a commit's retries ends the load before its commit.
  write.commit.stop = options.stop;
  write.app_transaction = records.app_transaction;
  write.transaction_records = records.transaction_records;
  write.overlapping_app_ids = records.overlapping_app_ids;
  write.superseded_app_ids = records.superseded_app_ids;
  write.claimed_adds = records.claimed_adds;
  write.read_snapshot = records.read_snapshot;
  ARROW_ASSIGN_OR_RAISE(auto store, internal::OpenStore(config, options, result));
  Progress progress;
  std::optional<delta::MergeResult> merged;
  for (int attempt = 0;; ++attempt) {
    progress = Progress();
    bool mid_stream = false;
    arrow::Status status =
        LoadOnce(client, sql, options, write, store, result->table_name, records,
                 &progress, &merged, &mid_stream);
    if (status.ok()) break;
    if (Stopped(options)) return StoppedError();
    // While nothing is committed a rerun is safe; a failure once the result was streaming
    // (ampd reports those as INTERNAL) may pass, a refusal at planning never does.
    const bool retryable = config.retry.enabled && attempt < config.retry.max_retries &&
                           progress.commits == 0 &&
                           (amp::IsTransientServerError(status) ||
                            (mid_stream && amp::IsRetryableMidStream(status)));
    if (!retryable) {
      if (progress.commits > 0) {
        return status.WithMessage(
            status.message(), " (", progress.rows_committed,
            " rows of this load were already committed, up to table version ",
            progress.table_version, ")");
      }
      return status;
    }
    const auto delay = Backoff(config.retry, attempt);
    telemetry::Failed(status);
    telemetry::Retrying(status, attempt + 1, config.retry.max_retries, delay);
    result->metadata["retries"] = std::to_string(attempt + 1);
    if (options.stop == nullptr) {
      options.sleep(delay);
      continue;
    }
    for (auto left = delay; left.count() > 0; left -= std::chrono::milliseconds(50)) {
      if (Stopped(options)) return StoppedError();
      options.sleep(std::min(left, std::chrono::milliseconds(50)));
    }
  }
  result->rows_loaded = progress.rows;
  result->metadata["operation"] = "load_table";
  result->metadata["rows_loaded"] = std::to_string(progress.rows);
  result->metadata["write_mode"] = options.mode;
  result->metadata["committed"] = progress.commits > 0 ? "true" : "false";
  if (progress.commits > 0) {
    result->metadata["table_version"] = std::to_string(progress.table_version);
    result->metadata["commits"] = std::to_string(progress.commits);
    result->metadata["files_added"] = std::to_string(progress.files_added);
    result->metadata["files_removed"] = std::to_string(progress.files_removed);
    result->metadata["bytes_written"] = std::to_string(progress.bytes_written);
    result->metadata["commit_attempts"] = std::to_string(progress.commit_attempts);
  } else {
    result->rows_loaded = 0;  // mode ignore on an existing table
  }
  if (merged) {
    result->metadata["rows_inserted"] = std::to_string(merged->rows_inserted);
    result->metadata["rows_updated"] = std::to_string(merged->rows_updated);
    result->metadata["source_duplicates"] = std::to_string(merged->source_duplicates);
    result->metadata["files_rewritten"] = std::to_string(merged->files_rewritten);
    result->metadata["files_marked"] = std::to_string(merged->files_marked);
    result->metadata["files_skipped"] = std::to_string(merged->files_skipped);
  }
  if (progress.commits > 0) RunMaintenance(store, config, write, result);
  return arrow::Status::OK();
}

}  // namespace

namespace internal {

LoadResult LoadBatchRecorded(amp::Client& client, const std::string& sql,
                             const DeltaLakeConfig& config, const LoadOptions& options,
                             const LoadRecords& records) {
  return RunLoad(config, options, [&](LoadResult* result) {
    arrow::Status status = Run(client, sql, config, options, records, result);
    if (!status.ok())
      result->rows_loaded = 0;  // nothing of a failed batch load is committed
    return status;
  });
}

}  // namespace internal

void QueryCancellation::CancelAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  for (const auto& [handle, stream] : streams_) stream->Cancel();
}

int QueryCancellation::Register(amp::QueryStream* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancelled_) stream->Cancel();
  streams_[++next_handle_] = stream;
  return next_handle_;
}

void QueryCancellation::Unregister(int handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.erase(handle);
}

LoadResult LoadBatch(amp::Client& client, const std::string& sql,
                     const DeltaLakeConfig& config, const LoadOptions& options) {
  return internal::LoadBatchRecorded(client, sql, config, options, {});
}

}  // namespace ampdelta::loader

#include "ampdelta/loader/batch/batch_loader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/byte_size.h>

#include "ampdelta/amp/server_error.h"
#include "ampdelta/delta/ops/merge.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/loader/batch/recorded_load.h"
#include "ampdelta/loader/common/load_common.h"
#include "ampdelta/loader/common/telemetry.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

using internal::Backoff;
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
  // The table at or before the last commit (null: a table this load created), for the
  // maintenance after the load.
  std::shared_ptr<const delta::Snapshot> snapshot;
};

// Count a commit of the load made on `read` (null: a new table), and tell operators
// (`commit` event, metrics).
void Record(const delta::TableWriteResult& written,
            const std::shared_ptr<const delta::Snapshot>& read,
            const std::string& table_name, Clock::time_point commit_start,
            Progress* progress) {
  if (!written.committed) return;
  progress->snapshot =
      written.commit.snapshot_after != nullptr ? written.commit.snapshot_after : read;
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
  batch.metadata["batch_index"] = static_cast<int64_t>(batch.progress.batch_index);
  batch.metadata["total_rows"] = static_cast<int64_t>(progress.rows);
  batch.metadata["total_bytes"] = static_cast<int64_t>(progress.bytes);
  const std::string ranges = amp::RangesText(metadata.ranges);
  if (!ranges.empty()) batch.metadata["block_ranges"] = ranges;
  options.on_batch(batch);
}

// Where a batch load's rows come from: a query on a server (rerun on transient
// failures) or Arrow data handed to the engine (read once).
struct BatchSource {
  // Named in telemetry: the server's URL (redacted) or "arrow".
  std::string origin;
  std::function<arrow::Result<std::unique_ptr<amp::QueryStream>>(
      const amp::QueryOptions&)>
      open;
  bool rerunnable = false;
};

BatchSource QuerySource(amp::Client& client, const std::string& sql) {
  return {RedactUrl(client.url()),
          [&client, &sql](const amp::QueryOptions& query) {
            return client.Query(sql, query);
          },
          /*rerunnable=*/true};
}

// Arrow data as a query result without metadata: the batch loader reads it as it reads a
// server's stream. Cancel() ends it at the next batch.
class RecordBatchReaderStream : public amp::QueryStream {
 public:
  explicit RecordBatchReaderStream(std::shared_ptr<arrow::RecordBatchReader> reader)
      : reader_(std::move(reader)), schema_(reader_->schema()) {}

  const std::shared_ptr<arrow::Schema>& schema() const override { return schema_; }

  arrow::Result<std::optional<amp::ResponseBatch>> Next() override {
    if (cancelled_.load())
      return arrow::Status::Cancelled("the Arrow data was abandoned");
    ARROW_ASSIGN_OR_RAISE(auto batch, reader_->Next());
    if (batch == nullptr) return std::nullopt;
    if (!batch->schema()->Equals(*schema_)) {
      return InvalidInputError("a batch of the Arrow data has the schema ",
                               batch->schema()->ToString(), " where the stream declared ",
                               schema_->ToString());
    }
    amp::ResponseBatch message;
    message.data = std::move(batch);
    return message;
  }

  void Cancel() override { cancelled_.store(true); }

 private:
  const std::shared_ptr<arrow::RecordBatchReader> reader_;
  const std::shared_ptr<arrow::Schema> schema_;
  std::atomic<bool> cancelled_{false};
};

BatchSource ReaderSource(const std::shared_ptr<arrow::RecordBatchReader>& reader) {
  auto opened = std::make_shared<std::atomic<bool>>(false);
  return {"arrow",
          [reader, opened](const amp::QueryOptions&)
              -> arrow::Result<std::unique_ptr<amp::QueryStream>> {
            if (opened->exchange(true)) {
              return arrow::Status::Invalid("Arrow data can be read only once");
            }
            return std::make_unique<RecordBatchReaderStream>(reader);
          },
          /*rerunnable=*/false};
}

// One run of the query into the table: its batches written as they arrive (or
// collected for a merge), committed at the end or every commit_every_rows.
class BatchRun {
 public:
  BatchRun(const LoadOptions& options, delta::TableWriteOptions write,
           std::shared_ptr<storage::ObjectStore> store, const std::string& table_name,
           const internal::LoadRecords& records, Progress* progress)
      : options_(options),
        write_(std::move(write)),
        store_(std::move(store)),
        table_name_(table_name),
        records_(records),
        progress_(progress),
        merge_(IsMerge(options.mode)) {}

  // `mid_stream` tells whether a failure came while the result was streaming.
  arrow::Status Run(const BatchSource& source, std::optional<delta::MergeResult>* merged,
                    bool* mid_stream) {
    amp::QueryOptions query;
    query.stream = false;
    query.idle_timeout = options_.idle_timeout;
    query.stop = options_.stop;
    query.stop_cancels_reads = true;
    ARROW_ASSIGN_OR_RAISE(stream_, source.open(query));
    const ScopedCancellation cancellable(options_.cancellation, stream_.get());
    telemetry::Connected(source.origin, table_name_, /*stream=*/false);
    if (!merge_) {
      ARROW_RETURN_NOT_OK(AbandonOnError(OpenWriter()));
      // mode ignore on an existing table: nothing to read.
      if (writer_->skipped()) return Abandon(arrow::Status::OK());
    }
    auto last = Clock::now();
    while (true) {
      auto message = stream_->Next();
      if (!message.ok()) {
        *mid_stream = true;
        return Abandon(message.status());
      }
      if (!message->has_value()) break;
      if (Stopped(options_)) return Abandon(StoppedError());
      ARROW_RETURN_NOT_OK(AbandonOnError(Received(**message, &last)));
    }
    // A stop asked for while the last batch was reported (a progress callback that
    // raised) still prevents the commit.
    if (Stopped(options_)) return Abandon(StoppedError());
    return merge_ ? Merge(merged) : CommitLast();
  }

 private:
  // Cancel the query and abort the files written so far; return `status`.
  arrow::Status Abandon(const arrow::Status& status) {
    stream_->Cancel();
    if (writer_ != nullptr) (void)writer_->Abort();
    return status;
  }

  arrow::Status AbandonOnError(const arrow::Status& status) {
    return status.ok() ? status : Abandon(status);
  }

  arrow::Status OpenWriter() {
    ARROW_ASSIGN_OR_RAISE(writer_,
                          delta::TableWriter::Open(store_, stream_->schema(), write_));
    if (!records_.file_tags.empty()) writer_->SetFileTags(records_.file_tags);
    return arrow::Status::OK();
  }

  // A message from the server: written (or kept for the merge) in slices of at most the
  // SDK's batch_size rows, each reported; markers and keep-alives carry no rows.
  arrow::Status Received(const amp::ResponseBatch& message, Clock::time_point* last) {
    const auto& received = message.data;
    if (received->num_rows() == 0) return arrow::Status::OK();
    const int64_t chunk = options_.batch_size.value_or(received->num_rows());
    for (int64_t offset = 0; offset < received->num_rows(); offset += chunk) {
      const std::shared_ptr<arrow::RecordBatch> batch = received->Slice(offset, chunk);
      if (merge_) {
        merge_source_.push_back(batch);
      } else {
        ARROW_RETURN_NOT_OK(Write(batch));
      }
      progress_->rows += batch->num_rows();
      if (offset == 0) progress_->bytes += arrow::util::TotalBufferSize(*received);
      ++progress_->batches;
      const auto now = Clock::now();
      ReportBatch(options_, table_name_, batch->num_rows(), message.metadata, *progress_,
                  std::chrono::duration<double>(now - *last).count());
      *last = now;
    }
    return arrow::Status::OK();
  }

  // Write `batch`, committing whenever commit_every_rows is reached (a batch may be split
  // across commits).
  arrow::Status Write(std::shared_ptr<arrow::RecordBatch> rest) {
    while (rest->num_rows() > 0) {
      std::shared_ptr<arrow::RecordBatch> part = rest;
      if (options_.commit_every_rows) {
        const int64_t room = *options_.commit_every_rows - rows_in_commit_;
        part = rest->Slice(0, std::min(room, rest->num_rows()));
      }
      ARROW_RETURN_NOT_OK(writer_->Write(part));
      rows_in_commit_ += part->num_rows();
      rest = rest->Slice(part->num_rows());
      if (options_.commit_every_rows && rows_in_commit_ >= *options_.commit_every_rows) {
        ARROW_RETURN_NOT_OK(CommitAndReopen());
      }
    }
    return arrow::Status::OK();
  }

  arrow::Status CommitAndReopen() {
    const auto commit_start = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto committed, writer_->Commit());
    Record(committed, writer_->read_snapshot(), table_name_, commit_start, progress_);
    // Later commits of the load add to what the first one left (its table properties
    // included).
    write_.mode = delta::SaveMode::kAppend;
    write_.configuration.clear();
    rows_in_commit_ = 0;
    return OpenWriter();
  }

  arrow::Status Merge(std::optional<delta::MergeResult>* merged) {
    delta::MergeOptions merge_options;
    merge_options.keys = options_.merge_keys;
    merge_options.write = write_;
    const auto commit_start = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto result, delta::MergeRows(store_, stream_->schema(),
                                                        merge_source_, merge_options));
    Record(result.write, nullptr, table_name_, commit_start, progress_);
    *merged = std::move(result);
    return arrow::Status::OK();
  }

  arrow::Status CommitLast() {
    if (rows_in_commit_ == 0 && progress_->commits > 0) return writer_->Abort();
    if (records_.before_commit) {
      ARROW_RETURN_NOT_OK(
          AbandonOnError(records_.before_commit(rows_in_commit_, writer_.get())));
    }
    const auto commit_start = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto committed, writer_->Commit());
    Record(committed, writer_->read_snapshot(), table_name_, commit_start, progress_);
    return arrow::Status::OK();
  }

  const LoadOptions& options_;
  delta::TableWriteOptions write_;
  const std::shared_ptr<storage::ObjectStore> store_;
  const std::string& table_name_;
  const internal::LoadRecords& records_;
  Progress* progress_;
  const bool merge_;
  std::unique_ptr<amp::QueryStream> stream_;
  std::unique_ptr<delta::TableWriter> writer_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> merge_source_;
  int64_t rows_in_commit_ = 0;
};

// The load's write options: the configuration's, with the stop and the records' claims.
arrow::Result<delta::TableWriteOptions> BatchWriteOptions(
    const DeltaLakeConfig& config, const LoadOptions& options,
    const internal::LoadRecords& records) {
  ARROW_ASSIGN_OR_RAISE(auto write, WriteOptions(config, options));
  // A stop during a commit's retries ends the load before its commit.
  write.commit.stop = options.stop;
  write.app_transaction = records.app_transaction;
  write.transaction_records = records.transaction_records;
  write.overlapping_app_ids = records.overlapping_app_ids;
  write.superseded_app_ids = records.superseded_app_ids;
  write.claimed_adds = records.claimed_adds;
  write.read_snapshot = records.read_snapshot;
  return write;
}

// Sleep `delay` before a rerun, in slices that a stop ends early.
arrow::Status WaitBeforeRetry(const LoadOptions& options,
                              std::chrono::milliseconds delay) {
  if (options.stop == nullptr) {
    options.sleep(delay);
    return arrow::Status::OK();
  }
  for (auto left = delay; left.count() > 0; left -= std::chrono::milliseconds(50)) {
    if (Stopped(options)) return StoppedError();
    options.sleep(std::min(left, std::chrono::milliseconds(50)));
  }
  return arrow::Status::OK();
}

// Run the load, again after a transient failure while nothing is committed.
arrow::Status RunWithRetries(const BatchSource& source, const DeltaLakeConfig& config,
                             const LoadOptions& options,
                             const delta::TableWriteOptions& write,
                             const std::shared_ptr<storage::ObjectStore>& store,
                             const internal::LoadRecords& records, LoadResult* result,
                             Progress* progress,
                             std::optional<delta::MergeResult>* merged) {
  for (int attempt = 0;; ++attempt) {
    *progress = Progress();
    bool mid_stream = false;
    arrow::Status status =
        BatchRun(options, write, store, result->table_name, records, progress)
            .Run(source, merged, &mid_stream);
    if (status.ok()) return status;
    if (Stopped(options)) return StoppedError();
    // While nothing is committed a rerun is safe; a failure once the result was streaming
    // (ampd reports those as INTERNAL) may pass, a refusal at planning never does.
    const bool retryable = source.rerunnable && config.retry.enabled &&
                           attempt < config.retry.max_retries && progress->commits == 0 &&
                           (amp::IsTransientServerError(status) ||
                            (mid_stream && amp::IsRetryableMidStream(status)));
    if (!retryable) {
      if (progress->commits > 0) {
        return status.WithMessage(
            status.message(), " (", progress->rows_committed,
            " rows of this load were already committed, up to table version ",
            progress->table_version, ")");
      }
      return status;
    }
    const auto delay = Backoff(config.retry, attempt);
    telemetry::Failed(status);
    telemetry::Retrying(status, attempt + 1, config.retry.max_retries, delay);
    result->metadata["retries"] = static_cast<int64_t>(attempt + 1);
    ARROW_RETURN_NOT_OK(WaitBeforeRetry(options, delay));
  }
}

void ReportLoad(const Progress& progress, const std::optional<delta::MergeResult>& merged,
                const LoadOptions& options, LoadResult* result) {
  result->rows_loaded = progress.rows;
  result->metadata["operation"] = std::string("load_table");
  result->metadata["rows_loaded"] = static_cast<int64_t>(progress.rows);
  result->metadata["write_mode"] = std::string(LoadModeName(options.mode));
  result->metadata["committed"] = progress.commits > 0;
  if (progress.commits > 0) {
    result->metadata["table_version"] = static_cast<int64_t>(progress.table_version);
    result->metadata["commits"] = static_cast<int64_t>(progress.commits);
    result->metadata["files_added"] = static_cast<int64_t>(progress.files_added);
    result->metadata["files_removed"] = static_cast<int64_t>(progress.files_removed);
    result->metadata["bytes_written"] = static_cast<int64_t>(progress.bytes_written);
    result->metadata["commit_attempts"] = static_cast<int64_t>(progress.commit_attempts);
  } else {
    result->rows_loaded = 0;  // mode ignore on an existing table
  }
  if (merged) {
    result->metadata["rows_inserted"] = static_cast<int64_t>(merged->rows_inserted);
    result->metadata["rows_updated"] = static_cast<int64_t>(merged->rows_updated);
    result->metadata["source_duplicates"] =
        static_cast<int64_t>(merged->source_duplicates);
    result->metadata["files_rewritten"] = static_cast<int64_t>(merged->files_rewritten);
    result->metadata["files_marked"] = static_cast<int64_t>(merged->files_marked);
    result->metadata["files_skipped"] = static_cast<int64_t>(merged->files_skipped);
  }
}

arrow::Status Run(const BatchSource& source, const DeltaLakeConfig& config,
                  const LoadOptions& options, const internal::LoadRecords& records,
                  LoadResult* result) {
  if (options.batch_size && *options.batch_size < 1) {
    return InvalidInputError("batch_size must be at least 1 row, got ",
                             *options.batch_size);
  }
  ARROW_ASSIGN_OR_RAISE(auto write, BatchWriteOptions(config, options, records));
  ARROW_ASSIGN_OR_RAISE(auto store, internal::OpenStore(config, options, result));
  Progress progress;
  std::optional<delta::MergeResult> merged;
  ARROW_RETURN_NOT_OK(RunWithRetries(source, config, options, write, store, records,
                                     result, &progress, &merged));
  ReportLoad(progress, merged, options, result);
  if (progress.commits > 0)
    RunMaintenance(store, progress.snapshot, config, write, options.block_column, result);
  return arrow::Status::OK();
}

LoadResult LoadFrom(const BatchSource& source, const DeltaLakeConfig& config,
                    const LoadOptions& options, const internal::LoadRecords& records) {
  return internal::RunLoad(config, options, [&](LoadResult* result) {
    arrow::Status status = Run(source, config, options, records, result);
    if (!status.ok())
      result->rows_loaded = 0;  // nothing of a failed batch load is committed
    return status;
  });
}

}  // namespace

namespace internal {

LoadResult LoadBatchRecorded(amp::Client& client, const std::string& sql,
                             const DeltaLakeConfig& config, const LoadOptions& options,
                             const LoadRecords& records) {
  return LoadFrom(QuerySource(client, sql), config, options, records);
}

LoadResult LoadRecordBatchesRecorded(
    const std::shared_ptr<arrow::RecordBatchReader>& reader,
    const DeltaLakeConfig& config, const LoadOptions& options,
    const LoadRecords& records) {
  if (reader == nullptr) {
    return RunLoad(config, options, [](LoadResult*) {
      return InvalidInputError("no Arrow data to load");
    });
  }
  return LoadFrom(ReaderSource(reader), config, options, records);
}

}  // namespace internal

LoadResult LoadBatch(amp::Client& client, const std::string& sql,
                     const DeltaLakeConfig& config, const LoadOptions& options) {
  return internal::LoadBatchRecorded(client, sql, config, options, {});
}

LoadResult LoadRecordBatches(const std::shared_ptr<arrow::RecordBatchReader>& reader,
                             const DeltaLakeConfig& config, const LoadOptions& options) {
  return internal::LoadRecordBatchesRecorded(reader, config, options, {});
}

}  // namespace ampdelta::loader

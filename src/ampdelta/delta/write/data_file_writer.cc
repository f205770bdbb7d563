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

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/write/partition_file_set.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

// Fans batches out to worker threads, each with its own PartitionFileSet (own files, own
// statistics), so encoding, compression and fsync use every core. Small writes stay on
// one worker and produce one file; queues are bounded, so memory stays bounded.
class DataFileWriter::Impl {
 public:
  Impl(std::shared_ptr<storage::ObjectStore> store,
       std::shared_ptr<arrow::Schema> table_schema,
       std::vector<std::string> partition_columns, DataFileOptions options)
      : store_(std::move(store)),
        table_schema_(std::move(table_schema)),
        partition_columns_(std::move(partition_columns)),
        options_(std::move(options)) {
    int threads = options_.num_threads > 0 ? options_.num_threads : UsableCores();
    threads_ = std::max(1, std::min(threads, 8));
    if (threads_ > 1) options_.parallel_encoding = false;  // our threads replace Arrow's
    threshold_ = options_.parallel_threshold_bytes;
    // Each worker's file set gets its share of the budget.
    options_.memory_budget_bytes =
        std::max<int64_t>(options_.memory_budget_bytes / threads_, 1 << 20);
  }

  ~Impl() { StopWorkers(); }

  arrow::Status Init() {
    for (int i = 0; i < threads_; ++i) {
      auto worker = std::make_unique<Worker>();
      ARROW_ASSIGN_OR_RAISE(worker->writer, PartitionFileSet::Make(
                                                store_, table_schema_, partition_columns_,
                                                options_, i, threads_));
      workers_.push_back(std::move(worker));
    }
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
    std::unique_ptr<PartitionFileSet> writer;
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
  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<arrow::Schema> table_schema_;
  std::vector<std::string> partition_columns_;
  DataFileOptions options_;
  int threads_ = 1;
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

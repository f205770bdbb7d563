#include "ampdelta/amp/fed_stream.h"

#include <algorithm>
#include <utility>

#include <arrow/record_batch.h>
#include <arrow/type.h>

#include "ampdelta/util/status.h"

namespace ampdelta::amp {
namespace {

class FedQueryStream : public QueryStream {
 public:
  explicit FedQueryStream(std::shared_ptr<FedChannel> channel)
      : channel_(std::move(channel)) {}
  ~FedQueryStream() override { channel_->Cancel(); }

  const std::shared_ptr<arrow::Schema>& schema() const override {
    return channel_->schema();
  }
  arrow::Result<std::optional<ResponseBatch>> Next() override { return channel_->Pop(); }
  void Cancel() override { channel_->Cancel(); }

 private:
  std::shared_ptr<FedChannel> channel_;
};

}  // namespace

FedChannel::FedChannel(std::shared_ptr<arrow::Schema> schema, size_t capacity)
    : schema_(std::move(schema)), capacity_(std::max<size_t>(capacity, 2)) {}

arrow::Result<bool> FedChannel::Push(const ResponseBatch& pushed,
                                     std::chrono::milliseconds timeout) {
  ResponseBatch message = pushed;
  if (message.data == nullptr) {
    return InvalidInputError(
        "a streamed message needs a record batch (0 rows for markers)");
  }
  if (!message.data->schema()->Equals(*schema_)) {
    return InvalidInputError("a streamed batch has the schema ",
                             message.data->schema()->ToString(),
                             " where the stream began with ", schema_->ToString());
  }
  // Rows on the message that ends their microbatch (the SDK's tests send such) arrive as
  // ampd sends them: the rows, then an empty end marker.
  std::optional<ResponseBatch> end;
  if (message.metadata.ranges_complete && message.data->num_rows() > 0) {
    end = ResponseBatch{message.data->Slice(0, 0), message.metadata, true, false};
    message.metadata.ranges_complete = false;
  }
  const size_t needed = end ? 2 : 1;
  std::unique_lock<std::mutex> lock(mutex_);
  const bool room = changed_.wait_for(lock, timeout, [&] {
    return cancelled_ || closed_ || queue_.size() + needed <= capacity_;
  });
  if (cancelled_) return arrow::Status::Cancelled("the load stopped reading the stream");
  if (closed_) return arrow::Status::Invalid("the stream was already closed");
  if (!room) return false;
  queue_.push_back(std::move(message));
  if (end) queue_.push_back(std::move(*end));
  changed_.notify_all();
  return true;
}

void FedChannel::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

void FedChannel::Fail(arrow::Status status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  failure_ = std::move(status);
  closed_ = true;
  changed_.notify_all();
}

arrow::Result<std::optional<ResponseBatch>> FedChannel::Pop() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return cancelled_ || closed_ || !queue_.empty(); });
  if (cancelled_) return arrow::Status::Cancelled("the stream was cancelled");
  if (!queue_.empty()) {
    ResponseBatch message = std::move(queue_.front());
    queue_.pop_front();
    changed_.notify_all();
    return message;
  }
  ARROW_RETURN_NOT_OK(failure_);
  return std::nullopt;
}

void FedChannel::Cancel() {
  std::deque<ResponseBatch> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    dropped.swap(queue_);
    changed_.notify_all();
  }
  // Freed outside the lock: a producer's buffers may need its runtime (Python's GIL).
}

FedClient::FedClient(std::shared_ptr<FedChannel> channel, std::string label)
    : channel_(std::move(channel)), label_(std::move(label)) {}

arrow::Result<std::unique_ptr<QueryStream>> FedClient::Query(const std::string&,
                                                             const QueryOptions&) {
  if (std::exchange(queried_, true)) {
    return MakeError(
        ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
        "the stream handed to the loader cannot be read again from a position (a "
        "reconnect after a failure, or a reorg that began inside a committed microbatch, "
        "needs the server again): run the stream again (the SDK starts from the first "
        "block; the loader skips what the table holds and loads what it lacks), or load "
        "streams with ampdelta.Client, which reconnects itself");
  }
  return std::make_unique<FedQueryStream>(channel_);
}

arrow::Result<std::shared_ptr<arrow::Schema>> FedClient::GetSchema(const std::string&,
                                                                   const QueryOptions&) {
  return channel_->schema();
}

}  // namespace ampdelta::amp

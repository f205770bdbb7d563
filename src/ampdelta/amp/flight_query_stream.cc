#include "ampdelta/amp/flight_query_stream.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include <arrow/ipc/api.h>
#include <arrow/record_batch.h>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/amp/server_error.h"
#include "ampdelta/util/status.h"

namespace ampdelta::amp {
namespace {

namespace flight = arrow::flight;
using flight::internal::ClientDataStream;
using flight::internal::FlightData;

using WatchClock = std::chrono::steady_clock;

arrow::Status Stalled(std::chrono::milliseconds idle_timeout) {
  const double seconds = static_cast<double>(idle_timeout.count()) / 1000.0;
  std::ostringstream shown;
  shown << seconds;
  return MakeError(ErrorCode::kServerError, arrow::StatusCode::IOError,
                   "DoGet failed: DEADLINE_EXCEEDED: the server sent nothing for ",
                   shown.str(), " s (idle timeout); it may be stalled")
      .WithDetail(
          std::make_shared<ErrorDetail>(ErrorCode::kServerError, "DEADLINE_EXCEEDED"));
}

// Arrow's client reports this as INTERNAL from the server, which a load retries.
arrow::Status EndedBeforeTheSchema() {
  return MakeError(ErrorCode::kServerError, arrow::StatusCode::IOError,
                   "DoGet failed: INTERNAL: the server ended the stream before sending "
                   "its schema")
      .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kServerError, "INTERNAL"));
}

arrow::Status CancelledByClient() {
  return MakeError(ErrorCode::kServerError, arrow::StatusCode::Cancelled,
                   "DoGet failed: CANCELLED: the query was cancelled")
      .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kServerError, "CANCELLED"));
}

arrow::Status StoppedWhileWaiting() {
  return MakeError(ErrorCode::kServerError, arrow::StatusCode::Cancelled,
                   "DoGet cancelled: the load was stopped while it waited for the server")
      .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kServerError, "CANCELLED"));
}

// Cancels a call that waits longer than a timeout for its next message, or whose
// `stop` turns true while it waits. Thread-safe.
class CallWatchdog {
 public:
  enum class Fired : uint8_t { kNo, kIdle, kStopped };

  // `timeout` zero: no idle limit; `stop` null: no stop to watch.
  CallWatchdog(std::chrono::milliseconds timeout, const std::atomic<bool>* stop,
               std::function<void()> cancel)
      : timeout_(timeout),
        stop_flag_(stop),
        cancel_(std::move(cancel)),
        thread_([this] { Watch(); }) {}
  ~CallWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ending_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  // Start timing a wait; Disarm() ends it and says whether (and why) the watchdog
  // cancelled it.
  void Arm() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_ = true;
      since_ = WatchClock::now();
    }
    changed_.notify_all();
  }
  Fired Disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_ = false;
    return fired_;
  }

 private:
  static constexpr std::chrono::milliseconds kStopPoll{50};

  bool Stopped() const { return stop_flag_ != nullptr && stop_flag_->load(); }

  void Watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!ending_) {
      if (!waiting_ || fired_ != Fired::kNo) {
        changed_.wait(lock);
        continue;
      }
      auto wake = WatchClock::time_point::max();
      if (timeout_.count() > 0) wake = since_ + timeout_;
      if (stop_flag_ != nullptr) wake = std::min(wake, WatchClock::now() + kStopPoll);
      changed_.wait_until(lock, wake);
      if (!waiting_ || ending_) continue;
      if (Stopped()) {
        fired_ = Fired::kStopped;
      } else if (timeout_.count() > 0 && WatchClock::now() >= since_ + timeout_) {
        fired_ = Fired::kIdle;
      } else {
        continue;
      }
      lock.unlock();
      cancel_();
      lock.lock();
    }
  }

  const std::chrono::milliseconds timeout_;
  const std::atomic<bool>* const stop_flag_;
  const std::function<void()> cancel_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool waiting_ = false;
  Fired fired_ = Fired::kNo;
  bool ending_ = false;
  WatchClock::time_point since_;
  std::thread thread_;
};

// Feeds the IPC stream reader the call's messages that carry Arrow IPC (schema,
// dictionaries, record batches). The stream reads each message itself first, to
// answer metadata-only ones (Amp's progress markers) without the IPC reader, and hands
// the rest over with Hold().
class CallMessageReader : public arrow::ipc::MessageReader {
 public:
  explicit CallMessageReader(ClientDataStream* call) : call_(call) {}

  void Hold(FlightData message) { held_ = std::move(message); }
  // The app_metadata of the last message given to the IPC reader.
  std::shared_ptr<arrow::Buffer> TakeAppMetadata() { return std::move(app_metadata_); }

  arrow::Result<std::unique_ptr<arrow::ipc::Message>> ReadNextMessage() override {
    FlightData message;
    if (held_) {
      message = std::move(*held_);
      held_.reset();
    } else {
      // The IPC reader asks for more only after a dictionary batch. A metadata-only
      // message between it and its record batch would lose its block ranges.
      if (!call_->ReadData(&message)) return nullptr;
      if (message.metadata == nullptr) {
        return ProtocolError(
            "DoGet sent a metadata-only message between a dictionary batch and its "
            "record batch");
      }
    }
    app_metadata_ = std::move(message.app_metadata);
    return message.OpenMessage();
  }

 private:
  ClientDataStream* const call_;
  std::optional<FlightData> held_;
  std::shared_ptr<arrow::Buffer> app_metadata_;
};

class FlightQueryStream : public QueryStream {
 public:
  FlightQueryStream(std::shared_ptr<flight::internal::ClientTransport> transport,
                    std::unique_ptr<ClientDataStream> call,
                    arrow::ipc::IpcReadOptions read_options,
                    std::shared_ptr<arrow::Schema> planned,
                    std::chrono::milliseconds idle_timeout, const std::atomic<bool>* stop)
      : transport_(std::move(transport)),
        call_(std::move(call)),
        read_options_(std::move(read_options)),
        schema_(std::move(planned)),
        idle_timeout_(idle_timeout) {
    if (idle_timeout_.count() > 0 || stop != nullptr) {
      watchdog_ =
          std::make_unique<CallWatchdog>(idle_timeout_, stop, [this] { Cancel(); });
    }
  }

  // Members go in reverse order: the watchdog stops before the call it cancels, and an
  // unfinished call is cancelled as it is destroyed, before the transport it runs on.
  ~FlightQueryStream() override { watchdog_.reset(); }

  const std::shared_ptr<arrow::Schema>& schema() const override { return schema_; }

  arrow::Result<std::optional<ResponseBatch>> Next() override {
    if (reader_ == nullptr) ARROW_RETURN_NOT_OK(Open());
    if (watchdog_) watchdog_->Arm();
    auto next = ReadResponse();
    ARROW_RETURN_NOT_OK(WatchdogOutcome());
    return next;
  }

  void Cancel() override {
    cancelled_.store(true);
    call_->TryCancel();
  }

  // Read the server's schema (within the idle timeout, when there is one).
  arrow::Status Open() {
    if (watchdog_) watchdog_->Arm();
    auto opened = ReadSchema();
    ARROW_RETURN_NOT_OK(WatchdogOutcome());
    return opened;
  }

 private:
  // The call ended or failed: the server's status, merged with a client-side `failure`.
  // Later reads return the same outcome without touching the finished call.
  arrow::Status Finish(arrow::Status failure) {
    if (!finished_) {
      const bool client_failed = !failure.ok();
      // Finishing drains the call until the server ends it, which a stream never does:
      // a call this side gave up on is cancelled first.
      if (client_failed) call_->TryCancel();
      arrow::Status status = call_->Finish(std::move(failure));
      if (cancelled_.load() && !client_failed) {
        finished_ = CancelledByClient();
      } else {
        finished_ = status.ok() ? status : ServerError(status, "DoGet");
      }
    }
    return *finished_;
  }

  // The wait just ended: an error when the watchdog cancelled it.
  arrow::Status WatchdogOutcome() {
    if (!watchdog_) return arrow::Status::OK();
    switch (watchdog_->Disarm()) {
      case CallWatchdog::Fired::kIdle:
        return Stalled(idle_timeout_);
      case CallWatchdog::Fired::kStopped:
        return StoppedWhileWaiting();
      case CallWatchdog::Fired::kNo:
        break;
    }
    return arrow::Status::OK();
  }

  // A message arrived: the idle timeout starts again.
  void Heard() {
    if (watchdog_) watchdog_->Arm();
  }

  arrow::Status ReadSchema() {
    if (finished_) return finished_->ok() ? EndedBeforeTheSchema() : *finished_;
    FlightData first;
    // Like Arrow's own client, drop metadata-only messages before the schema.
    while (true) {
      if (!call_->ReadData(&first)) {
        ARROW_RETURN_NOT_OK(Finish(arrow::Status::OK()));
        return EndedBeforeTheSchema();
      }
      if (first.metadata != nullptr) break;
      Heard();
    }
    auto messages = std::make_unique<CallMessageReader>(call_.get());
    messages->Hold(std::move(first));
    messages_ = messages.get();
    auto reader =
        arrow::ipc::RecordBatchStreamReader::Open(std::move(messages), read_options_);
    if (!reader.ok()) {
      messages_ = nullptr;
      return Finish(reader.status());
    }
    reader_ = std::move(*reader);
    schema_ = reader_->schema();
    return arrow::Status::OK();
  }

  arrow::Result<std::optional<ResponseBatch>> ReadResponse() {
    if (finished_) {
      ARROW_RETURN_NOT_OK(*finished_);
      return std::nullopt;
    }
    FlightData message;
    while (true) {
      if (!call_->ReadData(&message)) {
        ARROW_RETURN_NOT_OK(Finish(arrow::Status::OK()));
        return std::nullopt;
      }
      if (message.metadata != nullptr || message.app_metadata != nullptr) break;
      Heard();  // an empty message: skipped, but the server is alive
    }
    ResponseBatch batch;
    std::shared_ptr<arrow::Buffer> app_metadata;
    if (message.metadata == nullptr) {
      batch.metadata_only = true;
      app_metadata = std::move(message.app_metadata);
      ARROW_ASSIGN_OR_RAISE(batch.data, arrow::RecordBatch::MakeEmpty(schema_));
    } else {
      messages_->Hold(std::move(message));
      arrow::Status read = reader_->ReadNext(&batch.data);
      if (!read.ok()) return Finish(std::move(read));
      if (batch.data == nullptr) {
        // The IPC stream ended (an end-of-stream marker, or a dictionary last).
        ARROW_RETURN_NOT_OK(Finish(arrow::Status::OK()));
        return std::nullopt;
      }
      app_metadata = messages_->TakeAppMetadata();
    }
    if (app_metadata != nullptr) {
      batch.has_metadata = true;
      ARROW_ASSIGN_OR_RAISE(batch.metadata,
                            ParseBatchMetadata(std::string_view(*app_metadata)));
    }
    return batch;
  }

  const std::shared_ptr<flight::internal::ClientTransport> transport_;
  const std::unique_ptr<ClientDataStream> call_;
  const arrow::ipc::IpcReadOptions read_options_;
  std::shared_ptr<arrow::Schema> schema_;
  const std::chrono::milliseconds idle_timeout_;
  std::atomic<bool> cancelled_{false};
  std::optional<arrow::Status> finished_;
  std::shared_ptr<arrow::ipc::RecordBatchReader> reader_;
  CallMessageReader* messages_ = nullptr;  // owned by reader_
  std::unique_ptr<CallWatchdog> watchdog_;
};

}  // namespace

arrow::Result<std::unique_ptr<QueryStream>> StartFlightQueryStream(
    std::shared_ptr<flight::internal::ClientTransport> transport,
    const flight::FlightCallOptions& call, const flight::Ticket& ticket,
    std::shared_ptr<arrow::Schema> planned, std::chrono::milliseconds idle_timeout,
    const std::atomic<bool>* stop) {
  std::unique_ptr<ClientDataStream> started;
  arrow::Status status = transport->DoGet(call, ticket, &started);
  if (!status.ok()) return ServerError(status, "DoGet");
  auto stream = std::make_unique<FlightQueryStream>(
      std::move(transport), std::move(started), call.read_options, std::move(planned),
      idle_timeout, stop);
  // A batch read waits for the server's first message here, within its idle timeout.
  if (idle_timeout.count() > 0) ARROW_RETURN_NOT_OK(stream->Open());
  return stream;
}

}  // namespace ampdelta::amp

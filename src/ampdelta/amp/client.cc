#include "ampdelta/amp/client.h"

#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include <arrow/flight/api.h>
#include <arrow/ipc/api.h>
#include <arrow/record_batch.h>

#include "ampdelta/amp/flight_sql_command.h"
#include "ampdelta/amp/server_error.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/status.h"

namespace ampdelta::amp {
namespace {

namespace flight = arrow::flight;

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

// Cancels a call that waits longer than a timeout for its next message. Thread-safe.
class IdleWatchdog {
 public:
  IdleWatchdog(std::chrono::milliseconds timeout, std::function<void()> cancel)
      : timeout_(timeout), cancel_(std::move(cancel)), thread_([this] { Watch(); }) {}
  ~IdleWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  // Start timing a wait; Disarm() ends it and returns true when the watchdog cancelled
  // it.
  void Arm() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_ = true;
      since_ = WatchClock::now();
    }
    changed_.notify_all();
  }
  bool Disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_ = false;
    return fired_;
  }

 private:
  void Watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (!waiting_ || fired_) {
        changed_.wait(lock);
        continue;
      }
      const auto deadline = since_ + timeout_;
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && waiting_ &&
          WatchClock::now() >= since_ + timeout_) {
        fired_ = true;
        lock.unlock();
        cancel_();
        lock.lock();
      }
    }
  }

  const std::chrono::milliseconds timeout_;
  const std::function<void()> cancel_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool waiting_ = false;
  bool fired_ = false;
  bool stop_ = false;
  WatchClock::time_point since_;
  std::thread thread_;
};

// DoGet runs on its own thread: the Flight client blocks in DoGet until the server sends
// its first message (ampd sends nothing, not even the schema, before a stream's first
// microbatch), and such a call cannot be cancelled before it returns a reader. Waiting on
// the thread instead lets Next() time out and Cancel() return at once; a call still
// blocked then is abandoned to the thread, which cancels it as soon as it returns.
struct PendingDoGet {
  // Declared first, destroyed last: the client outlives the reader it made.
  std::shared_ptr<flight::FlightClient> client;
  std::mutex mutex;
  std::condition_variable ready;
  bool done = false;
  bool abandoned = false;
  arrow::Status status;
  std::unique_ptr<flight::FlightStreamReader> reader;
  std::shared_ptr<arrow::Schema> schema;
};

class FlightQueryStream : public QueryStream {
 public:
  FlightQueryStream(std::shared_ptr<flight::FlightClient> client,
                    flight::FlightCallOptions call, flight::Ticket ticket,
                    std::shared_ptr<arrow::Schema> planned,
                    std::chrono::milliseconds idle_timeout)
      : pending_(std::make_shared<PendingDoGet>()),
        schema_(std::move(planned)),
        idle_timeout_(idle_timeout) {
    pending_->client = std::move(client);
    std::thread([pending = pending_, call = std::move(call), ticket = std::move(ticket)] {
      auto reader = pending->client->DoGet(call, ticket);
      std::shared_ptr<arrow::Schema> schema;
      if (reader.ok()) {
        auto read = (*reader)->GetSchema();
        if (read.ok()) schema = *read;
      }
      std::lock_guard<std::mutex> lock(pending->mutex);
      if (!reader.ok()) {
        pending->status = ServerError(reader.status(), "DoGet");
      } else if (pending->abandoned) {
        (*reader)->Cancel();
      } else {
        pending->reader = std::move(*reader);
        pending->schema = std::move(schema);
      }
      pending->done = true;
      pending->ready.notify_all();
    }).detach();
  }

  ~FlightQueryStream() override {
    watchdog_.reset();
    std::lock_guard<std::mutex> lock(pending_->mutex);
    pending_->abandoned = true;
    if (pending_->reader) pending_->reader->Cancel();
  }

  // Wait until DoGet returned (up to `timeout` when positive); false on timeout.
  bool WaitOpen(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(pending_->mutex);
    auto opened = [&] { return pending_->done || cancelled_; };
    if (timeout.count() <= 0) {
      pending_->ready.wait(lock, opened);
      return true;
    }
    return pending_->ready.wait_for(lock, timeout, opened);
  }

  const std::shared_ptr<arrow::Schema>& schema() const override { return schema_; }

  arrow::Result<std::optional<ResponseBatch>> Next() override {
    if (reader_ == nullptr) ARROW_RETURN_NOT_OK(Open());
    if (watchdog_) watchdog_->Arm();
    auto chunk = reader_->Next();
    if (watchdog_ && watchdog_->Disarm()) return Stalled(idle_timeout_);
    if (!chunk.ok()) return ServerError(chunk.status(), "DoGet");
    flight::FlightStreamChunk& value = *chunk;
    if (value.data == nullptr && value.app_metadata == nullptr) return std::nullopt;
    ResponseBatch batch;
    if (value.app_metadata != nullptr) {
      batch.has_metadata = true;
      ARROW_ASSIGN_OR_RAISE(batch.metadata,
                            ParseBatchMetadata(std::string_view(*value.app_metadata)));
    }
    if (value.data != nullptr) {
      batch.data = std::move(value.data);
    } else {
      batch.metadata_only = true;
      ARROW_ASSIGN_OR_RAISE(batch.data, arrow::RecordBatch::MakeEmpty(schema_));
    }
    return batch;
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(pending_->mutex);
    cancelled_ = true;
    pending_->ready.notify_all();
    if (pending_->reader) pending_->reader->Cancel();
  }

  // Take the reader from the DoGet thread (waiting for it, within the idle timeout).
  arrow::Status Open() {
    if (!WaitOpen(idle_timeout_)) return Stalled(idle_timeout_);
    std::lock_guard<std::mutex> lock(pending_->mutex);
    if (!pending_->done) {
      return MakeError(ErrorCode::kServerError, arrow::StatusCode::Cancelled,
                       "DoGet failed: CANCELLED: the query was cancelled")
          .WithDetail(
              std::make_shared<ErrorDetail>(ErrorCode::kServerError, "CANCELLED"));
    }
    ARROW_RETURN_NOT_OK(pending_->status);
    if (pending_->reader == nullptr) return ProtocolError("DoGet returned no stream");
    // The reader stays owned by the shared state, so Cancel() can reach it from any
    // thread.
    reader_ = pending_->reader.get();
    if (pending_->schema != nullptr) schema_ = pending_->schema;
    if (idle_timeout_.count() > 0) {
      watchdog_ = std::make_unique<IdleWatchdog>(idle_timeout_, [this] { Cancel(); });
    }
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<PendingDoGet> pending_;
  flight::FlightStreamReader* reader_ = nullptr;
  std::shared_ptr<arrow::Schema> schema_;
  const std::chrono::milliseconds idle_timeout_;
  bool cancelled_ = false;  // guarded by pending_->mutex
  std::unique_ptr<IdleWatchdog> watchdog_;
};

class FlightClientImpl : public Client {
 public:
  FlightClientImpl(std::string url, std::shared_ptr<flight::FlightClient> client,
                   ClientOptions options, std::optional<std::string> token)
      : url_(std::move(url)),
        client_(std::move(client)),
        options_(std::move(options)),
        token_(std::move(token)) {}

  arrow::Result<std::unique_ptr<QueryStream>> Query(
      const std::string& sql, const QueryOptions& options) override {
    ARROW_ASSIGN_OR_RAISE(std::unique_ptr<flight::FlightInfo> info, Plan(sql, options));
    if (info->endpoints().empty()) {
      return ProtocolError("GetFlightInfo returned no endpoint for the query");
    }
    // The ticket is redeemed on this connection: Amp returns endpoints without locations.
    // The schema comes from the plan, so a stream exists before the server sends
    // anything.
    arrow::ipc::DictionaryMemo memo;
    auto planned = info->GetSchema(&memo);
    if (!planned.ok()) {
      return ProtocolError("GetFlightInfo returned an unreadable schema: ",
                           planned.status().message());
    }
    auto stream = std::make_unique<FlightQueryStream>(
        client_, BaseCallOptions(), info->endpoints().front().ticket, std::move(*planned),
        options.idle_timeout);
    // A batch read waits for the server's first message here, within its idle timeout.
    if (options.idle_timeout.count() > 0) ARROW_RETURN_NOT_OK(stream->Open());
    return stream;
  }

  arrow::Result<std::shared_ptr<arrow::Schema>> GetSchema(
      const std::string& sql, const QueryOptions& options) override {
    ARROW_ASSIGN_OR_RAISE(std::unique_ptr<flight::FlightInfo> info, Plan(sql, options));
    arrow::ipc::DictionaryMemo memo;
    auto schema = info->GetSchema(&memo);
    if (!schema.ok()) {
      return ProtocolError("GetFlightInfo returned an unreadable schema: ",
                           schema.status().message());
    }
    return *schema;
  }

  const std::string& url() const override { return url_; }

 private:
  flight::FlightCallOptions BaseCallOptions() const {
    flight::FlightCallOptions call;
    // gRPC hands out message slices at arbitrary offsets; realign buffers whose type
    // needs it rather than reading misaligned values.
    call.read_options.ensure_alignment =
        arrow::ipc::Alignment::kDataTypeSpecificAlignment;
    if (token_) call.headers.emplace_back("authorization", "Bearer " + *token_);
    return call;
  }

  arrow::Result<std::unique_ptr<flight::FlightInfo>> Plan(const std::string& sql,
                                                          const QueryOptions& options) {
    if (options.resume) {
      // ampd drops a cursor it cannot deserialise (a hash that is not 32 bytes) and
      // streams from its earliest block: a resumed load would take that for a reorg of
      // everything.
      for (const auto& [network, entry] : *options.resume) {
        const std::string& hash = entry.hash;
        const bool valid =
            hash.size() == 66 && hash.rfind("0x", 0) == 0 &&
            hash.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos;
        if (!valid) {
          return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                           "resume cursor for network '", network, "' at block ",
                           entry.number, " has no 32-byte block hash ('", hash,
                           "'): Amp would ignore it");
        }
      }
    }
    flight::FlightCallOptions call = BaseCallOptions();
    call.timeout = std::chrono::duration<double>(options_.plan_timeout);
    if (options.stream)
      call.headers.emplace_back("amp-stream", *options.stream ? "true" : "false");
    if (options.resume)
      call.headers.emplace_back("amp-resume", CursorToJson(*options.resume));
    const auto descriptor =
        flight::FlightDescriptor::Command(EncodeStatementQueryCommand(sql));
    AMPDELTA_LOG_DEBUG(
        "amp query url=", url_,
        " stream=", options.stream ? (*options.stream ? "true" : "false") : "sql",
        " resume=", options.resume ? CursorToJson(*options.resume) : "none");
    auto info = client_->GetFlightInfo(call, descriptor);
    if (!info.ok()) return ServerError(info.status(), "GetFlightInfo");
    return std::move(*info);
  }

  std::string url_;
  std::shared_ptr<flight::FlightClient> client_;
  ClientOptions options_;
  std::optional<std::string> token_;
};

}  // namespace

arrow::Result<std::unique_ptr<Client>> Client::Connect(const std::string& url,
                                                       const ClientOptions& options) {
  // Messages show the URL without its user-info: it may hold a password.
  const std::string shown = RedactUrl(url);
  if (url.rfind("grpc://", 0) != 0 && url.rfind("grpc+tls://", 0) != 0 &&
      url.rfind("grpc+tcp://", 0) != 0) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "Amp server URL must start with grpc:// or grpc+tls://: '", shown,
                     "'");
  }
  {
    const size_t begin = url.find("://") + 3;
    std::string authority = url.substr(begin, url.find_first_of("/?#", begin) - begin);
    authority = authority.substr(
        authority.rfind('@') == std::string::npos ? 0 : authority.rfind('@') + 1);
    if (authority.empty() || authority.front() == ':') {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "invalid Amp server URL '", shown, "': it names no host");
    }
  }
  auto location = flight::Location::Parse(url);
  if (!location.ok()) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "invalid Amp server URL '", shown,
                     "': ", RedactUrlIn(location.status().message(), url));
  }
  flight::FlightClientOptions flight_options = flight::FlightClientOptions::Defaults();
  flight_options.generic_options.emplace_back("grpc.max_receive_message_length",
                                              options.max_receive_message_bytes);
  flight_options.tls_root_certs = options.tls_root_certs;
  flight_options.disable_server_verification = options.disable_server_verification;
  auto client = flight::FlightClient::Connect(*location, flight_options);
  if (!client.ok()) return ServerError(client.status(), "connect");

  std::optional<std::string> token = options.auth_token;
  if (!token) {
    const char* env = std::getenv("AMP_AUTH_TOKEN");
    if (env != nullptr && *env != '\0') token = std::string(env);
  }
  return std::make_unique<FlightClientImpl>(shown, std::move(*client), options,
                                            std::move(token));
}

}  // namespace ampdelta::amp

#include "ampdelta/amp/client.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <arrow/flight/api.h>
#include <arrow/flight/transport.h>
#include <arrow/flight/types_async.h>
#include <arrow/ipc/api.h>
#include <arrow/record_batch.h>
#include <arrow/util/uri.h>

#include "ampdelta/amp/flight_query_stream.h"
#include "ampdelta/amp/flight_sql_command.h"
#include "ampdelta/amp/server_error.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/status.h"

// Arrow exports this idempotent registration of its gRPC client transport, which
// FlightClient::Connect calls, but installs no header that declares it.
namespace arrow::flight::transport::grpc {
ARROW_FLIGHT_EXPORT void InitializeFlightGrpcClient();
}  // namespace arrow::flight::transport::grpc

namespace ampdelta::amp {
namespace {

namespace flight = arrow::flight;

// Connect as FlightClient::Connect does, but keep the transport: its DoGet returns a
// call that can be cancelled before the server's first message (flight_query_stream.h).
arrow::Result<std::shared_ptr<flight::internal::ClientTransport>> ConnectTransport(
    const flight::Location& location, const flight::FlightClientOptions& options) {
  flight::transport::grpc::InitializeFlightGrpcClient();
  ARROW_ASSIGN_OR_RAISE(
      std::unique_ptr<flight::internal::ClientTransport> made,
      flight::internal::GetDefaultTransportRegistry()->MakeClient(location.scheme()));
  ARROW_ASSIGN_OR_RAISE(arrow::util::Uri uri,
                        arrow::util::Uri::FromString(location.ToString()));
  ARROW_RETURN_NOT_OK(made->Init(options, location, uri));
  return std::shared_ptr<flight::internal::ClientTransport>(
      made.release(), [](flight::internal::ClientTransport* transport) {
        // Close() only releases the channel; nothing useful can be done on failure.
        (void)transport->Close();
        delete transport;
      });
}

class FlightClientImpl : public Client {
 public:
  FlightClientImpl(std::string url,
                   std::shared_ptr<flight::internal::ClientTransport> transport,
                   ClientOptions options, std::optional<std::string> token)
      : url_(std::move(url)),
        transport_(std::move(transport)),
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
    return StartFlightQueryStream(transport_, BaseCallOptions(),
                                  info->endpoints().front().ticket, std::move(*planned),
                                  options.idle_timeout,
                                  options.stop_cancels_reads ? options.stop : nullptr);
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
          return InvalidInputError("resume cursor for network '", network, "' at block ",
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
    // Neither user-info nor a query string (which may carry a key) reaches the log.
    AMPDELTA_LOG_DEBUG(
        "amp query url=", RedactUrl(url_.substr(0, url_.find('?'))),
        " stream=", options.stream ? (*options.stream ? "true" : "false") : "sql",
        " resume=", options.resume ? CursorToJson(*options.resume) : "none");
    ARROW_ASSIGN_OR_RAISE(auto info, GetFlightInfo(call, descriptor, options.stop));
    return info;
  }

  // GetFlightInfo as an asynchronous call, waited for in slices so that `stop` can
  // cancel it; the blocking call where the transport has no asynchronous one.
  arrow::Result<std::unique_ptr<flight::FlightInfo>> GetFlightInfo(
      const flight::FlightCallOptions& call, const flight::FlightDescriptor& descriptor,
      const std::atomic<bool>* stop) {
    struct Listener : flight::AsyncListener<flight::FlightInfo> {
      std::mutex mutex;
      std::condition_variable done;
      std::optional<arrow::Status> status;
      std::unique_ptr<flight::FlightInfo> info;
      void OnNext(flight::FlightInfo message) override {
        std::lock_guard<std::mutex> lock(mutex);
        info = std::make_unique<flight::FlightInfo>(std::move(message));
      }
      void OnFinish(arrow::Status finished) override {
        std::lock_guard<std::mutex> lock(mutex);
        status = std::move(finished);
        done.notify_all();
      }
    };
    auto listener = std::make_shared<Listener>();
    transport_->GetFlightInfoAsync(call, descriptor, listener);
    bool cancelled = false;
    std::unique_lock<std::mutex> lock(listener->mutex);
    while (!listener->status) {
      listener->done.wait_for(lock, std::chrono::milliseconds(50));
      if (!cancelled && stop != nullptr && stop->load()) {
        cancelled = true;
        lock.unlock();
        listener->TryCancel();
        lock.lock();
      }
    }
    const arrow::Status status = *listener->status;
    if (status.IsNotImplemented() && !listener->info && !cancelled) {
      lock.unlock();
      std::unique_ptr<flight::FlightInfo> info;
      arrow::Status got = transport_->GetFlightInfo(call, descriptor, &info);
      if (!got.ok()) return ServerError(got, "GetFlightInfo");
      return info;
    }
    if (cancelled) {
      return arrow::Status::Cancelled("stopped while the Amp server planned the query");
    }
    if (!status.ok()) return ServerError(status, "GetFlightInfo");
    if (!listener->info) return ProtocolError("GetFlightInfo returned no FlightInfo");
    return std::move(listener->info);
  }

  std::string url_;
  // Shared with the streams it started, which may outlive the client.
  std::shared_ptr<flight::internal::ClientTransport> transport_;
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
    return InvalidInputError("Amp server URL must start with grpc:// or grpc+tls://: '",
                             shown, "'");
  }
  {
    const size_t begin = url.find("://") + 3;
    std::string authority = url.substr(begin, url.find_first_of("/?#", begin) - begin);
    authority = authority.substr(
        authority.rfind('@') == std::string::npos ? 0 : authority.rfind('@') + 1);
    if (authority.empty() || authority.front() == ':') {
      return InvalidInputError("invalid Amp server URL '", shown, "': it names no host");
    }
  }
  auto location = flight::Location::Parse(url);
  if (!location.ok()) {
    return InvalidInputError("invalid Amp server URL '", shown,
                             "': ", RedactUrlIn(location.status().message(), url));
  }
  flight::FlightClientOptions flight_options = flight::FlightClientOptions::Defaults();
  flight_options.generic_options.emplace_back("grpc.max_receive_message_length",
                                              options.max_receive_message_bytes);
  flight_options.tls_root_certs = options.tls_root_certs;
  flight_options.disable_server_verification = options.disable_server_verification;
  auto transport = ConnectTransport(*location, flight_options);
  if (!transport.ok()) return ServerError(transport.status(), "connect");

  std::optional<std::string> token = options.auth_token;
  if (!token) {
    const char* env = std::getenv("AMP_AUTH_TOKEN");
    if (env != nullptr && *env != '\0') token = std::string(env);
  }
  return std::make_unique<FlightClientImpl>(shown, std::move(*transport), options,
                                            std::move(token));
}

}  // namespace ampdelta::amp

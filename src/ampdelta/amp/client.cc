#include "ampdelta/amp/client.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include <arrow/flight/api.h>
#include <arrow/ipc/api.h>
#include <arrow/record_batch.h>

#include "ampdelta/amp/flight_sql_command.h"
#include "ampdelta/amp/server_error.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::amp {
namespace {

namespace flight = arrow::flight;

class FlightQueryStream : public QueryStream {
 public:
  FlightQueryStream(std::unique_ptr<flight::FlightStreamReader> reader,
                    std::shared_ptr<arrow::Schema> schema)
      : reader_(std::move(reader)), schema_(std::move(schema)) {}

  const std::shared_ptr<arrow::Schema>& schema() const override { return schema_; }

  arrow::Result<std::optional<ResponseBatch>> Next() override {
    auto chunk = reader_->Next();
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

  void Cancel() override { reader_->Cancel(); }

 private:
  std::unique_ptr<flight::FlightStreamReader> reader_;
  std::shared_ptr<arrow::Schema> schema_;
};

class FlightClientImpl : public Client {
 public:
  FlightClientImpl(std::string url, std::unique_ptr<flight::FlightClient> client,
                   ClientOptions options, std::optional<std::string> token)
      : url_(std::move(url)),
        client_(std::move(client)),
        options_(std::move(options)),
        token_(std::move(token)) {}

  arrow::Result<std::unique_ptr<QueryStream>> Query(const std::string& sql,
                                                    const QueryOptions& options) override {
    ARROW_ASSIGN_OR_RAISE(std::unique_ptr<flight::FlightInfo> info, Plan(sql, options));
    if (info->endpoints().empty()) {
      return ProtocolError("GetFlightInfo returned no endpoint for the query");
    }
    // The ticket is redeemed on this connection: Amp returns endpoints without locations.
    flight::FlightCallOptions call = BaseCallOptions();
    auto reader = client_->DoGet(call, info->endpoints().front().ticket);
    if (!reader.ok()) return ServerError(reader.status(), "DoGet");
    auto schema = (*reader)->GetSchema();
    if (!schema.ok()) return ServerError(schema.status(), "DoGet");
    return std::make_unique<FlightQueryStream>(std::move(*reader), std::move(*schema));
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
    // gRPC hands out message slices at arbitrary offsets; realign buffers whose type needs
    // it rather than reading misaligned values.
    call.read_options.ensure_alignment = arrow::ipc::Alignment::kDataTypeSpecificAlignment;
    if (token_) call.headers.emplace_back("authorization", "Bearer " + *token_);
    return call;
  }

  arrow::Result<std::unique_ptr<flight::FlightInfo>> Plan(const std::string& sql,
                                                          const QueryOptions& options) {
    flight::FlightCallOptions call = BaseCallOptions();
    call.timeout = std::chrono::duration<double>(options_.plan_timeout);
    if (options.stream) call.headers.emplace_back("amp-stream", *options.stream ? "true" : "false");
    if (options.resume) call.headers.emplace_back("amp-resume", CursorToJson(*options.resume));
    const auto descriptor = flight::FlightDescriptor::Command(EncodeStatementQueryCommand(sql));
    AMPDELTA_LOG_DEBUG("amp query url=", url_, " stream=",
                       options.stream ? (*options.stream ? "true" : "false") : "sql",
                       " resume=", options.resume ? CursorToJson(*options.resume) : "none");
    auto info = client_->GetFlightInfo(call, descriptor);
    if (!info.ok()) return ServerError(info.status(), "GetFlightInfo");
    return std::move(*info);
  }

  std::string url_;
  std::unique_ptr<flight::FlightClient> client_;
  ClientOptions options_;
  std::optional<std::string> token_;
};

}  // namespace

arrow::Result<std::unique_ptr<Client>> Client::Connect(const std::string& url,
                                                       const ClientOptions& options) {
  if (url.rfind("grpc://", 0) != 0 && url.rfind("grpc+tls://", 0) != 0 &&
      url.rfind("grpc+tcp://", 0) != 0) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "Amp server URL must start with grpc:// or grpc+tls://: '", url, "'");
  }
  auto location = flight::Location::Parse(url);
  if (!location.ok()) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "invalid Amp server URL '", url, "': ", location.status().message());
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
  return std::make_unique<FlightClientImpl>(url, std::move(*client), options,
                                            std::move(token));
}

}  // namespace ampdelta::amp

#include "ampdelta/loader/client/client.h"

#include <nlohmann/json.hpp>

#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/util/status.h"

namespace ampdelta {

Client::Client(std::string url, amp::ClientOptions options)
    : url_(std::move(url)), options_(std::move(options)) {}

Client::~Client() = default;

arrow::Status Client::ConfigureConnection(const std::string& name,
                                          const std::string& loader,
                                          const std::string& config_json) {
  if (loader != "deltalake") {
    return InvalidInputError("unknown loader '", loader,
                             "' (ampdelta provides 'deltalake')");
  }
  ARROW_RETURN_NOT_OK(loader::ParseDeltaLakeConfig(config_json).status());
  connections_[name] = config_json;
  return arrow::Status::OK();
}

arrow::Status Client::ConfigureConnection(
    const std::string& name, const std::string& loader,
    const std::map<std::string, std::string>& config) {
  nlohmann::json doc = nlohmann::json::object();
  for (const auto& [key, value] : config) {
    nlohmann::json literal = json_util::ParseJson(value);
    doc[key] =
        literal.is_discarded() || literal.is_string() ? nlohmann::json(value) : literal;
  }
  ARROW_ASSIGN_OR_RAISE(std::string text,
                        json_util::DumpJson(doc, "the connection configuration"));
  return ConfigureConnection(name, loader, text);
}

arrow::Result<amp::Client*> Client::Connection() const {
  if (client_ == nullptr) {
    // Loads need Arrow's compute kernels registered; a program using the C++ API need not
    // know that (InitializeRuntime is idempotent).
    ARROW_RETURN_NOT_OK(InitializeRuntime());
    ARROW_ASSIGN_OR_RAISE(client_, amp::Client::Connect(url_, options_));
  }
  return client_.get();
}

loader::LoadResult QueryBuilder::Load(const loader::LoadOptions& options) const {
  loader::LoadResult failed;
  failed.table_name = options.destination;
  auto connection = client_->connections_.find(options.connection);
  if (connection == client_->connections_.end()) {
    failed.error =
        "unknown connection '" + options.connection + "' (use ConfigureConnection first)";
    return failed;
  }
  auto config = loader::ParseDeltaLakeConfig(connection->second);
  if (!config.ok()) {
    failed.error = config.status().message();
    return failed;
  }
  auto amp = client_->Connection();
  if (!amp.ok()) {
    failed.error = amp.status().message();
    return failed;
  }
  return loader::LoadBatch(**amp, sql_, *config, options);
}

}  // namespace ampdelta

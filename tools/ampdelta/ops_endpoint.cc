#include "ops_endpoint.h"

#include <microhttpd.h>
#include <netdb.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <arpa/inet.h>
#include <sys/socket.h>

#include "ampdelta/util/logging.h"
#include "ampdelta/util/metrics.h"
#include "ampdelta/util/status.h"

namespace ampdelta::cli {

struct OpsEndpoint::Impl {
  Options options;
  std::string host;
  MHD_Daemon* daemon = nullptr;
  uint16_t port = 0;
};

namespace {

double NowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

MHD_Result Reply(MHD_Connection* connection, unsigned int code, const std::string& body,
                 const char* content_type) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, "Content-Type", content_type);
  const MHD_Result queued = MHD_queue_response(connection, code, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result Handle(void* context, MHD_Connection* connection, const char* url,
                  const char* method, const char* /*version*/, const char* /*upload*/,
                  size_t* /*upload_size*/, void** /*request*/) {
  const auto* impl = static_cast<const OpsEndpoint::Impl*>(context);
  constexpr const char* kText = "text/plain; charset=utf-8";
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
    return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only\n", kText);
  }
  const std::string path = url;
  if (path == "/metrics") {
    return Reply(connection, MHD_HTTP_OK, metrics::Registry::Default().Render(),
                 "text/plain; version=0.0.4; charset=utf-8");
  }
  if (path == "/healthz") return Reply(connection, MHD_HTTP_OK, "ok\n", kText);
  if (path == "/readyz") {
    std::string reason;
    if (LoadIsReady(NowSeconds(), impl->options.ready_max_age, &reason)) {
      return Reply(connection, MHD_HTTP_OK, "ready\n", kText);
    }
    return Reply(connection, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: " + reason + "\n",
                 kText);
  }
  return Reply(connection, MHD_HTTP_NOT_FOUND,
               "not found: " + path + " (try /metrics, /healthz, /readyz)\n", kText);
}

// libmicrohttpd's own diagnostics (a client's malformed request, a failed accept) go to
// the log at debug level: a client must not be able to write lines into stderr. The
// format attribute says `format` is libmicrohttpd's printf format, so clang checks the
// call.
__attribute__((format(printf, 2, 0))) void LogHttpdMessage(void* /*context*/,
                                                           const char* format,
                                                           va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof(text), format, args);
  std::string message = text;
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
    message.pop_back();
  }
  log::Event(log::Level::kDebug, "http", {{"message", message}});
}

arrow::Status BadAddress(const std::string& address, const std::string& why) {
  return InvalidInputError("--metrics-addr '", address, "': ", why,
                           " (expected HOST:PORT, e.g. 127.0.0.1:9464)");
}

}  // namespace

bool LoadIsReady(double now, std::chrono::milliseconds max_age, std::string* reason) {
  const auto& registry = metrics::Registry::Default();
  if (registry.Value("ampdelta_connected") < 1) {
    *reason = "not connected to the Amp server";
    return false;
  }
  const double last = std::max(registry.Value("ampdelta_last_commit_timestamp_seconds"),
                               registry.Value("ampdelta_last_message_timestamp_seconds"));
  const double age = now - last;
  if (max_age.count() > 0 && age > std::chrono::duration<double>(max_age).count()) {
    *reason = "nothing committed or heard from the server for " +
              std::to_string(static_cast<int64_t>(age)) + " s";
    return false;
  }
  return true;
}

arrow::Result<std::unique_ptr<OpsEndpoint>> OpsEndpoint::Start(const Options& options) {
  const std::string& address = options.address;
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return BadAddress(address, "no host or port");
  }
  std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535) {
    return BadAddress(address, "the port is not a number from 0 to 65535");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found);
      rc != 0 || found == nullptr) {
    return BadAddress(address,
                      std::string("cannot resolve the host: ") + gai_strerror(rc));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->host = host;
  // poll(), not select(): a descriptor above FD_SETSIZE (a process with many files open)
  // must not make the endpoint unreachable. Few connections, fewer per client, so that
  // clients that never finish a request cannot keep the probes out.
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
  if (found->ai_family == AF_INET6) {
    flags |= MHD_USE_IPv6;
    // `[::]:port` listens for IPv4 too, as `0.0.0.0` would.
    if (IN6_IS_ADDR_UNSPECIFIED(
            &reinterpret_cast<const sockaddr_in6*>(found->ai_addr)->sin6_addr)) {
      flags |= MHD_USE_DUAL_STACK;
    }
  }
  impl->daemon = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &Handle, impl.get(), MHD_OPTION_SOCK_ADDR,
      found->ai_addr, MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_CONNECTION_LIMIT,
      64U, MHD_OPTION_PER_IP_CONNECTION_LIMIT, 16U, MHD_OPTION_EXTERNAL_LOGGER,
      &LogHttpdMessage, nullptr, MHD_OPTION_END);
  ::freeaddrinfo(found);
  if (impl->daemon == nullptr) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::IOError,
                     "--metrics-addr '", address,
                     "': cannot listen there (in use, or not an address of this host)");
  }
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(impl->daemon, MHD_DAEMON_INFO_BIND_PORT);
  impl->port = info != nullptr ? info->port : 0;
  return std::unique_ptr<OpsEndpoint>(new OpsEndpoint(std::move(impl)));
}

OpsEndpoint::OpsEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OpsEndpoint::~OpsEndpoint() {
  if (impl_->daemon != nullptr) MHD_stop_daemon(impl_->daemon);
}

uint16_t OpsEndpoint::port() const { return impl_->port; }

std::string OpsEndpoint::url() const {
  const bool v6 = impl_->host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + impl_->host + "]" : impl_->host) + ":" +
         std::to_string(impl_->port);
}

}  // namespace ampdelta::cli

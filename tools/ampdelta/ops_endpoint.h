#pragma once

// The HTTP endpoint `ampdelta load --metrics-addr HOST:PORT` serves for operators:
//   /metrics  the process's metrics in Prometheus's text format (metrics::Registry);
//   /healthz  200 while the process runs;
//   /readyz   200 while a query is open on the Amp server and the load committed, or
//             heard from the server, within the readiness age; 503 otherwise.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <arrow/result.h>

namespace ampdelta::cli {

/// \brief A running endpoint; destroying it stops it. Thread-safe.
class OpsEndpoint {
 public:
  struct Options {
    /// `HOST:PORT` (`[::1]:9464` for IPv6); port 0 picks a free one.
    std::string address;
    /// Longest time since the last commit or server message that still counts as ready
    /// (zero: a connected load is ready, however long it has been quiet).
    std::chrono::milliseconds ready_max_age{std::chrono::minutes(5)};
  };

  /// \brief Listen on `options.address`. Errors: kInvalidInput (a malformed address),
  /// IOError (the address cannot be bound).
  static arrow::Result<std::unique_ptr<OpsEndpoint>> Start(const Options& options);
  ~OpsEndpoint();
  OpsEndpoint(const OpsEndpoint&) = delete;
  OpsEndpoint& operator=(const OpsEndpoint&) = delete;

  /// \brief Return the bound port.
  uint16_t port() const;
  /// \brief Return the base URL (`http://HOST:PORT`).
  std::string url() const;

  struct Impl;

 private:
  explicit OpsEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// \brief Return whether the load is ready, and why not: connected to the server, and
/// (unless `max_age` is zero) the last commit or server message no older than `max_age`
/// at `now` (unix seconds).
bool LoadIsReady(double now, std::chrono::milliseconds max_age, std::string* reason);

}  // namespace ampdelta::cli

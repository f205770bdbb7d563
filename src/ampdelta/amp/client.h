#pragma once

/// \file client.h
/// \brief Flight client for Amp: run a SQL query and read record batches together with
/// their block-range metadata.
///
/// The call sequence is Amp's: GetFlightInfo with a CMD descriptor holding an Any-packed
/// `CommandStatementQuery`, then DoGet on the first endpoint's ticket over the same
/// connection (amp-protocol.md §1.1).

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/amp/query_stream.h"

namespace ampdelta::amp {

/// \brief Connection options.
struct ClientOptions {
  /// Bearer token; when unset, the `AMP_AUTH_TOKEN` environment variable is used.
  std::optional<std::string> auth_token;
  /// Largest gRPC message accepted; Amp sends up to ~2 MiB slices, big rows can exceed
  /// it.
  int max_receive_message_bytes = 256 * 1024 * 1024;
  /// PEM root certificates for `grpc+tls://`; empty uses the system roots.
  std::string tls_root_certs;
  /// Skip TLS certificate verification (development only).
  bool disable_server_verification = false;
  /// Deadline for GetFlightInfo (planning); DoGet streams have no deadline (see
  /// QueryOptions::idle_timeout).
  std::chrono::milliseconds plan_timeout{std::chrono::minutes(5)};
};

/// \brief Per-query options.
struct QueryOptions {
  /// Sends `amp-stream: true` (stream) or `false` (batch); unset leaves it to the SQL's
  /// `SETTINGS stream = true`.
  std::optional<bool> stream;
  /// Resume after this cursor (`amp-resume`); streaming queries only.
  std::optional<Cursor> resume;
  /// Cancel the call when the server sends nothing for this long once DoGet started (a
  /// stalled server); Next() then fails with kServerError/DEADLINE_EXCEEDED. Zero waits
  /// forever (streams, whose server may rightly be quiet between blocks).
  std::chrono::milliseconds idle_timeout{0};
  /// When this turns true while the server plans the query (GetFlightInfo, which may
  /// take up to ClientOptions::plan_timeout), the call is cancelled and Query() fails
  /// with arrow::StatusCode::Cancelled (a Ctrl-C must not wait for the server).
  const std::atomic<bool>* stop = nullptr;
  /// With this set, `stop` turning true also cancels DoGet while it waits for the
  /// server (its schema or a message; checked every 50 ms), and Next() fails with
  /// arrow::StatusCode::Cancelled: a batch read stops at once even when the server
  /// stalls. A stream leaves it unset, to finish the microbatch it is in.
  bool stop_cancels_reads = false;
};

/// \brief A connection to an Amp server. Thread-safe: several queries may run at once.
class Client {
 public:
  virtual ~Client() = default;

  /// \brief Connect to `grpc://host:port` or `grpc+tls://host:port`.
  static arrow::Result<std::unique_ptr<Client>> Connect(
      const std::string& url, const ClientOptions& options = {});

  /// \brief Plan `sql` and open its result stream.
  virtual arrow::Result<std::unique_ptr<QueryStream>> Query(
      const std::string& sql, const QueryOptions& options = {}) = 0;

  /// \brief Plan `sql` and return its result schema without reading data.
  virtual arrow::Result<std::shared_ptr<arrow::Schema>> GetSchema(
      const std::string& sql, const QueryOptions& options = {}) = 0;

  /// \brief Return the URL this client connected to, user-info replaced by `***`.
  virtual const std::string& url() const = 0;
};

}  // namespace ampdelta::amp

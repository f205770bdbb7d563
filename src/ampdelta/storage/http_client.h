#pragma once

/// \file http_client.h
/// \brief A small libcurl-based HTTP client for the cloud object stores, with the retry
/// loop they share.
///
/// libcurl is Debian's GnuTLS build: the Arrow SDK's libparquet exports a bundled
/// OpenSSL, and an OpenSSL-based libcurl in the same process could have its TLS calls
/// bound to that copy.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/util/backoff.h"

namespace ampdelta::storage {

/// \brief One HTTP request, kept in parts so signers can canonicalise it.
struct HttpRequest {
  std::string method = "GET";
  /// Scheme and authority, e.g. `https://bucket.s3.us-east-1.amazonaws.com`.
  std::string origin;
  /// The path as sent: already percent-encoded, starting with `/`.
  std::string path = "/";
  /// Query parameters, not encoded (the client encodes them).
  std::vector<std::pair<std::string, std::string>> query;
  /// Header names as given; signers add theirs.
  std::vector<std::pair<std::string, std::string>> headers;
  /// Request body (PUT/POST); null for none.
  std::shared_ptr<arrow::Buffer> body;

  /// \brief Return the value of a header (case-insensitive), or "".
  std::string Header(const std::string& name) const;
  /// \brief Set (replace) a header.
  void SetHeader(const std::string& name, std::string value);
  /// \brief Return the encoded query string (without `?`), parameters in the given order.
  std::string QueryString() const;
  /// \brief Return the full URL.
  std::string Url() const;
  /// \brief Return the URL without its query (safe to show: SAS tokens live in queries).
  std::string DisplayUrl() const { return origin + path; }

  /// \brief Return a request for an absolute URL (origin, encoded path, decoded query).
  static HttpRequest FromUrl(std::string method, const std::string& url);
};

/// \brief Encode fields as `k=v&k2=v2` (a query string or a form body).
std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields);

/// \brief Split a query string (leading `?` allowed) into decoded fields.
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view text);

/// \brief A response; header names are lower-cased.
struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;

  /// \brief Return a header's value, or "".
  std::string Header(const std::string& name) const;
};

/// \brief Percent-encode `text` per RFC 3986 (unreserved characters kept); `/` is kept
/// when `keep_slash`.
std::string UriEncode(std::string_view text, bool keep_slash);

/// \brief Decode %XX escapes (and nothing else).
std::string UriDecode(std::string_view text);

/// \brief Sends requests over pooled libcurl handles (connections are reused).
/// Thread-safe.
class HttpClient {
 public:
  /// \param[in] connect_timeout how long to wait for a TCP/TLS connection
  /// \param[in] stall_timeout a transfer making no progress this long fails
  HttpClient(std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds stall_timeout);
  ~HttpClient();

  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// \brief Send a request. A transport failure (refused connection, timeout, reset) is
  /// an IOError with the subcode "transport"; any HTTP status is a response.
  arrow::Result<HttpResponse> Send(const HttpRequest& request);

 private:
  void* AcquireHandle();
  void ReleaseHandle(void* handle);

  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds stall_timeout_;
  std::mutex mutex_;
  std::vector<void*> idle_;
};

/// \brief When the cloud stores retry a request.
struct RetryPolicy {
  /// Attempts after the first.
  int max_retries = 8;
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  /// How a back-off waits (tests pass a recorder).
  SleepFunction sleep = SleepFor;
  /// Also retry 409 (S3's ConditionalRequestConflict: a concurrent conditional write of
  /// the same key is in flight).
  bool retry_conflict = false;
};

/// \brief What SendWithRetry saw.
struct RetriedResponse {
  HttpResponse response;
  int attempts = 0;
};

/// \brief Return true for statuses worth retrying: 408, 429 and 5xx but 501.
bool IsRetryableStatus(int status);

/// \brief Send `request`, signing each attempt with `sign` (signatures carry timestamps),
/// retrying transport failures and retryable statuses with jittered exponential back-off.
/// The final response is returned whatever its status; only a transport failure on the
/// last attempt is an error.
arrow::Result<RetriedResponse> SendWithRetry(
    HttpClient& client, const HttpRequest& request,
    const std::function<arrow::Status(HttpRequest*)>& sign, const RetryPolicy& policy);

/// \brief Send a request that needs no signature (credential services), with retries.
arrow::Result<RetriedResponse> SendUnsigned(HttpClient& client,
                                            const HttpRequest& request,
                                            int max_retries = 3);

}  // namespace ampdelta::storage

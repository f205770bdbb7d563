#pragma once

/// \file cloud_store.h
/// \brief What the S3, Azure and GCS stores share: key mapping under a root prefix,
/// signed requests with retries, error mapping, random access and streamed uploads.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "ampdelta/storage/cloud_io.h"
#include "ampdelta/storage/http_client.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::storage {

/// \brief A cloud URL split as `scheme://authority/prefix`.
struct CloudUrl {
  /// Lower case.
  std::string scheme;
  /// Bucket or container (with `@account.host` for abfs URLs).
  std::string authority;
  /// The path under it, without slashes at either end.
  std::string prefix;

  /// \brief Split `uri` (which has a `://`).
  static CloudUrl Parse(const std::string& uri);
};

/// \brief Remove every leading and trailing `c`.
std::string TrimChar(std::string text, char c);

/// \brief An invalid storage option or URL (kInvalidInput).
arrow::Status InvalidStoreOption(const std::string& message);

/// \brief Settings every cloud store takes from storage options.
struct CloudSettings {
  RetryPolicy retry;
  /// Streamed objects are uploaded in parts of this size (S3's minimum is 5 MiB).
  int64_t part_size = 16 * 1024 * 1024;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds stall_timeout{30000};

  /// \brief Read AMPDELTA_MAX_RETRIES, AMPDELTA_PART_SIZE_BYTES,
  /// AMPDELTA_CONNECT_TIMEOUT_MS and AMPDELTA_STALL_TIMEOUT_MS from options/environment.
  static arrow::Result<CloudSettings> FromOptions(
      const std::map<std::string, std::string>& options);
};

/// \brief Base of the REST object stores.
class CloudStore : public ObjectStore, public std::enable_shared_from_this<CloudStore> {
 public:
  std::string root_uri() const override { return root_uri_; }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Get(const std::string& path) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> GetRange(const std::string& path,
                                                         int64_t offset,
                                                         int64_t length) override;
  arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenInputFile(
      const std::string& path) override;
  arrow::Result<std::shared_ptr<arrow::io::OutputStream>> OpenOutputStream(
      const std::string& path) override;

 protected:
  /// \param[in] root_uri the table URI, for messages
  /// \param[in] prefix the key prefix under the bucket/container ("" or "a/b", no slashes
  ///   at either end)
  CloudStore(std::string root_uri, std::string prefix, CloudSettings settings);

  /// \brief Return the object key of a store path (prefix joined); rejects absolute paths
  /// and `..` segments.
  arrow::Result<std::string> ObjectKey(const std::string& path) const;
  /// \brief Return the store path of an object key under the prefix.
  std::string StorePath(const std::string& key) const;
  /// \brief Return the key prefix to list for a store-path prefix.
  std::string ListPrefix(const std::string& path_prefix) const;

  /// \brief Send a request, signed by Sign() on every attempt, with retries.
  arrow::Result<RetriedResponse> Send(const HttpRequest& request);

  /// \brief Return the error for a failed response: 404 is kNotFound; everything else an
  /// IOError naming the operation, the object, the status and the provider's error code.
  arrow::Status ResponseError(const std::string& operation, const std::string& path,
                              const HttpResponse& response) const;

  /// \brief Send a GET for `length` bytes (-1: to the end) from `offset`, the range in
  /// header `range_header`; a range past the end (416) is empty.
  arrow::Result<std::shared_ptr<arrow::Buffer>> SendRangedGet(
      HttpRequest request, const std::string& range_header, const std::string& operation,
      const std::string& path, int64_t offset, int64_t length);
  /// \brief Return an object's metadata from a HEAD reply's Content-Length and
  /// Last-Modified.
  static ObjectMeta MetaFromHeaders(const std::string& path,
                                    const HttpResponse& response);
  /// \brief The kPreconditionFailed error of a conditional create the service refused
  /// because the object exists. Whether an earlier attempt of ours made it exist is
  /// for the caller to settle (delta::CreateIfAbsent reads it back).
  arrow::Status RefusedCreate(const std::string& path) const;
  /// \brief The outcome of a DELETE: any 2xx, and 404 (already gone), succeed.
  arrow::Status DeleteOutcome(const std::string& operation, const std::string& path,
                              const HttpResponse& response) const;

  /// \brief Read `length` bytes (-1: to the end) from `offset`; missing objects
  /// kNotFound.
  virtual arrow::Result<std::shared_ptr<arrow::Buffer>> Fetch(const std::string& path,
                                                              int64_t offset,
                                                              int64_t length) = 0;
  /// \brief Begin a multipart upload of `path`.
  virtual arrow::Result<std::unique_ptr<MultipartUpload>> StartMultipart(
      const std::string& path) = 0;
  /// \brief Authorise one attempt of a request (signature, token or SAS).
  virtual arrow::Status Sign(HttpRequest* request) = 0;
  /// \brief Extract the provider's error code and message from an error response body.
  virtual std::pair<std::string, std::string> ProviderError(
      const HttpResponse& response) const = 0;

  /// \brief Return the request with the given method, origin and path set.
  static HttpRequest MakeRequest(std::string method, std::string origin,
                                 std::string path);

  const CloudSettings& settings() const { return settings_; }
  HttpClient& client() { return *client_; }
  const std::shared_ptr<HttpClient>& shared_client() const { return client_; }

 private:
  std::string root_uri_;
  std::string prefix_;
  CloudSettings settings_;
  std::shared_ptr<HttpClient> client_;
};

}  // namespace ampdelta::storage

#pragma once

/// \file s3_store.h
/// \brief Amazon S3 and S3-compatible stores over the REST API, signed with SigV4.
///
/// Create-if-absent is `PutObject` with `If-None-Match: *` (S3 since 2024; MinIO, R2 and
/// others). For stores without it, `AWS_S3_ALLOW_UNSAFE_RENAME=true` falls back to
/// check-then-put, which is only safe with a single writer.

#include <map>
#include <memory>
#include <string>

#include "ampdelta/storage/aws_auth.h"
#include "ampdelta/storage/cloud_store.h"

namespace ampdelta::storage {

/// \brief A store rooted at `s3://bucket/prefix`.
class S3Store : public CloudStore {
 public:
  /// \brief Open `s3://bucket/prefix` (or `s3a://`). Options (storage_options, then the
  /// environment): AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL (custom endpoint,
  /// path-style unless AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true), AWS_ALLOW_HTTP,
  /// AWS_S3_ALLOW_UNSAFE_RENAME, AWS_SKIP_SIGNATURE, and the credential sources of
  /// AwsCredentialProvider.
  static arrow::Result<std::shared_ptr<S3Store>> Make(
      const std::string& uri, const std::map<std::string, std::string>& options);

  arrow::Result<ObjectMeta> Head(const std::string& path) override;
  arrow::Result<std::vector<ObjectMeta>> List(const std::string& prefix,
                                              const std::string& start_after) override;
  arrow::Status Put(const std::string& path, const std::shared_ptr<arrow::Buffer>& data,
                    PutMode mode) override;
  arrow::Status Delete(const std::string& path) override;

  /// \brief Where the credentials come from (for logs; never the secrets).
  std::string credential_source() const;

  /// \brief Constructed by Make().
  S3Store(std::string root_uri, std::string prefix, CloudSettings settings);

 protected:
  arrow::Result<std::shared_ptr<arrow::Buffer>> Fetch(const std::string& path,
                                                      int64_t offset,
                                                      int64_t length) override;
  arrow::Result<std::unique_ptr<MultipartUpload>> StartMultipart(
      const std::string& path) override;
  arrow::Status Sign(HttpRequest* request) override;
  std::pair<std::string, std::string> ProviderError(
      const HttpResponse& response) const override;

 private:
  friend class S3MultipartUpload;

  /// \brief Return a request addressing `key` (object) in the bucket.
  HttpRequest ObjectRequest(std::string method, const std::string& key) const;

  std::string bucket_;
  std::string region_;
  std::string origin_;
  bool path_style_ = true;
  bool allow_unsafe_rename_ = false;
  bool skip_signature_ = false;
  std::shared_ptr<AwsCredentialProvider> credentials_;
};

}  // namespace ampdelta::storage

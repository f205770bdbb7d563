#pragma once

/// \file gcs_store.h
/// \brief Google Cloud Storage over the JSON API. Create-if-absent is an upload with
/// `ifGenerationMatch=0`; streamed objects use resumable uploads.

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ampdelta/storage/cloud_store.h"

namespace ampdelta::storage {

/// \brief OAuth2 access tokens for a service account key or an authorized-user (gcloud)
/// credentials file. Thread-safe.
class GoogleTokenSource {
 public:
  /// \brief Parse a credentials JSON document (`type` service_account or
  /// authorized_user).
  static arrow::Result<std::shared_ptr<GoogleTokenSource>> FromJson(
      const std::string& json, std::shared_ptr<HttpClient> client);

  /// \brief Return a bearer token valid for at least a few more minutes.
  arrow::Result<std::string> Token();

 private:
  arrow::Result<std::string> SignedAssertion(int64_t now_seconds) const;

  std::string type_;
  std::string client_email_;
  std::string private_key_pem_;
  std::string client_id_;
  std::string client_secret_;
  std::string refresh_token_;
  std::string token_uri_;
  std::shared_ptr<HttpClient> client_;
  std::mutex mutex_;
  std::string token_;
  int64_t expires_at_ms_ = 0;
};

/// \brief A store rooted at `gs://bucket/prefix`.
class GcsStore : public CloudStore {
 public:
  /// \brief Open `gs://bucket/prefix` or `gcs://bucket/prefix`. Options (storage_options,
  /// then the environment): GOOGLE_SERVICE_ACCOUNT / GOOGLE_SERVICE_ACCOUNT_PATH /
  /// GOOGLE_APPLICATION_CREDENTIALS (a key file), GOOGLE_SERVICE_ACCOUNT_KEY (the key
  /// JSON itself), GOOGLE_STORAGE_ENDPOINT or STORAGE_EMULATOR_HOST (custom endpoint;
  /// requests are unauthenticated unless credentials are given), GOOGLE_SKIP_SIGNATURE.
  static arrow::Result<std::shared_ptr<GcsStore>> Make(
      const std::string& uri, const std::map<std::string, std::string>& options);

  arrow::Result<ObjectMeta> Head(const std::string& path) override;
  arrow::Result<std::vector<ObjectMeta>> List(const std::string& prefix,
                                              const std::string& start_after) override;
  arrow::Status Put(const std::string& path, const std::shared_ptr<arrow::Buffer>& data,
                    PutMode mode) override;
  arrow::Status Delete(const std::string& path) override;

  /// \brief Constructed by Make().
  GcsStore(std::string root_uri, std::string prefix, CloudSettings settings);

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
  friend class GcsResumableUpload;

  /// \brief Return a request addressing object `key` through the metadata/download API.
  HttpRequest ObjectRequest(std::string method, const std::string& key) const;

  std::string bucket_;
  std::string origin_;
  std::shared_ptr<GoogleTokenSource> tokens_;
};

}  // namespace ampdelta::storage

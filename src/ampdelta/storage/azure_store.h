#pragma once

/// \file azure_store.h
/// \brief Azure Blob Storage / ADLS Gen2 over the Blob REST API, authorised by Shared Key
/// or a SAS token. Create-if-absent is Put Blob with `If-None-Match: *`.

#include <map>
#include <memory>
#include <string>

#include "ampdelta/storage/cloud_store.h"

namespace ampdelta::storage {

/// \brief Return the Shared Key `Authorization` value of a request whose `x-ms-date` and
/// `x-ms-version` headers are set (Blob service, versions 2015-02-21 and later).
///
/// \param[in] key the decoded account key
std::string AzureSharedKeyAuthorization(const HttpRequest& request,
                                        const std::string& account,
                                        const std::string& key);

/// \brief A store rooted at a container and path.
class AzureStore : public CloudStore {
 public:
  /// \brief Open `az://container/path`, `azure://container/path`,
  /// `abfs[s]://container@account.dfs.core.windows.net/path` or
  /// `abfs[s]://container/path`. Options (storage_options, then the environment):
  /// AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_ACCESS_KEY),
  /// AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_ENDPOINT (custom blob endpoint, e.g.
  /// Azurite's `http://127.0.0.1:10000/devstoreaccount1`), AZURE_STORAGE_USE_EMULATOR,
  /// AZURE_ALLOW_HTTP.
  static arrow::Result<std::shared_ptr<AzureStore>> Make(
      const std::string& uri, const std::map<std::string, std::string>& options);

  arrow::Result<ObjectMeta> Head(const std::string& path) override;
  arrow::Result<std::vector<ObjectMeta>> List(const std::string& prefix,
                                              const std::string& start_after) override;
  arrow::Status Put(const std::string& path, const std::shared_ptr<arrow::Buffer>& data,
                    PutMode mode) override;
  arrow::Status Delete(const std::string& path) override;

  /// \brief Constructed by Make().
  AzureStore(std::string root_uri, std::string prefix, CloudSettings settings);

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
  friend class AzureBlockUpload;

  /// \brief Return a request addressing the container (`key` empty) or a blob.
  HttpRequest BlobRequest(std::string method, const std::string& key) const;

  std::string account_;
  /// Decoded Shared Key; empty when a SAS token authorises.
  std::string account_key_;
  std::vector<std::pair<std::string, std::string>> sas_;
  std::string container_;
  std::string origin_;
  /// The endpoint's own path (`/devstoreaccount1` for Azurite), before the container.
  std::string base_path_;
};

}  // namespace ampdelta::storage

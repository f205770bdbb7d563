#include "ampdelta/storage/azure_store.h"

#include <pugixml.hpp>

#include <algorithm>
#include <ctime>

#include <arrow/util/base64.h>

#include "ampdelta/storage/credentials.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/sha256.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

constexpr const char* kApiVersion = "2021-08-06";
// Azurite's built-in account and its published development key.
constexpr const char* kEmulatorAccount = "devstoreaccount1";
constexpr const char* kEmulatorKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
    "KBHBeksoGMGw==";

std::string HttpDate(int64_t seconds) {
  const std::time_t now = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  std::strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &utc);
  return text;
}

std::optional<std::string> FirstOption(const std::map<std::string, std::string>& options,
                                       std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (auto value = LookupOption(options, key)) return value;
  }
  return std::nullopt;
}

// Block ids must all have the same length within a blob.
std::string BlockId(size_t index) {
  char id[32];
  std::snprintf(id, sizeof(id), "ampdelta-block-%08zu", index);
  return arrow::util::base64_encode(id);
}

}  // namespace

// One block blob written block by block and committed by Put Block List. Uncommitted
// blocks never become visible, and Azure discards them after a week, so Abort has nothing
// to do.
class AzureBlockUpload : public MultipartUpload {
 public:
  AzureBlockUpload(std::shared_ptr<AzureStore> store, std::string path, std::string key)
      : store_(std::move(store)), path_(std::move(path)), key_(std::move(key)) {}

  arrow::Status UploadPart(const std::shared_ptr<arrow::Buffer>& part) override {
    HttpRequest request = store_->BlobRequest("PUT", key_);
    const std::string id = BlockId(ids_.size());
    request.query = {{"comp", "block"}, {"blockid", id}};
    request.body = part;
    ARROW_ASSIGN_OR_RAISE(auto sent, store_->Send(request));
    if (sent.response.status != 201) {
      return store_->ResponseError("Azure Put Block", path_, sent.response);
    }
    ids_.push_back(id);
    return arrow::Status::OK();
  }

  arrow::Status Complete(const std::shared_ptr<arrow::Buffer>& last_part) override {
    if (last_part->size() > 0 || ids_.empty()) ARROW_RETURN_NOT_OK(UploadPart(last_part));
    std::string xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
    for (const auto& id : ids_) xml += "<Latest>" + id + "</Latest>";
    xml += "</BlockList>";
    HttpRequest request = store_->BlobRequest("PUT", key_);
    request.query = {{"comp", "blocklist"}};
    request.body = arrow::Buffer::FromString(std::move(xml));
    request.SetHeader("Content-Type", "application/xml");
    ARROW_ASSIGN_OR_RAISE(auto sent, store_->Send(request));
    if (sent.response.status != 201) {
      return store_->ResponseError("Azure Put Block List", path_, sent.response);
    }
    return arrow::Status::OK();
  }

  arrow::Status Abort() override { return arrow::Status::OK(); }

 private:
  std::shared_ptr<AzureStore> store_;
  std::string path_;
  std::string key_;
  std::vector<std::string> ids_;
};

AzureStore::AzureStore(std::string root_uri, std::string prefix, CloudSettings settings)
    : CloudStore(std::move(root_uri), std::move(prefix), settings) {}

arrow::Result<std::shared_ptr<AzureStore>> AzureStore::Make(
    const std::string& uri, const std::map<std::string, std::string>& options) {
  const CloudUrl url = CloudUrl::Parse(uri);
  const std::string& scheme = url.scheme;
  const std::string& authority = url.authority;
  const std::string& prefix = url.prefix;
  std::string container = authority;
  std::string account;
  const size_t at = authority.find('@');
  if (at != std::string::npos) {
    // abfss://container@account.dfs.core.windows.net/path
    container = authority.substr(0, at);
    const std::string host = authority.substr(at + 1);
    account = host.substr(0, host.find('.'));
  }
  if (container.empty())
    return InvalidStoreOption("Azure URL '" + uri + "' names no container");

  ARROW_ASSIGN_OR_RAISE(CloudSettings settings, CloudSettings::FromOptions(options));
  ARROW_ASSIGN_OR_RAISE(bool use_emulator,
                        LookupFlag(options, "AZURE_STORAGE_USE_EMULATOR"));
  ARROW_ASSIGN_OR_RAISE(bool allow_http,
                        LookupAllowHttp(options, "AZURE_ALLOW_HTTP", use_emulator));
  if (account.empty()) {
    account =
        FirstOption(options, {"AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"})
            .value_or(use_emulator ? kEmulatorAccount : "");
  }
  if (account.empty()) {
    return InvalidStoreOption(
        "Azure URL '" + uri +
        "' needs a storage account: set AZURE_STORAGE_ACCOUNT_NAME");
  }
  const std::string root =
      scheme + "://" + authority + (prefix.empty() ? "" : "/" + prefix);
  auto store = std::make_shared<AzureStore>(root, prefix, settings);
  store->account_ = account;
  store->container_ = container;

  std::string endpoint =
      FirstOption(options, {"AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT"})
          .value_or(use_emulator ? "http://127.0.0.1:10000/" + account
                                 : "https://" + account + ".blob.core.windows.net");
  endpoint = TrimChar(endpoint, '/');
  if (endpoint.rfind("http://", 0) != 0 && endpoint.rfind("https://", 0) != 0) {
    return InvalidStoreOption("AZURE_STORAGE_ENDPOINT '" + endpoint +
                              "' must start with http:// or https://");
  }
  if (endpoint.rfind("http://", 0) == 0 && !allow_http) {
    return InvalidStoreOption("AZURE_STORAGE_ENDPOINT '" + endpoint +
                              "' is plain HTTP; set AZURE_ALLOW_HTTP=true to allow it");
  }
  const size_t path_start = endpoint.find('/', endpoint.find("://") + 3);
  store->origin_ = endpoint.substr(0, path_start);
  store->base_path_ = path_start == std::string::npos ? "" : endpoint.substr(path_start);

  auto key =
      FirstOption(options, {"AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY",
                            "AZURE_STORAGE_MASTER_KEY"});
  if (!key && use_emulator && account == kEmulatorAccount) key = kEmulatorKey;
  auto sas = FirstOption(options, {"AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SAS_KEY"});
  if (key) {
    auto decoded = arrow::util::base64_decode(*key);
    if (!decoded.ok() || decoded->empty()) {
      return InvalidStoreOption("AZURE_STORAGE_ACCOUNT_KEY is not a base64 account key");
    }
    store->account_key_ = std::move(*decoded);
  } else if (sas) {
    store->sas_ = ParseQuery(*sas);
  } else {
    return InvalidStoreOption(
        "no Azure credentials for " + root +
        ": set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN");
  }
  return store;
}

std::string AzureSharedKeyAuthorization(const HttpRequest& request,
                                        const std::string& account,
                                        const std::string& key) {
  const int64_t length = request.body ? request.body->size() : 0;
  std::string to_sign = request.method + "\n";
  for (const char* name : {"Content-Encoding", "Content-Language"}) {
    to_sign += request.Header(name) + "\n";
  }
  to_sign += (length > 0 ? std::to_string(length) : "") + "\n";
  for (const char* name : {"Content-MD5", "Content-Type", "Date", "If-Modified-Since",
                           "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"}) {
    to_sign += request.Header(name) + "\n";
  }
  std::vector<std::pair<std::string, std::string>> ms_headers;
  for (const auto& [name, value] : request.headers) {
    const std::string lower = AsciiLower(name);
    if (lower.rfind("x-ms-", 0) == 0) ms_headers.emplace_back(lower, value);
  }
  std::sort(ms_headers.begin(), ms_headers.end());
  for (const auto& [name, value] : ms_headers) to_sign += name + ":" + value + "\n";
  to_sign += "/" + account + request.path;
  std::map<std::string, std::vector<std::string>> params;
  for (const auto& [name, value] : request.query)
    params[AsciiLower(name)].push_back(value);
  for (auto& [name, values] : params) {
    std::sort(values.begin(), values.end());
    to_sign += "\n" + name + ":";
    for (size_t i = 0; i < values.size(); ++i) to_sign += (i ? "," : "") + values[i];
  }
  const auto mac = HmacSha256(key, to_sign);
  return "SharedKey " + account + ":" +
         arrow::util::base64_encode(
             std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size()));
}

HttpRequest AzureStore::BlobRequest(std::string method, const std::string& key) const {
  std::string path = base_path_ + "/" + UriEncode(container_, false);
  if (!key.empty()) path += "/" + UriEncode(key, true);
  return MakeRequest(std::move(method), origin_, std::move(path));
}

arrow::Status AzureStore::Sign(HttpRequest* request) {
  request->SetHeader("x-ms-version", kApiVersion);
  request->SetHeader("x-ms-date", HttpDate(NowMs() / 1000));
  if (account_key_.empty()) {
    request->query.insert(request->query.end(), sas_.begin(), sas_.end());
    return arrow::Status::OK();
  }
  request->SetHeader("Authorization",
                     AzureSharedKeyAuthorization(*request, account_, account_key_));
  return arrow::Status::OK();
}

std::pair<std::string, std::string> AzureStore::ProviderError(
    const HttpResponse& response) const {
  std::string code = response.Header("x-ms-error-code");
  std::string message;
  pugi::xml_document doc;
  if (!response.body.empty() && doc.load_string(response.body.c_str())) {
    auto error = doc.child("Error");
    if (error) {
      if (code.empty()) code = error.child_value("Code");
      message = error.child_value("Message");
      message = message.substr(0, message.find('\n'));
    }
  }
  return {code, message};
}

arrow::Result<ObjectMeta> AzureStore::Head(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(BlobRequest("HEAD", key)));
  if (sent.response.status != 200)
    return ResponseError("Azure HEAD", path, sent.response);
  // On hierarchical-namespace (ADLS Gen2) accounts directories answer HEAD too.
  if (sent.response.Header("x-ms-meta-hdi_isfolder") == "true" ||
      sent.response.Header("x-ms-resource-type") == "directory") {
    return NotFoundError("Azure HEAD ", JoinPath(root_uri(), path),
                         ": a directory, not a file");
  }
  return MetaFromHeaders(path, sent.response);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> AzureStore::Fetch(const std::string& path,
                                                                int64_t offset,
                                                                int64_t length) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  return SendRangedGet(BlobRequest("GET", key), "x-ms-range", "Azure GET", path, offset,
                       length);
}

arrow::Result<std::vector<ObjectMeta>> AzureStore::List(const std::string& prefix,
                                                        const std::string& start_after) {
  std::vector<ObjectMeta> objects;
  std::string marker;
  do {
    HttpRequest request = BlobRequest("GET", "");
    request.query = {{"restype", "container"},
                     {"comp", "list"},
                     {"prefix", ListPrefix(prefix)},
                     {"include", "metadata"}};
    if (!marker.empty()) request.query.emplace_back("marker", marker);
    ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
    if (sent.response.status != 200)
      return ResponseError("Azure LIST", prefix, sent.response);
    pugi::xml_document doc;
    if (!doc.load_string(sent.response.body.c_str())) {
      return arrow::Status::IOError("Azure LIST ", JoinPath(root_uri(), prefix),
                                    ": malformed XML reply");
    }
    auto result = doc.child("EnumerationResults");
    for (auto blob : result.child("Blobs").children("Blob")) {
      ObjectMeta meta;
      meta.path = StorePath(blob.child_value("Name"));
      // The Blob API has no start-after: the listing is filtered here.
      if (!start_after.empty() && meta.path <= start_after) continue;
      auto properties = blob.child("Properties");
      // Hierarchical-namespace accounts list their directories as empty blobs.
      if (std::string(properties.child_value("ResourceType")) == "directory" ||
          std::string(blob.child("Metadata").child_value("hdi_isfolder")) == "true") {
        continue;
      }
      // std::stoll would throw on a size beyond int64 in the reply.
      meta.size = ParseInt64(properties.child_value("Content-Length")).value_or(0);
      meta.last_modified_ms = ParseHttpOrIsoTime(properties.child_value("Last-Modified"));
      objects.push_back(std::move(meta));
    }
    marker = result.child_value("NextMarker");
  } while (!marker.empty());
  return objects;
}

arrow::Status AzureStore::Put(const std::string& path,
                              const std::shared_ptr<arrow::Buffer>& data, PutMode mode) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  HttpRequest request = BlobRequest("PUT", key);
  request.body = data;
  request.SetHeader("x-ms-blob-type", "BlockBlob");
  const bool conditional = mode == PutMode::kCreateIfAbsent;
  if (conditional) request.SetHeader("If-None-Match", "*");
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
  const int status = sent.response.status;
  if (status == 201) return arrow::Status::OK();
  // 409 means "exists" only as BlobAlreadyExists (a lease or a deleted container is not).
  if (conditional &&
      (status == 412 ||
       (status == 409 && ProviderError(sent.response).first == "BlobAlreadyExists"))) {
    return RefusedCreate(path);
  }
  return ResponseError("Azure PUT", path, sent.response);
}

arrow::Status AzureStore::Delete(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(BlobRequest("DELETE", key)));
  return DeleteOutcome("Azure DELETE", path, sent.response);
}

arrow::Result<std::unique_ptr<MultipartUpload>> AzureStore::StartMultipart(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  return std::make_unique<AzureBlockUpload>(
      std::static_pointer_cast<AzureStore>(shared_from_this()), path, key);
}

}  // namespace ampdelta::storage

#include "ampdelta/storage/gcs_store.h"

#include <fstream>
#include <sstream>

#include <arrow/util/base64.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <nlohmann/json.hpp>

#include "ampdelta/storage/credentials.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

constexpr const char* kDefaultTokenUri = "https://oauth2.googleapis.com/token";
constexpr const char* kScope = "https://www.googleapis.com/auth/devstorage.read_write";
// Resumable upload chunks must be multiples of 256 KiB.
constexpr int64_t kChunkGranule = 256 * 1024;

// A string member of a JSON object, or "" (never throws on a missing or mistyped member).
std::string JsonString(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Base64Url(std::string_view data) {
  std::string out = arrow::util::base64_encode(data);
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

arrow::Result<std::string> ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return InvalidStoreOption("cannot read " + what + " '" + path + "'");
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace

arrow::Result<std::shared_ptr<GoogleTokenSource>> GoogleTokenSource::FromJson(
    const std::string& json, std::shared_ptr<HttpClient> client) {
  auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidStoreOption("Google credentials are not a JSON object");
  }
  auto source = std::make_shared<GoogleTokenSource>();
  source->client_ = std::move(client);
  source->type_ = JsonString(doc, "type");
  source->token_uri_ = JsonString(doc, "token_uri");
  if (source->token_uri_.empty()) source->token_uri_ = kDefaultTokenUri;
  if (source->type_ == "service_account") {
    source->client_email_ = JsonString(doc, "client_email");
    source->private_key_pem_ = JsonString(doc, "private_key");
    if (source->client_email_.empty() || source->private_key_pem_.empty()) {
      return InvalidStoreOption(
          "Google service account key lacks client_email or private_key");
    }
  } else if (source->type_ == "authorized_user") {
    source->client_id_ = JsonString(doc, "client_id");
    source->client_secret_ = JsonString(doc, "client_secret");
    source->refresh_token_ = JsonString(doc, "refresh_token");
  } else {
    return InvalidStoreOption("unsupported Google credentials type '" + source->type_ +
                              "' (service_account and authorized_user are supported)");
  }
  return source;
}

arrow::Result<std::string> GoogleTokenSource::SignedAssertion(int64_t now_seconds) const {
  const nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  const nlohmann::json claims = {{"iss", client_email_},
                                 {"scope", kScope},
                                 {"aud", token_uri_},
                                 {"iat", now_seconds},
                                 {"exp", now_seconds + 3600}};
  const std::string signing_input =
      Base64Url(header.dump()) + "." + Base64Url(claims.dump());
  gnutls_privkey_t key;
  if (gnutls_privkey_init(&key) != 0)
    return arrow::Status::OutOfMemory("gnutls_privkey_init");
  gnutls_datum_t pem{
      reinterpret_cast<unsigned char*>(const_cast<char*>(private_key_pem_.data())),
      static_cast<unsigned int>(private_key_pem_.size())};
  int rc = gnutls_privkey_import_x509_raw(key, &pem, GNUTLS_X509_FMT_PEM, nullptr, 0);
  gnutls_datum_t signature{nullptr, 0};
  if (rc == 0) {
    gnutls_datum_t data{
        reinterpret_cast<unsigned char*>(const_cast<char*>(signing_input.data())),
        static_cast<unsigned int>(signing_input.size())};
    rc = gnutls_privkey_sign_data(key, GNUTLS_DIG_SHA256, 0, &data, &signature);
  }
  gnutls_privkey_deinit(key);
  if (rc != 0) {
    // The message names the failure, never the key.
    return InvalidStoreOption(
        std::string("cannot sign with the service account's private key: ") +
        gnutls_strerror(rc));
  }
  std::string sig(reinterpret_cast<const char*>(signature.data), signature.size);
  gnutls_free(signature.data);
  return signing_input + "." + Base64Url(sig);
}

arrow::Result<std::string> GoogleTokenSource::Token() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!token_.empty() && expires_at_ms_ - NowMs() > kCredentialRefreshMarginMs)
    return token_;
  HttpRequest request = HttpRequest::FromUrl("POST", token_uri_);
  std::vector<std::pair<std::string, std::string>> form;
  if (type_ == "service_account") {
    ARROW_ASSIGN_OR_RAISE(std::string assertion, SignedAssertion(NowMs() / 1000));
    form = {{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
            {"assertion", assertion}};
  } else {
    form = {{"grant_type", "refresh_token"},
            {"client_id", client_id_},
            {"client_secret", client_secret_},
            {"refresh_token", refresh_token_}};
  }
  request.body = arrow::Buffer::FromString(FormEncode(form));
  request.SetHeader("Content-Type", "application/x-www-form-urlencoded");
  ARROW_ASSIGN_OR_RAISE(auto sent, SendUnsigned(*client_, request));
  auto doc = nlohmann::json::parse(sent.response.body, nullptr, false);
  if (sent.response.status != 200 || JsonString(doc, "access_token").empty()) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::IOError,
                     "Google token request to ", request.DisplayUrl(), " failed: HTTP ",
                     sent.response.status);
  }
  token_ = JsonString(doc, "access_token");
  const int64_t lifetime_s =
      doc.contains("expires_in") && doc["expires_in"].is_number_integer()
          ? doc["expires_in"].get<int64_t>()
          : 3600;
  expires_at_ms_ = NowMs() + lifetime_s * 1000;
  return token_;
}

// A resumable upload session: chunks are PUT to the session URI with their byte range;
// the last one carries the total size and creates the object.
class GcsResumableUpload : public MultipartUpload {
 public:
  GcsResumableUpload(std::shared_ptr<GcsStore> store, std::string path,
                     std::string session_url)
      : store_(std::move(store)),
        path_(std::move(path)),
        session_url_(std::move(session_url)) {}

  arrow::Status UploadPart(const std::shared_ptr<arrow::Buffer>& part) override {
    return Send(part, false);
  }
  arrow::Status Complete(const std::shared_ptr<arrow::Buffer>& last_part) override {
    return Send(last_part, true);
  }
  arrow::Status Abort() override {
    ARROW_ASSIGN_OR_RAISE(auto sent,
                          store_->Send(HttpRequest::FromUrl("DELETE", session_url_)));
    (void)sent;  // 499 is the documented answer; any answer ends the session
    return arrow::Status::OK();
  }

 private:
  // Send `chunk` (bytes offset_..end); a 308's Range header says how much the session
  // holds, and whatever it lacks is sent again.
  arrow::Status Send(const std::shared_ptr<arrow::Buffer>& chunk, bool last) {
    const int64_t end = offset_ + chunk->size();
    int64_t from = offset_;
    for (int round = 0; round < 8; ++round) {
      HttpRequest request = HttpRequest::FromUrl("PUT", session_url_);
      request.body = arrow::SliceBuffer(chunk, from - offset_, end - from);
      std::string range =
          end > from ? "bytes " + std::to_string(from) + "-" + std::to_string(end - 1)
                     : "bytes *";
      range += "/" + (last ? std::to_string(end) : std::string("*"));
      request.SetHeader("Content-Range", range);
      ARROW_ASSIGN_OR_RAISE(auto sent, store_->Send(request));
      const int status = sent.response.status;
      if (last && (status == 200 || status == 201)) {
        offset_ = end;
        return arrow::Status::OK();
      }
      if (status != 308)
        return store_->ResponseError("GCS resumable upload", path_, sent.response);
      const std::string held =
          sent.response.Header("range");  // "bytes=0-N"; absent: none
      const size_t dash = held.find('-');
      const int64_t stored =
          dash == std::string::npos ? 0 : std::atoll(held.c_str() + dash + 1) + 1;
      if (!last && stored >= end) {
        offset_ = end;
        return arrow::Status::OK();
      }
      if (stored < offset_ || stored > end) {
        return arrow::Status::IOError(
            "GCS resumable upload of ", JoinPath(store_->root_uri(), path_),
            ": the session holds ", stored, " bytes, expected ", offset_, "..", end);
      }
      from = stored;
    }
    return arrow::Status::IOError("GCS resumable upload of ",
                                  JoinPath(store_->root_uri(), path_),
                                  " makes no progress");
  }

  std::shared_ptr<GcsStore> store_;
  std::string path_;
  std::string session_url_;
  int64_t offset_ = 0;
};

GcsStore::GcsStore(std::string root_uri, std::string prefix, CloudSettings settings)
    : CloudStore(std::move(root_uri), std::move(prefix), settings) {}

arrow::Result<std::shared_ptr<GcsStore>> GcsStore::Make(
    const std::string& uri, const std::map<std::string, std::string>& options) {
  const CloudUrl url = CloudUrl::Parse(uri);
  const std::string& bucket = url.authority;
  const std::string& prefix = url.prefix;
  if (bucket.empty()) return InvalidStoreOption("GCS URL '" + uri + "' names no bucket");
  ARROW_ASSIGN_OR_RAISE(CloudSettings settings, CloudSettings::FromOptions(options));
  if (settings.part_size % kChunkGranule != 0) {
    settings.part_size += kChunkGranule - settings.part_size % kChunkGranule;
  }
  auto store = std::make_shared<GcsStore>(
      "gs://" + bucket + (prefix.empty() ? "" : "/" + prefix), prefix, settings);
  store->bucket_ = bucket;
  std::optional<std::string> endpoint = LookupOption(options, "GOOGLE_STORAGE_ENDPOINT");
  bool emulator = false;
  if (!endpoint) {
    endpoint = LookupOption(options, "STORAGE_EMULATOR_HOST");
    emulator = endpoint.has_value();
    if (emulator && endpoint->find("://") == std::string::npos)
      endpoint = "http://" + *endpoint;
  }
  ARROW_ASSIGN_OR_RAISE(bool allow_http,
                        LookupAllowHttp(options, "GOOGLE_ALLOW_HTTP", emulator));
  store->origin_ = TrimChar(endpoint.value_or("https://storage.googleapis.com"), '/');
  if (store->origin_.rfind("http://", 0) == 0 && !allow_http) {
    return InvalidStoreOption(
        "GCS endpoint '" + store->origin_ +
        "' is plain HTTP; set GOOGLE_ALLOW_HTTP=true (or allow_http) to allow it");
  }

  std::optional<std::string> key_json =
      LookupOption(options, "GOOGLE_SERVICE_ACCOUNT_KEY");
  if (!key_json) {
    for (const char* name : {"GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH",
                             "GOOGLE_APPLICATION_CREDENTIALS"}) {
      if (auto file = LookupOption(options, name)) {
        ARROW_ASSIGN_OR_RAISE(key_json, ReadFile(*file, name));
        break;
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(bool skip_signature,
                        LookupFlag(options, "GOOGLE_SKIP_SIGNATURE", emulator));
  if (key_json) {
    ARROW_ASSIGN_OR_RAISE(store->tokens_,
                          GoogleTokenSource::FromJson(*key_json, store->shared_client()));
  } else if (!skip_signature) {
    return InvalidStoreOption(
        "no Google credentials for " + store->root_uri() +
        ": set GOOGLE_SERVICE_ACCOUNT (a key file) or GOOGLE_SERVICE_ACCOUNT_KEY");
  }
  return store;
}

HttpRequest GcsStore::ObjectRequest(std::string method, const std::string& key) const {
  return MakeRequest(
      std::move(method), origin_,
      "/storage/v1/b/" + UriEncode(bucket_, false) + "/o/" + UriEncode(key, false));
}

arrow::Status GcsStore::Sign(HttpRequest* request) {
  if (tokens_ == nullptr) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(std::string token, tokens_->Token());
  request->SetHeader("Authorization", "Bearer " + token);
  return arrow::Status::OK();
}

std::pair<std::string, std::string> GcsStore::ProviderError(
    const HttpResponse& response) const {
  auto doc = nlohmann::json::parse(response.body, nullptr, false);
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
    const auto& error = doc["error"];
    std::string reason;
    if (error.contains("errors") && error["errors"].is_array() &&
        !error["errors"].empty()) {
      reason = JsonString(error["errors"][0], "reason");
    }
    return {reason, JsonString(error, "message")};
  }
  return {"", ""};
}

arrow::Result<ObjectMeta> GcsStore::Head(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  HttpRequest request = ObjectRequest("GET", key);
  request.query = {{"fields", "size,updated"}};
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
  if (sent.response.status != 200) return ResponseError("GCS HEAD", path, sent.response);
  auto doc = nlohmann::json::parse(sent.response.body, nullptr, false);
  if (doc.is_discarded()) {
    return arrow::Status::IOError("GCS HEAD ", JoinPath(root_uri(), path),
                                  ": malformed reply");
  }
  ObjectMeta meta;
  meta.path = path;
  meta.size = std::atoll(JsonString(doc, "size").c_str());
  meta.last_modified_ms = ParseHttpOrIsoTime(JsonString(doc, "updated"));
  return meta;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> GcsStore::Fetch(const std::string& path,
                                                              int64_t offset,
                                                              int64_t length) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  HttpRequest request = ObjectRequest("GET", key);
  request.query = {{"alt", "media"}};
  return SendRangedGet(std::move(request), "Range", "GCS GET", path, offset, length);
}

arrow::Result<std::vector<ObjectMeta>> GcsStore::List(const std::string& prefix,
                                                      const std::string& start_after) {
  std::vector<ObjectMeta> objects;
  std::string page_token;
  do {
    HttpRequest request =
        MakeRequest("GET", origin_, "/storage/v1/b/" + UriEncode(bucket_, false) + "/o");
    request.query = {{"prefix", ListPrefix(prefix)},
                     {"fields", "items(name,size,updated),nextPageToken"}};
    // startOffset is inclusive; the one equal name is dropped below.
    if (!start_after.empty())
      request.query.emplace_back("startOffset", ListPrefix(start_after));
    if (!page_token.empty()) request.query.emplace_back("pageToken", page_token);
    ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
    if (sent.response.status != 200)
      return ResponseError("GCS LIST", prefix, sent.response);
    auto doc = nlohmann::json::parse(sent.response.body, nullptr, false);
    if (doc.is_discarded()) {
      return arrow::Status::IOError("GCS LIST ", JoinPath(root_uri(), prefix),
                                    ": malformed reply");
    }
    if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
      for (const auto& item : doc["items"]) {
        ObjectMeta meta;
        meta.path = StorePath(JsonString(item, "name"));
        if (!start_after.empty() && meta.path <= start_after) continue;
        meta.size = std::atoll(JsonString(item, "size").c_str());
        meta.last_modified_ms = ParseHttpOrIsoTime(JsonString(item, "updated"));
        objects.push_back(std::move(meta));
      }
    }
    page_token = JsonString(doc, "nextPageToken");
  } while (!page_token.empty());
  return objects;
}

arrow::Status GcsStore::Put(const std::string& path,
                            const std::shared_ptr<arrow::Buffer>& data, PutMode mode) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  HttpRequest request = MakeRequest(
      "POST", origin_, "/upload/storage/v1/b/" + UriEncode(bucket_, false) + "/o");
  request.query = {{"uploadType", "media"}, {"name", key}, {"fields", "generation"}};
  const bool conditional = mode == PutMode::kCreateIfAbsent;
  if (conditional) request.query.emplace_back("ifGenerationMatch", "0");
  request.body = data;
  request.SetHeader("Content-Type", "application/octet-stream");
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
  const int status = sent.response.status;
  if (status == 200 || status == 201) return arrow::Status::OK();
  if (conditional && status == 412) return RefusedCreate(path);
  return ResponseError("GCS PUT", path, sent.response);
}

arrow::Status GcsStore::Delete(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(ObjectRequest("DELETE", key)));
  return DeleteOutcome("GCS DELETE", path, sent.response);
}

arrow::Result<std::unique_ptr<MultipartUpload>> GcsStore::StartMultipart(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  HttpRequest request = MakeRequest(
      "POST", origin_, "/upload/storage/v1/b/" + UriEncode(bucket_, false) + "/o");
  request.query = {{"uploadType", "resumable"}, {"name", key}};
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
  const std::string location = sent.response.Header("location");
  if (sent.response.status != 200 || location.empty()) {
    return ResponseError("GCS start resumable upload", path, sent.response);
  }
  return std::make_unique<GcsResumableUpload>(
      std::static_pointer_cast<GcsStore>(shared_from_this()), path, location);
}

}  // namespace ampdelta::storage

#include "ampdelta/storage/s3_store.h"

#include <pugixml.hpp>

#include "ampdelta/storage/credentials.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/sha256.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

// Bodies up to this size are hashed into the signature; larger ones (data file parts) are
// sent as UNSIGNED-PAYLOAD rather than hashed twice.
constexpr int64_t kMaxHashedPayload = 1 << 20;

std::string PayloadHash(const std::shared_ptr<arrow::Buffer>& body) {
  if (body == nullptr) return Sha256Hex("");
  if (body->size() > kMaxHashedPayload) return kUnsignedPayload;
  return Sha256Hex(std::string_view(reinterpret_cast<const char*>(body->data()),
                                    static_cast<size_t>(body->size())));
}

}  // namespace

// One S3 multipart upload (CreateMultipartUpload … CompleteMultipartUpload).
class S3MultipartUpload : public MultipartUpload {
 public:
  S3MultipartUpload(std::shared_ptr<S3Store> store, std::string path, std::string key,
                    std::string upload_id)
      : store_(std::move(store)),
        path_(std::move(path)),
        key_(std::move(key)),
        upload_id_(std::move(upload_id)) {}

  arrow::Status UploadPart(const std::shared_ptr<arrow::Buffer>& part) override {
    HttpRequest request = store_->ObjectRequest("PUT", key_);
    request.query = {{"partNumber", std::to_string(etags_.size() + 1)},
                     {"uploadId", upload_id_}};
    request.body = part;
    ARROW_ASSIGN_OR_RAISE(auto sent, store_->Send(request));
    if (sent.response.status != 200) {
      return store_->ResponseError("S3 UploadPart", path_, sent.response);
    }
    etags_.push_back(sent.response.Header("etag"));
    bytes_ += part->size();
    return arrow::Status::OK();
  }

  arrow::Status Complete(const std::shared_ptr<arrow::Buffer>& last_part) override {
    if (last_part->size() > 0 || etags_.empty())
      ARROW_RETURN_NOT_OK(UploadPart(last_part));
    std::string xml = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < etags_.size(); ++i) {
      xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" +
             etags_[i] + "</ETag></Part>";
    }
    xml += "</CompleteMultipartUpload>";
    HttpRequest request = store_->ObjectRequest("POST", key_);
    request.query = {{"uploadId", upload_id_}};
    request.body = arrow::Buffer::FromString(std::move(xml));
    request.SetHeader("Content-Type", "application/xml");
    ARROW_ASSIGN_OR_RAISE(auto sent, store_->Send(request));
    // S3 may report a failed completion as 200 with an <Error> body.
    if (sent.response.status != 200 ||
        sent.response.body.find("<Error>") != std::string::npos) {
      if (sent.response.status == 404) {
        // NoSuchUpload: an earlier attempt (perhaps one libcurl re-sent unseen) completed
        // the upload and its reply was lost. Ours if the object has our parts' size.
        auto head = store_->Head(path_);
        if (head.ok() && head->size == bytes_) return arrow::Status::OK();
      }
      HttpResponse failed = sent.response;
      if (failed.status == 200) failed.status = 500;
      return store_->ResponseError("S3 CompleteMultipartUpload", path_, failed);
    }
    return arrow::Status::OK();
  }

  arrow::Status Abort() override {
    HttpRequest request = store_->ObjectRequest("DELETE", key_);
    request.query = {{"uploadId", upload_id_}};
    ARROW_ASSIGN_OR_RAISE(auto sent, store_->Send(request));
    if (sent.response.status / 100 != 2 && sent.response.status != 404) {
      return store_->ResponseError("S3 AbortMultipartUpload", path_, sent.response);
    }
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<S3Store> store_;
  std::string path_;
  std::string key_;
  std::string upload_id_;
  std::vector<std::string> etags_;
  int64_t bytes_ = 0;
};

S3Store::S3Store(std::string root_uri, std::string prefix, CloudSettings settings)
    : CloudStore(std::move(root_uri), std::move(prefix), settings) {}

arrow::Result<std::shared_ptr<S3Store>> S3Store::Make(
    const std::string& uri, const std::map<std::string, std::string>& options) {
  const CloudUrl url = CloudUrl::Parse(uri);
  const std::string& bucket = url.authority;
  const std::string& prefix = url.prefix;
  if (bucket.empty()) return InvalidStoreOption("S3 URL '" + uri + "' names no bucket");
  ARROW_ASSIGN_OR_RAISE(CloudSettings settings, CloudSettings::FromOptions(options));
  settings.retry.retry_conflict = true;
  auto store = std::make_shared<S3Store>(
      "s3://" + bucket + (prefix.empty() ? "" : "/" + prefix), prefix, settings);
  store->bucket_ = bucket;
  store->region_ =
      LookupOption(options, "AWS_REGION")
          .value_or(LookupOption(options, "AWS_DEFAULT_REGION").value_or("us-east-1"));
  ARROW_ASSIGN_OR_RAISE(bool allow_http, LookupAllowHttp(options, "AWS_ALLOW_HTTP"));
  ARROW_ASSIGN_OR_RAISE(bool virtual_hosted,
                        LookupFlag(options, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST"));
  ARROW_ASSIGN_OR_RAISE(store->allow_unsafe_rename_,
                        LookupFlag(options, "AWS_S3_ALLOW_UNSAFE_RENAME"));
  ARROW_ASSIGN_OR_RAISE(store->skip_signature_,
                        LookupFlag(options, "AWS_SKIP_SIGNATURE"));
  std::optional<std::string> endpoint = LookupOption(options, "AWS_ENDPOINT_URL");
  if (!endpoint) endpoint = LookupOption(options, "AWS_ENDPOINT_URL_S3");
  if (!endpoint) endpoint = LookupOption(options, "AWS_ENDPOINT");
  if (endpoint) {
    std::string origin = TrimChar(*endpoint, '/');
    if (origin.rfind("http://", 0) != 0 && origin.rfind("https://", 0) != 0) {
      return InvalidStoreOption("AWS_ENDPOINT_URL '" + *endpoint +
                                "' must start with http:// or https://");
    }
    if (origin.rfind("http://", 0) == 0 && !allow_http) {
      return InvalidStoreOption("AWS_ENDPOINT_URL '" + *endpoint +
                                "' is plain HTTP; set AWS_ALLOW_HTTP=true to allow it");
    }
    if (virtual_hosted) {
      const size_t host = origin.find("://") + 3;
      origin.insert(host, bucket + ".");
    }
    store->origin_ = origin;
    store->path_style_ = !virtual_hosted;
  } else {
    store->origin_ = "https://" + bucket + ".s3." + store->region_ + ".amazonaws.com";
    store->path_style_ = false;
  }
  if (!store->skip_signature_) {
    ARROW_ASSIGN_OR_RAISE(store->credentials_,
                          AwsCredentialProvider::Make(options, store->shared_client()));
  }
  if (store->allow_unsafe_rename_) {
    AMPDELTA_LOG_WARN(
        "AWS_S3_ALLOW_UNSAFE_RENAME=true for ", store->root_uri(),
        ": commits are check-then-put, so two concurrent writers can overwrite "
        "each other's commits; use it only for a store without conditional writes "
        "and a single writer");
  }
  return store;
}

std::string S3Store::credential_source() const {
  return credentials_ ? credentials_->source() : "none (unsigned requests)";
}

HttpRequest S3Store::ObjectRequest(std::string method, const std::string& key) const {
  const std::string path =
      (path_style_ ? "/" + UriEncode(bucket_, false) : std::string()) + "/" +
      UriEncode(key, true);
  return MakeRequest(std::move(method), origin_, path);
}

arrow::Status S3Store::Sign(HttpRequest* request) {
  if (skip_signature_) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(AwsCredentials credentials, credentials_->Get());
  SignAwsV4(request, credentials, region_, "s3", PayloadHash(request->body),
            NowMs() / 1000);
  return arrow::Status::OK();
}

std::pair<std::string, std::string> S3Store::ProviderError(
    const HttpResponse& response) const {
  pugi::xml_document doc;
  if (!response.body.empty() && doc.load_string(response.body.c_str())) {
    auto error = doc.child("Error");
    if (error) return {error.child_value("Code"), error.child_value("Message")};
  }
  return {"", ""};
}

arrow::Result<ObjectMeta> S3Store::Head(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(ObjectRequest("HEAD", key)));
  if (sent.response.status != 200) return ResponseError("S3 HEAD", path, sent.response);
  return MetaFromHeaders(path, sent.response);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> S3Store::Fetch(const std::string& path,
                                                             int64_t offset,
                                                             int64_t length) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  return SendRangedGet(ObjectRequest("GET", key), "Range", "S3 GET", path, offset,
                       length);
}

arrow::Result<std::vector<ObjectMeta>> S3Store::List(const std::string& prefix,
                                                     const std::string& start_after) {
  std::vector<ObjectMeta> objects;
  const std::string key_prefix = ListPrefix(prefix);
  std::string token;
  do {
    HttpRequest request =
        MakeRequest("GET", origin_, path_style_ ? "/" + UriEncode(bucket_, false) : "/");
    request.query = {{"list-type", "2"}, {"prefix", key_prefix}};
    if (!start_after.empty())
      request.query.emplace_back("start-after", ListPrefix(start_after));
    if (!token.empty()) request.query.emplace_back("continuation-token", token);
    ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
    if (sent.response.status != 200)
      return ResponseError("S3 LIST", prefix, sent.response);
    pugi::xml_document doc;
    if (!doc.load_string(sent.response.body.c_str())) {
      return arrow::Status::IOError("S3 LIST ", JoinPath(root_uri(), prefix),
                                    ": malformed XML reply");
    }
    auto result = doc.child("ListBucketResult");
    for (auto contents : result.children("Contents")) {
      ObjectMeta meta;
      meta.path = StorePath(contents.child_value("Key"));
      // std::stoll would throw on a size beyond int64 in the reply.
      meta.size = ParseInt64(contents.child_value("Size")).value_or(0);
      meta.last_modified_ms = ParseHttpOrIsoTime(contents.child_value("LastModified"));
      objects.push_back(std::move(meta));
    }
    const bool truncated = std::string(result.child_value("IsTruncated")) == "true";
    token = truncated ? result.child_value("NextContinuationToken") : "";
    if (truncated && token.empty()) {
      // A stale listing would hide commits or let vacuum miss live files: stop instead.
      return arrow::Status::IOError(
          "S3 LIST ", JoinPath(root_uri(), prefix),
          ": truncated reply without a continuation token (does the "
          "store support ListObjectsV2?)");
    }
  } while (!token.empty());
  return objects;
}

arrow::Status S3Store::Put(const std::string& path,
                           const std::shared_ptr<arrow::Buffer>& data, PutMode mode) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  const bool conditional = mode == PutMode::kCreateIfAbsent;
  if (conditional && allow_unsafe_rename_) {
    // Not atomic: the option's warning says so.
    auto head = Head(path);
    if (head.ok()) {
      return MakeError(ErrorCode::kPreconditionFailed, arrow::StatusCode::IOError,
                       JoinPath(root_uri(), path), " already exists");
    }
    if (!IsError(head.status(), ErrorCode::kNotFound)) return head.status();
  }
  HttpRequest request = ObjectRequest("PUT", key);
  request.body = data;
  if (conditional && !allow_unsafe_rename_) request.SetHeader("If-None-Match", "*");
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
  const int status = sent.response.status;
  if (status == 200) return arrow::Status::OK();
  if (conditional && status == 412) return RefusedCreate(path);
  if (conditional &&
      (status == 501 ||
       (status == 400 && ProviderError(sent.response).first == "NotImplemented"))) {
    return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                     "the S3 store at ", origin_,
                     " rejected a conditional write (If-None-Match: *)"
                     ", which keeps concurrent writers of ",
                     root_uri(),
                     " safe; if only one program ever writes this table, set "
                     "AWS_S3_ALLOW_UNSAFE_RENAME=true");
  }
  return ResponseError("S3 PUT", path, sent.response);
}

arrow::Status S3Store::Delete(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(ObjectRequest("DELETE", key)));
  return DeleteOutcome("S3 DELETE", path, sent.response);
}

arrow::Result<std::unique_ptr<MultipartUpload>> S3Store::StartMultipart(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string key, ObjectKey(path));
  HttpRequest request = ObjectRequest("POST", key);
  request.query = {{"uploads", ""}};
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
  if (sent.response.status != 200) {
    return ResponseError("S3 CreateMultipartUpload", path, sent.response);
  }
  pugi::xml_document doc;
  doc.load_string(sent.response.body.c_str());
  std::string upload_id =
      doc.child("InitiateMultipartUploadResult").child_value("UploadId");
  if (upload_id.empty()) {
    return arrow::Status::IOError("S3 CreateMultipartUpload ", JoinPath(root_uri(), path),
                                  ": reply has no UploadId");
  }
  return std::make_unique<S3MultipartUpload>(
      std::static_pointer_cast<S3Store>(shared_from_this()), path, key,
      std::move(upload_id));
}

}  // namespace ampdelta::storage

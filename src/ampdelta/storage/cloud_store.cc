#include "ampdelta/storage/cloud_store.h"

#include "ampdelta/storage/credentials.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

arrow::Result<int64_t> LookupInt(const std::map<std::string, std::string>& options,
                                 const std::string& key, int64_t fallback,
                                 int64_t minimum) {
  auto value = LookupOption(options, key);
  if (!value) return fallback;
  const std::optional<int64_t> parsed = ParseInt64(*value);
  if (parsed && *parsed >= minimum) return *parsed;
  return InvalidInputError("storage option ", key, " must be an integer >= ", minimum,
                           ", not '", *value, "'");
}

}  // namespace

CloudUrl CloudUrl::Parse(const std::string& uri) {
  const size_t scheme_end = uri.find("://");
  CloudUrl url;
  url.scheme = AsciiLower(uri.substr(0, scheme_end));
  const std::string rest =
      scheme_end == std::string::npos ? uri : uri.substr(scheme_end + 3);
  const size_t slash = rest.find('/');
  url.authority = rest.substr(0, slash);
  // As deltalake reads it: `s3://b/my%20table` is the prefix "my table".
  url.prefix =
      slash == std::string::npos ? "" : TrimChar(UriDecode(rest.substr(slash + 1)), '/');
  return url;
}

std::string TrimChar(std::string text, char c) {
  while (!text.empty() && text.front() == c) text.erase(text.begin());
  while (!text.empty() && text.back() == c) text.pop_back();
  return text;
}

arrow::Status InvalidStoreOption(const std::string& message) {
  return InvalidInputError(message);
}

arrow::Result<CloudSettings> CloudSettings::FromOptions(
    const std::map<std::string, std::string>& options) {
  CloudSettings settings;
  ARROW_ASSIGN_OR_RAISE(int64_t retries, LookupInt(options, "AMPDELTA_MAX_RETRIES",
                                                   settings.retry.max_retries, 0));
  settings.retry.max_retries = static_cast<int>(retries);
  ARROW_ASSIGN_OR_RAISE(settings.part_size,
                        LookupInt(options, "AMPDELTA_PART_SIZE_BYTES", settings.part_size,
                                  5 * 1024 * 1024));
  ARROW_ASSIGN_OR_RAISE(int64_t connect, LookupInt(options, "AMPDELTA_CONNECT_TIMEOUT_MS",
                                                   settings.connect_timeout.count(), 1));
  settings.connect_timeout = std::chrono::milliseconds(connect);
  ARROW_ASSIGN_OR_RAISE(int64_t stall, LookupInt(options, "AMPDELTA_STALL_TIMEOUT_MS",
                                                 settings.stall_timeout.count(), 1000));
  settings.stall_timeout = std::chrono::milliseconds(stall);
  return settings;
}

CloudStore::CloudStore(std::string root_uri, std::string prefix, CloudSettings settings)
    : root_uri_(std::move(root_uri)),
      prefix_(std::move(prefix)),
      settings_(settings),
      client_(std::make_shared<HttpClient>(settings.connect_timeout,
                                           settings.stall_timeout)) {}

arrow::Result<std::string> CloudStore::ObjectKey(const std::string& path) const {
  // `.` and `..` segments would be resolved by HTTP stacks, reaching another key than
  // the one named (and signed).
  const std::string padded = "/" + path + "/";
  if (path.empty() || path.front() == '/' || padded.find("/../") != std::string::npos ||
      padded.find("/./") != std::string::npos) {
    return InvalidInputError("invalid object path '", path, "' in ", root_uri_);
  }
  return prefix_.empty() ? path : prefix_ + "/" + path;
}

std::string CloudStore::StorePath(const std::string& key) const {
  if (prefix_.empty()) return key;
  return key.size() > prefix_.size() ? key.substr(prefix_.size() + 1) : "";
}

std::string CloudStore::ListPrefix(const std::string& path_prefix) const {
  return prefix_.empty() ? path_prefix : prefix_ + "/" + path_prefix;
}

arrow::Result<RetriedResponse> CloudStore::Send(const HttpRequest& request) {
  return SendWithRetry(
      *client_, request, [this](HttpRequest* r) { return Sign(r); }, settings_.retry);
}

HttpRequest CloudStore::MakeRequest(std::string method, std::string origin,
                                    std::string path) {
  HttpRequest request;
  request.method = std::move(method);
  request.origin = std::move(origin);
  request.path = std::move(path);
  return request;
}

arrow::Status CloudStore::ResponseError(const std::string& operation,
                                        const std::string& path,
                                        const HttpResponse& response) const {
  const std::string where = JoinPath(root_uri_, path);
  const auto [code, message] = ProviderError(response);
  if (response.status == 404) {
    // The code tells a missing object from a missing bucket or an unknown account.
    return NotFoundError(
        operation, " ", where, ": not found",
        code.empty() ? "" : " (" + code + (message.empty() ? "" : ": " + message) + ")");
  }
  std::string detail = "HTTP " + std::to_string(response.status);
  if (!code.empty()) detail += " " + code;
  if (!message.empty()) detail += ": " + message;
  if (response.status == 401 || response.status == 403) {
    detail += " (check the store's credentials and permissions)";
  }
  return WithErrorCode(arrow::Status::IOError(operation, " ", where, " failed: ", detail),
                       ErrorCode::kStorageError, std::to_string(response.status));
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CloudStore::SendRangedGet(
    HttpRequest request, const std::string& range_header, const std::string& operation,
    const std::string& path, int64_t offset, int64_t length) {
  if (offset > 0 || length >= 0) {
    request.SetHeader(range_header,
                      "bytes=" + std::to_string(offset) + "-" +
                          (length >= 0 ? std::to_string(offset + length - 1) : ""));
  }
  ARROW_ASSIGN_OR_RAISE(auto sent, Send(request));
  if (sent.response.status == 416) return std::make_shared<arrow::Buffer>(nullptr, 0);
  if (sent.response.status != 200 && sent.response.status != 206) {
    return ResponseError(operation, path, sent.response);
  }
  auto body = arrow::Buffer::FromString(std::move(sent.response.body));
  if (sent.response.status == 200 && (offset > 0 || length >= 0)) {
    // The server ignored the range (allowed by HTTP): cut the range out of the whole
    // object.
    const int64_t start = std::min(offset, body->size());
    const int64_t end =
        length >= 0 ? std::min(body->size(), offset + length) : body->size();
    return arrow::SliceBuffer(body, start, end - start);
  }
  return body;
}

ObjectMeta CloudStore::MetaFromHeaders(const std::string& path,
                                       const HttpResponse& response) {
  ObjectMeta meta;
  meta.path = path;
  // std::stoll would throw on a length beyond int64 in the reply.
  meta.size = ParseInt64(response.Header("content-length")).value_or(0);
  meta.last_modified_ms = ParseHttpOrIsoTime(response.Header("last-modified"));
  return meta;
}

arrow::Status CloudStore::RefusedCreate(const std::string& path) const {
  return MakeError(ErrorCode::kPreconditionFailed, arrow::StatusCode::IOError,
                   JoinPath(root_uri_, path), " already exists");
}

arrow::Status CloudStore::DeleteOutcome(const std::string& operation,
                                        const std::string& path,
                                        const HttpResponse& response) const {
  if (response.status / 100 == 2 || response.status == 404) return arrow::Status::OK();
  return ResponseError(operation, path, response);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CloudStore::Get(const std::string& path) {
  return Fetch(path, 0, -1);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CloudStore::GetRange(
    const std::string& path, int64_t offset, int64_t length) {
  if (offset < 0 || length < 0) {
    return arrow::Status::Invalid("invalid range of ", length, " bytes at ", offset);
  }
  if (length == 0) return std::make_shared<arrow::Buffer>(nullptr, 0);
  return Fetch(path, offset, length);
}

arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> CloudStore::OpenInputFile(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(ObjectMeta meta, Head(path));
  auto self = shared_from_this();
  return MakeRangedInputFile(
      [self, path](int64_t offset, int64_t length) {
        return self->Fetch(path, offset, length);
      },
      meta.size);
}

arrow::Result<std::shared_ptr<arrow::io::OutputStream>> CloudStore::OpenOutputStream(
    const std::string& path) {
  ARROW_RETURN_NOT_OK(ObjectKey(path).status());
  auto self = shared_from_this();
  UploadFunctions upload;
  upload.put_whole = [self, path](const std::shared_ptr<arrow::Buffer>& data) {
    return self->Put(path, data, PutMode::kOverwrite);
  };
  upload.start_multipart = [self, path] { return self->StartMultipart(path); };
  return MakeMultipartOutputStream(std::move(upload), settings_.part_size);
}

}  // namespace ampdelta::storage

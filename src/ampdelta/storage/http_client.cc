#include "ampdelta/storage/http_client.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <random>
#include <thread>

#include <curl/curl.h>

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/metrics.h"
#include "ampdelta/util/percent_encoding.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

void InitializeCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->response->body.append(data, size * count);
  return size * count;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string line(data, size * count);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    // A new status line (after `100 Continue` or a redirect) starts a new header block.
    transfer->response->headers.clear();
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    size_t start = colon + 1;
    while (start < line.size() && line[start] == ' ') ++start;
    const std::string name = AsciiLower(line.substr(0, colon));
    transfer->response->headers[name] = line.substr(start);
    // Size the body once: a data file's column chunk can be many MiB.
    if (name == "content-length" && transfer->request->method != "HEAD") {
      const long long length = std::atoll(line.c_str() + start);
      if (length > 0 && length < (1LL << 31)) {
        transfer->response->body.reserve(static_cast<size_t>(length));
      }
    }
  }
  return size * count;
}

}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreAsciiCase(key, name)) return value;
  }
  return "";
}

void HttpRequest::SetHeader(const std::string& name, std::string value) {
  for (auto& [key, existing] : headers) {
    if (EqualsIgnoreAsciiCase(key, name)) {
      existing = std::move(value);
      return;
    }
  }
  headers.emplace_back(name, std::move(value));
}

std::string HttpRequest::QueryString() const { return FormEncode(query); }

HttpRequest HttpRequest::FromUrl(std::string method, const std::string& url) {
  HttpRequest request;
  request.method = std::move(method);
  const size_t scheme_end = url.find("://");
  const size_t path_start =
      url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  request.origin = url.substr(0, path_start);
  const std::string rest = path_start == std::string::npos ? "/" : url.substr(path_start);
  const size_t question = rest.find('?');
  request.path = rest.substr(0, question);
  if (question != std::string::npos)
    request.query = ParseQuery(rest.substr(question + 1));
  return request;
}

std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    if (!out.empty()) out += '&';
    out += UriEncode(key, false);
    out += '=';
    out += UriEncode(value, false);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view text) {
  if (!text.empty() && text.front() == '?') text.remove_prefix(1);
  std::vector<std::pair<std::string, std::string>> fields;
  while (!text.empty()) {
    const size_t amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    const size_t equals = pair.find('=');
    if (!pair.empty()) {
      fields.emplace_back(
          UriDecode(pair.substr(0, equals)),
          equals == std::string_view::npos ? "" : UriDecode(pair.substr(equals + 1)));
    }
    if (amp == std::string_view::npos) break;
    text.remove_prefix(amp + 1);
  }
  return fields;
}

std::string HttpRequest::Url() const {
  std::string url = origin + path;
  if (!query.empty()) url += "?" + QueryString();
  return url;
}

std::string HttpResponse::Header(const std::string& name) const {
  auto it = headers.find(AsciiLower(name));
  return it == headers.end() ? "" : it->second;
}

std::string UriEncode(std::string_view text, bool keep_slash) {
  return PercentEncode(text, keep_slash ? PercentEscape::kAllButUnreservedAndSlash
                                        : PercentEscape::kAllButUnreserved);
}

std::string UriDecode(std::string_view text) { return PercentDecode(text); }

HttpClient::HttpClient(std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds stall_timeout)
    : connect_timeout_(connect_timeout), stall_timeout_(stall_timeout) {
  InitializeCurlOnce();
}

HttpClient::~HttpClient() {
  for (void* handle : idle_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* HttpClient::AcquireHandle() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      void* handle = idle_.back();
      idle_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void HttpClient::ReleaseHandle(void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(handle);
}

arrow::Result<HttpResponse> HttpClient::Send(const HttpRequest& request) {
  CURL* curl = static_cast<CURL*>(AcquireHandle());
  if (curl == nullptr) return arrow::Status::OutOfMemory("curl_easy_init failed");
  // reset keeps the handle's connection cache, so keep-alive connections are reused.
  curl_easy_reset(curl);
  HttpResponse response;
  Transfer transfer{&request, &response};
  const std::string url = request.Url();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // Send the path exactly as signed (no dot-segment squashing).
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(connect_timeout_.count()));
  // A transfer slower than 1 byte/s for the stall timeout is dead.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   std::max<long>(1, static_cast<long>(stall_timeout_.count() / 1000)));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const bool sends_body = request.method == "PUT" || request.method == "POST";
  if (sends_body) {
    static const char kEmpty[] = "";
    const char* data =
        request.body ? reinterpret_cast<const char*>(request.body->data()) : kEmpty;
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body ? request.body->size() : 0));
  }
  curl_slist* headers = nullptr;
  bool has_content_type = false;
  for (const auto& [name, value] : request.headers) {
    if (EqualsIgnoreAsciiCase(name, "content-type")) has_content_type = true;
    const std::string line = value.empty() ? name + ";" : name + ": " + value;
    headers = curl_slist_append(headers, line.c_str());
  }
  // No `Expect: 100-continue` round trip, and no form content type on bodies.
  headers = curl_slist_append(headers, "Expect:");
  if (sends_body && !has_content_type)
    headers = curl_slist_append(headers, "Content-Type:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  ReleaseHandle(curl);
  if (code != CURLE_OK) {
    return WithErrorCode(arrow::Status::IOError(request.method, " ", request.DisplayUrl(),
                                                " failed: ", curl_easy_strerror(code)),
                         ErrorCode::kStorageError, "transport");
  }
  response.status = static_cast<int>(status);
  return response;
}

bool IsRetryableStatus(int status) {
  return status == 408 || status == 429 || (status >= 500 && status != 501);
}

arrow::Result<RetriedResponse> SendWithRetry(
    HttpClient& client, const HttpRequest& request,
    const std::function<arrow::Status(HttpRequest*)>& sign, const RetryPolicy& policy) {
  RetriedResponse result;
  const BackoffPolicy backoff{policy.initial_backoff, policy.max_backoff};
  for (int attempt = 0;; ++attempt) {
    HttpRequest signed_request = request;
    ARROW_RETURN_NOT_OK(sign(&signed_request));
    auto sent = client.Send(signed_request);
    result.attempts = attempt + 1;
    const bool last = attempt >= policy.max_retries;
    const bool retryable = sent.ok() && (IsRetryableStatus(sent->status) ||
                                         (policy.retry_conflict && sent->status == 409));
    if (sent.ok() && (!retryable || last)) {
      result.response = std::move(*sent);
      return result;
    }
    if (!sent.ok() && last) {
      return sent.status().WithMessage(sent.status().message(), " (after ", attempt + 1,
                                       " attempts)");
    }
    metrics::RetriesCounter("storage").Increment();
    policy.sleep(backoff.Delay(attempt));
  }
}

arrow::Result<RetriedResponse> SendUnsigned(HttpClient& client,
                                            const HttpRequest& request, int max_retries) {
  RetryPolicy policy;
  policy.max_retries = max_retries;
  return SendWithRetry(
      client, request, [](HttpRequest*) { return arrow::Status::OK(); }, policy);
}

}  // namespace ampdelta::storage

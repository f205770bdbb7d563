#include "ampdelta/util/status.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace ampdelta {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kProtocolError:
      return "protocol_error";
    case ErrorCode::kServerError:
      return "server_error";
    case ErrorCode::kReorgDetected:
      return "reorg_detected";
    case ErrorCode::kCommitConflict:
      return "commit_conflict";
    case ErrorCode::kUnsupportedFeature:
      return "unsupported_feature";
    case ErrorCode::kCorruptLog:
      return "corrupt_log";
    case ErrorCode::kPreconditionFailed:
      return "precondition_failed";
    case ErrorCode::kInvalidInput:
      return "invalid_input";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kStorageError:
      return "storage_error";
  }
  return "unknown";
}

std::string ErrorDetail::ToString() const {
  if (subcode_.empty()) return ErrorCodeName(code_);
  return std::string(ErrorCodeName(code_)) + "/" + subcode_;
}

arrow::Status WithErrorCode(arrow::Status status, ErrorCode code, std::string subcode) {
  if (status.ok()) return status;
  return status.WithDetail(std::make_shared<ErrorDetail>(code, std::move(subcode)));
}

const ErrorDetail* GetErrorDetail(const arrow::Status& status) {
  const auto& detail = status.detail();
  if (detail == nullptr || detail->type_id() != std::string(ErrorDetail::kTypeId)) {
    return nullptr;
  }
  return static_cast<const ErrorDetail*>(detail.get());
}

bool IsError(const arrow::Status& status, ErrorCode code) {
  const ErrorDetail* detail = GetErrorDetail(status);
  return detail != nullptr && detail->code() == code;
}

ErrorClass ClassifyError(const arrow::Status& status) {
  const ErrorDetail* detail = GetErrorDetail(status);
  if (detail == nullptr) return ErrorClass::kInternal;
  switch (detail->code()) {
    case ErrorCode::kInvalidInput:
    case ErrorCode::kNotFound:
      return ErrorClass::kInvalidInput;
    case ErrorCode::kServerError:
    case ErrorCode::kProtocolError:
    case ErrorCode::kReorgDetected:
      return ErrorClass::kServer;
    case ErrorCode::kStorageError:
      return ErrorClass::kStorage;
    case ErrorCode::kCommitConflict:
    case ErrorCode::kPreconditionFailed:
      return ErrorClass::kConflict;
    case ErrorCode::kUnsupportedFeature:
    case ErrorCode::kCorruptLog:
      return ErrorClass::kTable;
  }
  return ErrorClass::kInternal;
}

const char* ErrorClassName(ErrorClass error_class) {
  switch (error_class) {
    case ErrorClass::kInvalidInput:
      return "invalid_input";
    case ErrorClass::kServer:
      return "server";
    case ErrorClass::kStorage:
      return "storage";
    case ErrorClass::kConflict:
      return "conflict";
    case ErrorClass::kTable:
      return "table";
    case ErrorClass::kInternal:
      return "internal";
  }
  return "internal";
}

bool IsTransientError(const arrow::Status& status) {
  const ErrorDetail* detail = GetErrorDetail(status);
  if (detail == nullptr) return false;
  const std::string& sub = detail->subcode();
  if (detail->code() == ErrorCode::kServerError) {
    static constexpr std::string_view kTransient[] = {"UNAVAILABLE", "DEADLINE_EXCEEDED",
                                                      "RESOURCE_EXHAUSTED", "ABORTED"};
    return std::find(std::begin(kTransient), std::end(kTransient), sub) !=
           std::end(kTransient);
  }
  if (detail->code() == ErrorCode::kStorageError) {
    static constexpr std::string_view kTransient[] = {
        "transport", "EAGAIN", "EINTR",    "ETIMEDOUT",   "ECONNRESET",  "ECONNREFUSED",
        "EBUSY",     "ESTALE", "ENETDOWN", "ENETUNREACH", "EHOSTUNREACH"};
    if (std::find(std::begin(kTransient), std::end(kTransient), sub) !=
        std::end(kTransient)) {
      return true;
    }
    // HTTP statuses: request timeout, throttling and server errors (501: not
    // implemented).
    if (sub.size() == 3 && std::all_of(sub.begin(), sub.end(),
                                       [](char c) { return c >= '0' && c <= '9'; })) {
      const int http = (sub[0] - '0') * 100 + (sub[1] - '0') * 10 + (sub[2] - '0');
      return http == 408 || http == 429 || (http >= 500 && http != 501);
    }
  }
  return false;
}

arrow::Status StorageErrnoError(const char* what, const std::string& path, int error) {
  if (error == ENOENT) return NotFoundError(what, " ", path, ": no such file");
  const char* name = ::strerrorname_np(error);
  return MakeError(ErrorCode::kStorageError, arrow::StatusCode::IOError, what, " ", path,
                   ": ", std::strerror(error))
      .WithDetail(std::make_shared<ErrorDetail>(
          ErrorCode::kStorageError, name != nullptr ? name : std::to_string(error)));
}

}  // namespace ampdelta

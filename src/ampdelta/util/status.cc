#include "ampdelta/util/status.h"

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

}  // namespace ampdelta

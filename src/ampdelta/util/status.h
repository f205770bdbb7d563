#pragma once

/// \file status.h
/// \brief Typed error outcomes carried inside arrow::Status.
///
/// Callers branch on an ErrorCode (commit conflict, protocol error, …) through IsError(),
/// never on message text. The code travels as an arrow::StatusDetail, so it survives
/// WithMessage() and ARROW_RETURN_NOT_OK propagation.

#include <memory>
#include <string>
#include <utility>

#include <arrow/status.h>

namespace ampdelta {

/// \brief Outcomes a caller may need to tell apart.
enum class ErrorCode : uint8_t {
  /// The Amp server broke its own protocol (gap, hash mismatch, malformed metadata).
  kProtocolError,
  /// The Amp server (or the transport to it) returned a gRPC error.
  kServerError,
  /// A reorg invalidated data the caller holds; see the message for the ranges.
  kReorgDetected,
  /// Someone else committed a conflicting change first.
  kCommitConflict,
  /// The table uses a protocol feature ampdelta does not implement.
  kUnsupportedFeature,
  /// The table's log is damaged or inconsistent.
  kCorruptLog,
  /// A conditional write found its precondition violated (object already exists).
  kPreconditionFailed,
  /// The caller's input (SQL, configuration, options) is invalid.
  kInvalidInput,
  /// The object, file or table does not exist.
  kNotFound,
  /// The object store failed (disk full, read-only, permissions, an HTTP error of a cloud
  /// store); the subcode is the errno name (`ENOSPC`), the HTTP status (`503`) or
  /// `transport`.
  kStorageError,
};

/// \brief What kind of failure an error is, for exit codes and for deciding what to
/// retry. Errors are classified here and nowhere else.
enum class ErrorClass : uint8_t {
  /// The caller's input, configuration or table path is wrong (incl. not found).
  kInvalidInput,
  /// The Amp server or the transport to it failed, or broke its protocol.
  kServer,
  /// The object store failed.
  kStorage,
  /// A concurrent writer's commit conflicts (and retrying did not help).
  kConflict,
  /// The table uses features ampdelta cannot write, or its log is damaged.
  kTable,
  /// Anything else: a defect or an unexpected failure.
  kInternal,
};

/// \brief Return the stable lower-case name of an ErrorCode.
const char* ErrorCodeName(ErrorCode code);

/// \brief arrow::StatusDetail holding an ErrorCode.
class ErrorDetail : public arrow::StatusDetail {
 public:
  static constexpr const char* kTypeId = "ampdelta::ErrorDetail";

  /// \param[in] code the outcome
  /// \param[in] subcode a finer, source-specific code (e.g. the gRPC status name
  ///   `UNAVAILABLE` of a server error); may be empty
  explicit ErrorDetail(ErrorCode code, std::string subcode = {})
      : code_(code), subcode_(std::move(subcode)) {}

  const char* type_id() const override { return kTypeId; }
  std::string ToString() const override;

  /// \brief Return the detail's code.
  ErrorCode code() const { return code_; }
  /// \brief Return the source-specific code, or an empty string.
  const std::string& subcode() const { return subcode_; }

 private:
  ErrorCode code_;
  std::string subcode_;
};

/// \brief Attach an ErrorCode (and optional subcode) to a status; OK stays OK.
arrow::Status WithErrorCode(arrow::Status status, ErrorCode code,
                            std::string subcode = {});

/// \brief Return the ErrorCode attached to a status, if any.
const ErrorDetail* GetErrorDetail(const arrow::Status& status);

/// \brief Return true when the status carries the given ErrorCode.
bool IsError(const arrow::Status& status, ErrorCode code);

/// \brief Classify an error (OK and unclassified errors are kInternal).
ErrorClass ClassifyError(const arrow::Status& status);

/// \brief Return the stable lower-case name of an ErrorClass (`invalid_input`, `server`,
/// …).
const char* ErrorClassName(ErrorClass error_class);

/// \brief Return true when retrying the operation may succeed: a server that is
/// unavailable or overloaded, a deadline, a storage request that timed out or got a
/// 408/429/5xx, a transport failure. Disk full, read-only file systems, permissions, bad
/// input, conflicts and corrupt tables are permanent.
bool IsTransientError(const arrow::Status& status);

/// \brief Return a kStorageError for a failed system call on `path`, naming the call and
/// the errno (ENOENT becomes kNotFound).
arrow::Status StorageErrnoError(const char* what, const std::string& path, int error);

/// \brief Build an error status of arrow code `base` with an ErrorCode and a message made
/// of the concatenated arguments.
template <typename... Args>
arrow::Status MakeError(ErrorCode code, arrow::StatusCode base, Args&&... args) {
  return arrow::Status::FromDetailAndArgs(base, std::make_shared<ErrorDetail>(code),
                                          std::forward<Args>(args)...);
}

/// \brief Shorthand for "object not found" (arrow::StatusCode::IOError + kNotFound).
template <typename... Args>
arrow::Status NotFoundError(Args&&... args) {
  return MakeError(ErrorCode::kNotFound, arrow::StatusCode::IOError,
                   std::forward<Args>(args)...);
}

/// \brief Shorthand for a bad-input error (arrow::StatusCode::Invalid + kInvalidInput).
template <typename... Args>
arrow::Status InvalidInputError(Args&&... args) {
  return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                   std::forward<Args>(args)...);
}

/// \brief Shorthand for a protocol error (arrow::StatusCode::IOError).
template <typename... Args>
arrow::Status ProtocolError(Args&&... args) {
  return MakeError(ErrorCode::kProtocolError, arrow::StatusCode::IOError,
                   std::forward<Args>(args)...);
}

}  // namespace ampdelta

#pragma once

/// \file server_error.h
/// \brief Turn Flight/gRPC failures into errors that name the gRPC code and the server's
/// message, e.g. `INVALID_ARGUMENT: invalid query: …`.

#include <string>

#include <arrow/status.h>

namespace ampdelta::amp {

/// \brief A gRPC failure as the server reported it.
struct GrpcError {
  /// Canonical gRPC status name (`INVALID_ARGUMENT`, `UNAVAILABLE`, …).
  std::string code;
  /// The server's message, without the transport's decorations.
  std::string message;
};

/// \brief Recover the gRPC code and message from a status returned by the Flight client.
GrpcError DescribeFlightError(const arrow::Status& status);

/// \brief Return a kServerError status `"<call> failed: CODE: message"` whose ErrorDetail
/// subcode is the gRPC code name.
arrow::Status ServerError(const arrow::Status& status, const char* call);

/// \brief Return true for gRPC codes that a retry may cure (UNAVAILABLE,
/// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED).
bool IsTransientServerError(const arrow::Status& status);

/// \brief Return true for a failure of a stream that had started (after its first
/// message): the transient codes and also INTERNAL and UNKNOWN, which is how ampd reports
/// every failure of a running query. Errors at planning (GetFlightInfo) are never in this
/// class unless transient.
bool IsRetryableMidStream(const arrow::Status& status);

}  // namespace ampdelta::amp

#include "ampdelta/amp/server_error.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <arrow/flight/types.h>

#include "ampdelta/util/status.h"

namespace ampdelta::amp {
namespace {

namespace flight = arrow::flight;

const char* FromTransportCode(flight::TransportStatusCode code) {
  switch (code) {
    case flight::TransportStatusCode::kOk:
      return "OK";
    case flight::TransportStatusCode::kUnknown:
      return "UNKNOWN";
    case flight::TransportStatusCode::kInternal:
      return "INTERNAL";
    case flight::TransportStatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case flight::TransportStatusCode::kTimedOut:
      return "DEADLINE_EXCEEDED";
    case flight::TransportStatusCode::kNotFound:
      return "NOT_FOUND";
    case flight::TransportStatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case flight::TransportStatusCode::kCancelled:
      return "CANCELLED";
    case flight::TransportStatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
    case flight::TransportStatusCode::kUnauthorized:
      return "PERMISSION_DENIED";
    case flight::TransportStatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case flight::TransportStatusCode::kUnavailable:
      return "UNAVAILABLE";
  }
  return "UNKNOWN";
}

const char* FromFlightCode(flight::FlightStatusCode code) {
  switch (code) {
    case flight::FlightStatusCode::Internal:
      return "INTERNAL";
    case flight::FlightStatusCode::TimedOut:
      return "DEADLINE_EXCEEDED";
    case flight::FlightStatusCode::Cancelled:
      return "CANCELLED";
    case flight::FlightStatusCode::Unauthenticated:
      return "UNAUTHENTICATED";
    case flight::FlightStatusCode::Unauthorized:
      return "PERMISSION_DENIED";
    case flight::FlightStatusCode::Unavailable:
      return "UNAVAILABLE";
    case flight::FlightStatusCode::Failed:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

const char* FromArrowCode(arrow::StatusCode code) {
  switch (code) {
    case arrow::StatusCode::Invalid:
    case arrow::StatusCode::TypeError:
      return "INVALID_ARGUMENT";
    case arrow::StatusCode::KeyError:
      return "NOT_FOUND";
    case arrow::StatusCode::NotImplemented:
      return "UNIMPLEMENTED";
    case arrow::StatusCode::AlreadyExists:
      return "ALREADY_EXISTS";
    case arrow::StatusCode::Cancelled:
      return "CANCELLED";
    case arrow::StatusCode::OutOfMemory:
      return "RESOURCE_EXHAUSTED";
    case arrow::StatusCode::UnknownError:
      return "UNKNOWN";
    case arrow::StatusCode::IOError:
      return "UNAVAILABLE";
    default:
      return "INTERNAL";
  }
}

// The gRPC transport decorates messages: "gRPC returned <code words> error, with message:
// <msg>" and trailing client debug context. Strip those to recover the server's words;
// the code words, when present, name the real gRPC code (e.g. "resource exhausted").
void StripTransportDecorations(std::string* message, std::string* code) {
  static constexpr std::string_view kPrefix = "gRPC returned ";
  static constexpr std::string_view kInfix = " error, with message: ";
  if (message->rfind(kPrefix, 0) == 0) {
    const size_t infix = message->find(kInfix);
    if (infix != std::string::npos) {
      std::string words = message->substr(kPrefix.size(), infix - kPrefix.size());
      for (char& c : words) {
        c = c == ' ' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
      if (!words.empty()) *code = words;
      message->erase(0, infix + kInfix.size());
    }
  }
  static constexpr std::string_view kCutMarkers[] = {
      ". gRPC client debug context:", ". Client context:", ". Detail: "};
  for (std::string_view marker : kCutMarkers) {
    const size_t at = message->find(marker);
    if (at != std::string::npos) message->erase(at);
  }
  static constexpr std::string_view kUnknownPrefix = "Flight RPC failed with message: ";
  if (message->rfind(kUnknownPrefix, 0) == 0) message->erase(0, kUnknownPrefix.size());
}

}  // namespace

GrpcError DescribeFlightError(const arrow::Status& status) {
  GrpcError error;
  if (auto transport = flight::TransportStatusDetail::Unwrap(status)) {
    error.code = FromTransportCode(transport->get().code());
    error.message = std::string(transport->get().message());
    return error;
  }
  if (auto detail = flight::FlightStatusDetail::UnwrapStatus(status)) {
    error.code = FromFlightCode(detail->code());
  } else {
    error.code = FromArrowCode(status.code());
  }
  error.message = status.message();
  StripTransportDecorations(&error.message, &error.code);
  return error;
}

arrow::Status ServerError(const arrow::Status& status, const char* call) {
  if (status.ok()) return status;
  GrpcError error = DescribeFlightError(status);
  return MakeError(ErrorCode::kServerError, status.code(), call, " failed: ", error.code,
                   ": ", error.message)
      .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kServerError, error.code));
}

bool IsTransientServerError(const arrow::Status& status) {
  return IsError(status, ErrorCode::kServerError) && IsTransientError(status);
}

}  // namespace ampdelta::amp

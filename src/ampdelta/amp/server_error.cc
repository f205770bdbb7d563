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
  // "gRPC returned <words> error, with message: …" (Arrow's transport) and "Flight
  // returned <words> error, with message: …" (a server without Arrow's status trailers,
  // as ampd's tonic): the words name the code, the rest is the server's message.
  static constexpr std::string_view kPrefixes[] = {"gRPC returned ", "Flight returned "};
  static constexpr std::string_view kInfix = " error, with message: ";
  for (std::string_view prefix : kPrefixes) {
    if (message->rfind(prefix, 0) != 0) continue;
    const size_t infix = message->find(kInfix);
    if (infix == std::string::npos) continue;
    std::string words = message->substr(prefix.size(), infix - prefix.size());
    for (char& c : words) {
      c = c == ' ' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (words == "TIMEOUT" || words == "TIMED_OUT") words = "DEADLINE_EXCEEDED";
    if (words == "UNAUTHORIZED") words = "PERMISSION_DENIED";
    if (!words.empty()) *code = words;
    message->erase(0, infix + kInfix.size());
    break;
  }
  static constexpr std::string_view kCancelled = "Flight cancelled call, with message: ";
  if (message->rfind(kCancelled, 0) == 0) {
    message->erase(0, kCancelled.size());
    *code = "CANCELLED";
  }
  static constexpr std::string_view kCutMarkers[] = {
      ". gRPC client debug context:", ". Client context:", ". Detail: "};
  for (std::string_view marker : kCutMarkers) {
    const size_t at = message->find(marker);
    if (at != std::string::npos) message->erase(at);
  }
  static constexpr std::string_view kUnknownPrefix = "Flight RPC failed with message: ";
  if (message->rfind(kUnknownPrefix, 0) == 0) message->erase(0, kUnknownPrefix.size());
  // One line: a server's multi-line message is folded, its lines joined with "; ".
  std::string folded;
  size_t begin = 0;
  while (begin <= message->size()) {
    size_t end = message->find_first_of("\r\n", begin);
    if (end == std::string::npos) end = message->size();
    std::string_view line = std::string_view(*message).substr(begin, end - begin);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
      line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    if (!line.empty()) folded += (folded.empty() ? "" : "; ") + std::string(line);
    begin = end + 1;
  }
  *message = std::move(folded);
}

}  // namespace

GrpcError DescribeFlightError(const arrow::Status& status) {
  GrpcError error;
  if (auto transport = flight::TransportStatusDetail::Unwrap(status)) {
    error.code = FromTransportCode(transport->get().code());
    error.message = std::string(transport->get().message());
    StripTransportDecorations(&error.message, &error.code);
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

bool IsRetryableMidStream(const arrow::Status& status) {
  if (IsTransientServerError(status)) return true;
  const ErrorDetail* detail = GetErrorDetail(status);
  // ampd reports every failure of a running stream as INTERNAL (a memory limit, a storage
  // hiccup, a proxy resetting the stream): the query itself was fine when it started.
  return detail != nullptr && detail->code() == ErrorCode::kServerError &&
         (detail->subcode() == "INTERNAL" || detail->subcode() == "UNKNOWN");
}

}  // namespace ampdelta::amp

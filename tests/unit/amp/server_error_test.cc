#include "ampdelta/amp/server_error.h"

#include <arrow/flight/types.h>

#include "tests/support/test_util.h"

namespace ampdelta::amp {
namespace {

namespace flight = arrow::flight;

TEST(ServerErrorTest, GrpcMappedInvalidArgumentKeepsServerMessage) {
  // What Arrow's client makes of a plain gRPC INVALID_ARGUMENT (e.g. from Amp's Rust
  // server).
  arrow::Status status = arrow::Status::Invalid(
      "gRPC returned invalid argument error, with message: invalid query: sql parser "
      "error. "
      "gRPC client debug context: UNKNOWN:Error received from peer");
  GrpcError error = DescribeFlightError(status);
  EXPECT_EQ(error.code, "INVALID_ARGUMENT");
  EXPECT_EQ(error.message, "invalid query: sql parser error");
}

TEST(ServerErrorTest, ResourceExhaustedIsRecoveredFromTheTransportWords) {
  arrow::Status status = arrow::Status::Invalid(
      "gRPC returned resource exhausted error, with message: query execution error");
  EXPECT_EQ(DescribeFlightError(status).code, "RESOURCE_EXHAUSTED");
}

TEST(ServerErrorTest, FlightStatusDetailsMapToGrpcNames) {
  EXPECT_EQ(
      DescribeFlightError(flight::MakeFlightError(flight::FlightStatusCode::Unavailable,
                                                  "connection refused"))
          .code,
      "UNAVAILABLE");
  EXPECT_EQ(DescribeFlightError(
                flight::MakeFlightError(flight::FlightStatusCode::Internal, "boom"))
                .code,
            "INTERNAL");
  EXPECT_EQ(DescribeFlightError(arrow::Status::NotImplemented("x")).code,
            "UNIMPLEMENTED");
  EXPECT_EQ(DescribeFlightError(arrow::Status::KeyError("x")).code, "NOT_FOUND");
}

TEST(ServerErrorTest, ServerErrorNamesCallCodeAndMessage) {
  arrow::Status status =
      ServerError(arrow::Status::Invalid("invalid query: empty"), "GetFlightInfo");
  EXPECT_EQ(status.message(),
            "GetFlightInfo failed: INVALID_ARGUMENT: invalid query: empty");
  EXPECT_TRUE(IsError(status, ErrorCode::kServerError));
  EXPECT_FALSE(IsTransientServerError(status));
  EXPECT_TRUE(IsTransientServerError(ServerError(
      flight::MakeFlightError(flight::FlightStatusCode::Unavailable, "down"), "DoGet")));
}

}  // namespace
}  // namespace ampdelta::amp

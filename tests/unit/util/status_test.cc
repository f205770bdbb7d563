#include "ampdelta/util/status.h"

#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

TEST(StatusTest, ErrorCodeSurvivesWithMessage) {
  arrow::Status status = ProtocolError("gap at ", 12);
  EXPECT_TRUE(IsError(status, ErrorCode::kProtocolError));
  EXPECT_EQ(status.message(), "gap at 12");
  arrow::Status wrapped = status.WithMessage("context: ", status.message());
  EXPECT_TRUE(IsError(wrapped, ErrorCode::kProtocolError));
  EXPECT_FALSE(IsError(wrapped, ErrorCode::kServerError));
}

TEST(StatusTest, SubcodeIsKept) {
  arrow::Status status = WithErrorCode(arrow::Status::IOError("down"),
                                       ErrorCode::kServerError, "UNAVAILABLE");
  const ErrorDetail* detail = GetErrorDetail(status);
  ASSERT_NE(detail, nullptr);
  EXPECT_EQ(detail->subcode(), "UNAVAILABLE");
  EXPECT_EQ(detail->ToString(), "server_error/UNAVAILABLE");
}

TEST(StatusTest, OkStaysOkAndPlainErrorsHaveNoCode) {
  EXPECT_TRUE(WithErrorCode(arrow::Status::OK(), ErrorCode::kCorruptLog).ok());
  EXPECT_EQ(GetErrorDetail(arrow::Status::Invalid("x")), nullptr);
}

}  // namespace
}  // namespace ampdelta

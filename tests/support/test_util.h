#pragma once

/// \file test_util.h
/// \brief Assertion helpers for arrow::Status / arrow::Result in GoogleTest.

#include <cstdlib>
#include <string>

#include <arrow/result.h>
#include <arrow/status.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ampdelta/util/status.h"

#define AMPDELTA_CONCAT_INNER(a, b) a##b
#define AMPDELTA_CONCAT(a, b) AMPDELTA_CONCAT_INNER(a, b)

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const ::arrow::Status _st = ::arrow::ToStatus(expr);      \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st.ToString(); \
  } while (false)

#define EXPECT_OK(expr)                                       \
  do {                                                        \
    const ::arrow::Status _st = ::arrow::ToStatus(expr);      \
    EXPECT_TRUE(_st.ok()) << #expr << ": " << _st.ToString(); \
  } while (false)

#define AMPDELTA_ASSIGN_OR_FAIL_IMPL(result, lhs, rexpr)                    \
  auto result = (rexpr);                                                    \
  ASSERT_TRUE(result.ok()) << #rexpr << ": " << result.status().ToString(); \
  lhs = std::move(result).ValueUnsafe();

#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  AMPDELTA_ASSIGN_OR_FAIL_IMPL(AMPDELTA_CONCAT(_result_, __COUNTER__), lhs, rexpr)

namespace ampdelta::testing {

/// \brief Match a non-OK status (or Result) whose message contains `substring`.
MATCHER_P(StatusHasMessage, substring,
          std::string("is an error whose message contains \"") + substring + "\"") {
  const arrow::Status status = arrow::ToStatus(arg);
  if (status.ok()) {
    *result_listener << "status is OK";
    return false;
  }
  *result_listener << "status is " << status.ToString();
  return status.message().find(substring) != std::string::npos;
}

/// \brief Match a status (or Result) carrying the given ampdelta ErrorCode.
MATCHER_P(HasErrorCode, code, std::string("carries error code ") + ErrorCodeName(code)) {
  const arrow::Status status = arrow::ToStatus(arg);
  *result_listener << "status is " << status.ToString();
  return IsError(status, code);
}

/// \brief Return the repository root, for fixtures: $AMPDELTA_SOURCE_DIR when set, else
/// the source tree the tests were built from.
inline std::string SourceDir() {
  const char* dir = std::getenv("AMPDELTA_SOURCE_DIR");
  return dir != nullptr ? dir : AMPDELTA_SOURCE_DIR;
}

}  // namespace ampdelta::testing

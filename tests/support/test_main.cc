// GoogleTest entry point shared by every test program: Arrow's runtime set-up first.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ampdelta/util/runtime.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleMock(&argc, argv);
  const arrow::Status status = ampdelta::InitializeRuntime();
  if (!status.ok()) {
    fprintf(stderr, "runtime initialisation failed: %s\n", status.ToString().c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}

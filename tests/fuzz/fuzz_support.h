#pragma once

/// \file fuzz_support.h
/// \brief What every libFuzzer target of tests/fuzz shares: one-time set-up and a check
/// that turns a broken property of the code under test into a recorded crash.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "ampdelta/util/logging.h"
#include "ampdelta/util/runtime.h"

namespace ampdelta::fuzz {

/// \brief Register Arrow's compute kernels and silence the library's log (warnings about
/// damaged input are the point here and would only slow the fuzzer down).
inline void Initialize() {
  if (!InitializeRuntime().ok()) {
    std::fprintf(stderr, "fuzz: runtime initialisation failed\n");
    std::abort();
  }
  log::SetLevel(log::Level::kOff);
}

/// \brief View the fuzzer's input as text.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace ampdelta::fuzz

/// libFuzzer's start-up hook, run once before the first input. Defined here because each
/// target is one source file including this header.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ampdelta::fuzz::Initialize();
  return 0;
}

/// Abort (libFuzzer records the input) when a property the library promises does not
/// hold, e.g. that what it parsed encodes and parses back to the same value.
#define AMPDELTA_FUZZ_CHECK(condition, what)                                          \
  do {                                                                                \
    if (!(condition)) {                                                               \
      std::fprintf(stderr, "fuzz check failed: %s (%s) at %s:%d\n", what, #condition, \
                   __FILE__, __LINE__);                                               \
      std::abort();                                                                   \
    }                                                                                 \
  } while (false)

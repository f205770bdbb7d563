# INTERFACE target enabling the sanitizers named in AMPDELTA_SANITIZE on everything that links it.
add_library(ampdelta_sanitizers INTERFACE)
if(AMPDELTA_SANITIZE)
  set(_flags -fsanitize=${AMPDELTA_SANITIZE} -fno-omit-frame-pointer)
  if(AMPDELTA_SANITIZE MATCHES "undefined")
    list(APPEND _flags -fno-sanitize-recover=all)
  endif()
  target_compile_options(ampdelta_sanitizers INTERFACE ${_flags})
  target_link_options(ampdelta_sanitizers INTERFACE ${_flags})
endif()

# Fuzzing: coverage instrumentation on every library, test and tool; the fuzz executables
# add -fsanitize=fuzzer at link time (tests/fuzz/CMakeLists.txt), everything else gets the
# sanitizer runtime's no-op coverage hooks. So one build serves the tests and the fuzzers.
if(AMPDELTA_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "AMPDELTA_BUILD_FUZZERS needs clang (the `asan` preset uses clang++-14)")
  endif()
  target_compile_options(ampdelta_sanitizers INTERFACE -fsanitize=fuzzer-no-link)
endif()

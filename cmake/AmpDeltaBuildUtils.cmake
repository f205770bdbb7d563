# Helpers that keep module, test and benchmark definitions one call each.

# ampdelta_add_module(NAME SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Creates the static library ampdelta_<NAME>. Layering is enforced by what each module links.
function(ampdelta_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  set(target ampdelta_${name})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(ampdelta::${name} ALIAS ${target})
  target_include_directories(${target} PUBLIC
    "${PROJECT_SOURCE_DIR}/src" "${PROJECT_BINARY_DIR}/generated")
  target_link_libraries(${target}
    PUBLIC ${ARG_PUBLIC_DEPS}
    PRIVATE ${ARG_PRIVATE_DEPS} ampdelta_warnings ampdelta_sanitizers)
  # Sanitizer flags must reach the final link of everything using the library.
  target_link_libraries(${target} INTERFACE ampdelta_sanitizers)
endfunction()

# ampdelta_add_test(NAME SOURCES ... DEPS ... LABELS ...)
function(ampdelta_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} ampdelta_test_support GTest::gmock
    ampdelta_warnings ampdelta_sanitizers)
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${AMPDELTA_TEST_ENV}"
    DISCOVERY_TIMEOUT 60
    DISCOVERY_MODE PRE_TEST)
endfunction()

# ampdelta_add_benchmark(NAME SOURCES ... DEPS ...)
function(ampdelta_add_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} ampdelta_warnings ampdelta_sanitizers)
endfunction()

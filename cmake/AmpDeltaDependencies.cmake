# Third-party dependencies as imported targets.
#
# Arrow C++ comes from the pinned pyarrow wheel (docs: ../shared/spec/arrow-sdk.md). The wheel ships
# headers and versioned shared libraries but no CMake package, so ArrowSdk.cmake creates imported
# targets named like Arrow's own packages; a system Arrow found through find_package can replace it.
if(AMPDELTA_BUILD_PYTHON AND NOT AMPDELTA_ARROW_SDK_ROOT
   AND NOT EXISTS "${CMAKE_SOURCE_DIR}/.deps/pyarrow/pyarrow/include/arrow/api.h")
  # `pip install .` in a checkout without `make setup`: the Arrow C++ SDK of the pyarrow 26
  # in the build environment (CPython 3.11+), found the way pyarrow documents for
  # extensions. Otherwise every build, the wheels' included, uses make setup's SDK. The
  # wheel carries the libraries either way (python/CMakeLists.txt).
  include(PyarrowSdk)
  ampdelta_find_pyarrow_sdk(AMPDELTA_ARROW_SDK_ROOT)
  set(_ampdelta_arrow_version "26")
else()
  set(AMPDELTA_ARROW_SDK_ROOT "${CMAKE_SOURCE_DIR}/.deps/pyarrow/pyarrow"
      CACHE PATH "Root of the Arrow C++ SDK unpacked from the pyarrow wheel")
  set(_ampdelta_arrow_version "26.0.1")
endif()

if(EXISTS "${AMPDELTA_ARROW_SDK_ROOT}/include/arrow/api.h")
  include(ArrowSdk)
  ampdelta_import_arrow_sdk("${AMPDELTA_ARROW_SDK_ROOT}" "${_ampdelta_arrow_version}")
else()
  find_package(Arrow 26 CONFIG REQUIRED)
  find_package(ArrowCompute CONFIG REQUIRED)
  find_package(ArrowAcero CONFIG REQUIRED)
  find_package(Parquet CONFIG REQUIRED)
  find_package(ArrowDataset CONFIG REQUIRED)
  find_package(ArrowFlight CONFIG REQUIRED)
endif()

find_package(Threads REQUIRED)
# libcurl is Debian's GnuTLS build (see storage/http_client.h for why not OpenSSL).
find_package(CURL REQUIRED)
find_package(pugixml REQUIRED)
# GnuTLS signs Google service-account tokens (RS256).
find_package(GnuTLS REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
# Nettle (Debian's nettle-dev, which GnuTLS depends on) hashes: SHA-256 and HMAC-SHA256.
find_library(NETTLE_LIBRARY nettle REQUIRED)
find_path(NETTLE_INCLUDE_DIR nettle/sha2.h REQUIRED)
if(NOT TARGET Nettle::nettle)
  add_library(Nettle::nettle UNKNOWN IMPORTED)
  set_target_properties(Nettle::nettle PROPERTIES
    IMPORTED_LOCATION "${NETTLE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NETTLE_INCLUDE_DIR}")
endif()
# CRoaring (Debian's libroaring-dev) ships no CMake package: import it by hand.
find_library(ROARING_LIBRARY roaring REQUIRED)
find_path(ROARING_INCLUDE_DIR roaring/roaring.h REQUIRED)
if(NOT TARGET Roaring::roaring)
  add_library(Roaring::roaring UNKNOWN IMPORTED)
  set_target_properties(Roaring::roaring PROPERTIES
    IMPORTED_LOCATION "${ROARING_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ROARING_INCLUDE_DIR}")
endif()
# libmicrohttpd (Debian's libmicrohttpd-dev, GnuTLS build) serves the CLI's /metrics,
# /healthz and /readyz.
if(AMPDELTA_BUILD_TOOLS)
  find_library(MICROHTTPD_LIBRARY microhttpd REQUIRED)
  find_path(MICROHTTPD_INCLUDE_DIR microhttpd.h REQUIRED)
  if(NOT TARGET MicroHTTPD::microhttpd)
    add_library(MicroHTTPD::microhttpd UNKNOWN IMPORTED)
    set_target_properties(MicroHTTPD::microhttpd PROPERTIES
      IMPORTED_LOCATION "${MICROHTTPD_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${MICROHTTPD_INCLUDE_DIR}")
  endif()
endif()
if(AMPDELTA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

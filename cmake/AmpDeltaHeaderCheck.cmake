# Every header under src/ampdelta compiles on its own, included twice (house-style.md: headers
# are self-contained and guarded). `cmake --build <dir> --target ampdelta_header_check`;
# make test runs it. One generated translation unit per header; not part of `all`.
file(GLOB_RECURSE _ampdelta_headers RELATIVE "${PROJECT_SOURCE_DIR}/src"
     CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/ampdelta/*.h")
set(_ampdelta_header_units)
foreach(header IN LISTS _ampdelta_headers)
  string(MAKE_C_IDENTIFIER "${header}" unit)
  set(path "${PROJECT_BINARY_DIR}/header_check/${unit}.cc")
  set(text "#include \"${header}\"\n#include \"${header}\"\n")
  if(EXISTS "${path}")
    file(READ "${path}" existing)
  else()
    set(existing "")
  endif()
  if(NOT existing STREQUAL text)
    file(WRITE "${path}" "${text}")
  endif()
  list(APPEND _ampdelta_header_units "${path}")
endforeach()
add_library(ampdelta_header_check OBJECT EXCLUDE_FROM_ALL ${_ampdelta_header_units})
target_link_libraries(ampdelta_header_check PRIVATE
  ampdelta::loader ampdelta::devserver ampdelta_warnings
  ArrowFlight::arrow_flight_shared ArrowCompute::arrow_compute_shared
  ArrowAcero::arrow_acero_shared Parquet::parquet_shared nlohmann_json::nlohmann_json
  Roaring::roaring Nettle::nettle CURL::libcurl pugixml::pugixml GnuTLS::GnuTLS ZLIB::ZLIB)

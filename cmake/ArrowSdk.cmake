# Import the Arrow C++ SDK unpacked from a pyarrow wheel as IMPORTED targets.
#
# The wheel's libraries carry the SONAME suffix major*100+minor (2600 for 26.x) and RUNPATH $ORIGIN,
# and there are no unversioned symlinks. Imported include directories are treated as SYSTEM, so our
# -Werror is not tripped by Arrow headers.
function(_ampdelta_arrow_lib target file)
  set(options)
  set(multi DEPS)
  cmake_parse_arguments(ARG "${options}" "" "${multi}" ${ARGN})
  set(path "${_AMPDELTA_SDK}/${file}")
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "Arrow SDK library missing: ${path} (run `make setup`)")
  endif()
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${path}"
    IMPORTED_SONAME "${file}"
    INTERFACE_INCLUDE_DIRECTORIES "${_AMPDELTA_SDK}/include"
    INTERFACE_LINK_LIBRARIES "${ARG_DEPS}")
endfunction()

function(ampdelta_import_arrow_sdk sdk_root expected_version)
  set(config_h "${sdk_root}/include/arrow/util/config.h")
  file(STRINGS "${config_h}" version_line REGEX "#define ARROW_VERSION_STRING ")
  string(REGEX MATCH "\"([0-9.]+)\"" _ "${version_line}")
  set(found_version "${CMAKE_MATCH_1}")
  # "26.0.1" pins a release; "26" accepts any 26.x (the Python extension's pyarrow).
  string(REPLACE "." "\\." expected_regex "${expected_version}")
  if(NOT found_version MATCHES "^${expected_regex}(\\.|$)")
    message(FATAL_ERROR
      "Arrow SDK at ${sdk_root} is ${found_version}; ampdelta pins ${expected_version} (run `make setup`)")
  endif()
  file(READ "${config_h}" config_text)
  foreach(feature ARROW_FLIGHT ARROW_PARQUET ARROW_S3 ARROW_GCS ARROW_AZURE)
    if(NOT config_text MATCHES "#define ${feature}\n")
      message(FATAL_ERROR "Arrow SDK at ${sdk_root} was built without ${feature}")
    endif()
  endforeach()
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ "${found_version}")
  math(EXPR so_suffix "${CMAKE_MATCH_1} * 100 + ${CMAKE_MATCH_2}")
  set(_AMPDELTA_SDK "${sdk_root}")

  _ampdelta_arrow_lib(Arrow::arrow_shared "libarrow.so.${so_suffix}")
  _ampdelta_arrow_lib(ArrowCompute::arrow_compute_shared "libarrow_compute.so.${so_suffix}"
    DEPS Arrow::arrow_shared)
  _ampdelta_arrow_lib(ArrowAcero::arrow_acero_shared "libarrow_acero.so.${so_suffix}"
    DEPS ArrowCompute::arrow_compute_shared)
  _ampdelta_arrow_lib(Parquet::parquet_shared "libparquet.so.${so_suffix}"
    DEPS Arrow::arrow_shared)
  _ampdelta_arrow_lib(ArrowDataset::arrow_dataset_shared "libarrow_dataset.so.${so_suffix}"
    DEPS ArrowAcero::arrow_acero_shared Parquet::parquet_shared)
  _ampdelta_arrow_lib(ArrowFlight::arrow_flight_shared "libarrow_flight.so.${so_suffix}"
    DEPS Arrow::arrow_shared)
  # The wheel's libraries depend on each other through RUNPATH $ORIGIN; tell the linker where.
  set_property(TARGET Arrow::arrow_shared APPEND PROPERTY
    INTERFACE_LINK_OPTIONS "LINKER:-rpath-link,${sdk_root}")
  message(STATUS "Arrow C++ ${found_version} from ${sdk_root}")
endfunction()

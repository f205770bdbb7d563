# Locate the Arrow C++ SDK inside the installed pyarrow, as pyarrow documents for building
# extensions against its wheels: pyarrow.get_include(), get_library_dirs(), and
# create_library_symlinks() (unversioned names for linkers that want them; we link the
# versioned files, so a read-only site-packages is not an error).
function(ampdelta_find_pyarrow_sdk out_var)
  # Development.SABIModule (CMake 3.26+): the abi3 extension for CPython 3.12+.
  find_package(Python 3.10 COMPONENTS Interpreter Development.Module
               OPTIONAL_COMPONENTS Development.SABIModule REQUIRED)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c [=[
import os, pyarrow
try:
    pyarrow.create_library_symlinks()
except OSError:
    pass
print(pyarrow.__version__)
print(os.path.dirname(pyarrow.get_include()))
print(";".join(pyarrow.get_library_dirs()))
]=]
    OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the Python extension needs pyarrow 26 in ${Python_EXECUTABLE}: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  list(GET lines 0 version)
  list(GET lines 1 root)
  if(NOT version MATCHES "^26\\.")
    message(FATAL_ERROR "pyarrow ${version} found in ${Python_EXECUTABLE}; ampdelta's Python package builds against pyarrow 26.x")
  endif()
  message(STATUS "pyarrow ${version} at ${root}")
  set(${out_var} "${root}" PARENT_SCOPE)
endfunction()

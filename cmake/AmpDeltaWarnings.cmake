# INTERFACE target carrying the project's warning set (house-style.md §4).
add_library(ampdelta_warnings INTERFACE)
target_compile_options(ampdelta_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
  -Wold-style-cast -Wcast-qual -Wformat=2 -Wimplicit-fallthrough
  -Wmissing-declarations -Wundef)
if(AMPDELTA_WERROR)
  target_compile_options(ampdelta_warnings INTERFACE -Werror)
endif()
# GCC 12's -Wrestrict misfires on `"text" + std::string` once inlined at -O2 and above
# (GCC bug 105329, fixed in GCC 13): pages of notes about 2^63-byte copies in a release
# build, none of them real.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(ampdelta_warnings INTERFACE -Wno-restrict)
endif()

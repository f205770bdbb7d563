# INTERFACE target carrying the project's warning set (house-style.md §4).
add_library(ampdelta_warnings INTERFACE)
target_compile_options(ampdelta_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
  -Wold-style-cast -Wcast-qual -Wformat=2 -Wimplicit-fallthrough
  -Wmissing-declarations -Wundef)
if(AMPDELTA_WERROR)
  target_compile_options(ampdelta_warnings INTERFACE -Werror)
endif()

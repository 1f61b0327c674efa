# modules.cmake - one static library per folder of src/, with the layering
# enforced by the build: a module compiles against an include view
# (build/include/<module>/) that holds links to its own folder and to the
# folders of the modules below it, and nothing else, so `#include
# "render/render.h"` from admit/ fails with "No such file or directory".
#
# tessera_module(NAME [DEPS module...] [LIBS lib...] [EXTRA source...])
#   NAME  the folder src/NAME; the library is tessera_NAME
#   DEPS  the modules directly below it; their own DEPS come along
#   LIBS  outside libraries its files use
# tessera_modules_done() writes build/modules.txt ("name: deps", the table
# tests/cli/layering.sh compares with docs/ARCHITECTURE.md) and defines
# tessera_all (every module, with the whole src/ visible) for the command,
# the tests and the fuzz targets.

set_property(GLOBAL PROPERTY TESSERA_MODULES "")

function(tessera__view name closure)
  set(view ${CMAKE_BINARY_DIR}/include/${name})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view})
  foreach(m ${closure})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${m} ${view}/${m} SYMBOLIC)
  endforeach()
  set(TESSERA_VIEW ${view} PARENT_SCOPE)
endfunction()

function(tessera_module name)
  cmake_parse_arguments(M "" "" "DEPS;LIBS;EXTRA" ${ARGN})
  set(closure ${name})
  foreach(d ${M_DEPS})
    get_property(below GLOBAL PROPERTY TESSERA_CLOSURE_${d})
    if(NOT below)
      message(FATAL_ERROR "module ${name}: '${d}' is not a module declared before it")
    endif()
    list(APPEND closure ${below})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY TESSERA_CLOSURE_${name} ${closure})
  set_property(GLOBAL APPEND PROPERTY TESSERA_MODULES ${name})
  string(REPLACE ";" " " deps_text "${M_DEPS}")
  set_property(GLOBAL APPEND PROPERTY TESSERA_TABLE "${name}: ${deps_text}")

  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.c)
  add_library(tessera_${name} STATIC ${sources} ${M_EXTRA})
  tessera__view(${name} "${closure}")
  target_include_directories(tessera_${name} PRIVATE ${TESSERA_VIEW})
  foreach(d ${M_DEPS})
    target_link_libraries(tessera_${name} PRIVATE tessera_${d})
  endforeach()
  # outside libraries are public: a header may include theirs
  target_link_libraries(tessera_${name} PUBLIC ${M_LIBS})
endfunction()

function(tessera_modules_done)
  get_property(modules GLOBAL PROPERTY TESSERA_MODULES)
  get_property(table GLOBAL PROPERTY TESSERA_TABLE)
  string(REPLACE ";" "\n" table_text "${table}")
  file(WRITE ${CMAKE_BINARY_DIR}/modules.txt "${table_text}\n")
  add_library(tessera_all INTERFACE)
  target_include_directories(tessera_all INTERFACE ${CMAKE_SOURCE_DIR}/src)
  # the top module first: a static library must come before those it uses
  list(REVERSE modules)
  foreach(m ${modules})
    target_link_libraries(tessera_all INTERFACE tessera_${m})
  endforeach()
endfunction()

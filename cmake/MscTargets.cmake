# Project-wide flags for our own code: warnings are errors; third-party headers come in as SYSTEM.
# -Wno-restrict: GCC 12 reports false positives in std::string operator+ at -O3 (GCC PR 105329).
set(MSC_WARNING_FLAGS -Wall -Wextra -Wpedantic -Werror -Wno-unused-parameter)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND MSC_WARNING_FLAGS -Wno-restrict)
endif()

if(MSC_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(MSC_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# msc_library(NAME SOURCES ... DEPS ...): one library per folder, headers under the repo root.
function(msc_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE ${MSC_WARNING_FLAGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

function(msc_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${MSC_WARNING_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  if(MSC_STATIC_DEPS)
    # cmake/MscStaticDeps.cmake: libstdc++ too, and no NEEDED entry for a library nothing uses.
    target_link_options(${name} PRIVATE -static-libstdc++ -static-libgcc LINKER:--as-needed)
  endif()
  # Installed as <prefix>/bin/<tool>, beside <prefix>/share/megascale/stdlib (driver's default) and
  # <prefix>/lib (the worker libraries the Python package loads).
  install(TARGETS ${name} RUNTIME DESTINATION bin COMPONENT tools)
endfunction()

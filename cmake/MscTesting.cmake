include(GoogleTest)
# msc_unit_test(NAME SOURCES ... DEPS ... [LOCKS ...] [SERIAL]): a GoogleTest binary whose tests
# ctest lists one by one. LOCKS names machine-wide state the tests change (one name, e.g. "machine-state"); ctest
# never runs two tests holding the same lock at once. SERIAL runs each test alone (timing-sensitive
# tests, e.g. uprobe latencies).
function(msc_unit_test name)
  cmake_parse_arguments(ARG "SERIAL" "" "SOURCES;DEPS;LOCKS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${MSC_WARNING_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE MSC_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                              MSC_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/unittests)
  # Each test binary has a node ledger of its own (executor/claims/NodeClaims.h): its admissions are
  # judged against each other, not against a lit test's or another binary's running meanwhile.
  set(properties LABELS unit ENVIRONMENT "MSCALE_CLAIMS_DIR=${PROJECT_BINARY_DIR}/test/claims/${name}")
  if(ARG_LOCKS)
    list(APPEND properties RESOURCE_LOCK "${ARG_LOCKS}")
  endif()
  if(ARG_SERIAL)
    list(APPEND properties RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
endfunction()

# msc_fuzzer(NAME SOURCES ... DEPS ...): a libFuzzer target (only in the MSC_FUZZ build).
function(msc_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${MSC_WARNING_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
endfunction()

# msc_benchmark(NAME SOURCES ... DEPS ...): a Google Benchmark binary in build/bench.
function(msc_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${MSC_WARNING_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  target_compile_definitions(${name} PRIVATE MSC_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endfunction()

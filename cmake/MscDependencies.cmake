# Every dependency is a Debian package installed by scripts/setup.sh; nothing is downloaded here.
find_package(PkgConfig REQUIRED)

# LLVM Support only (command line, YAML I/O, SourceMgr). LLVM is built without exceptions but
# with RTTI; we do not copy its cxxflags because the ANTLR runtime needs exceptions.
find_package(LLVM 16 CONFIG REQUIRED PATHS /usr/lib/llvm-16/lib/cmake/llvm NO_DEFAULT_PATH)
add_library(msc_llvm_support INTERFACE)
target_include_directories(msc_llvm_support SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(msc_llvm_support INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(msc_llvm_support INTERFACE LLVMSupport)
set(MSC_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})

# ANTLR 4.7.2 tool generates code that the 4.9 runtime accepts; the package exports no include dirs.
find_package(antlr4-runtime 4.9 CONFIG REQUIRED)
find_program(ANTLR4_TOOL antlr4 REQUIRED)
add_library(msc_antlr_runtime INTERFACE)
target_include_directories(msc_antlr_runtime SYSTEM INTERFACE ${ANTLR4_INCLUDE_DIR})
target_link_libraries(msc_antlr_runtime INTERFACE antlr4_shared uuid)

find_package(Boost 1.74 REQUIRED)
find_package(Protobuf REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf)
pkg_check_modules(LIBURING REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(IBVERBS REQUIRED IMPORTED_TARGET libibverbs)
# The executor's log goes to the journal (sd_journal_send, with the contract as a field) under systemd.
pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
find_package(Threads REQUIRED)
find_package(GTest REQUIRED)
if(MSC_BUILD_BENCH AND NOT MSC_FUZZ)
  find_package(benchmark REQUIRED)
endif()

# The CUDA driver API headers only: libcuda.so.1 is loaded with dlopen at run time.
set(MSC_CUDA_INCLUDE_DIR /usr/local/cuda/include CACHE PATH "Directory holding cuda.h")
find_package(Python3 REQUIRED COMPONENTS Interpreter)

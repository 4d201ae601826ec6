// The CUDA entry points mscale-trace probes: one row per function, with its id (the bpf_cookie of
// its probes), the library that exports it, what kind of call it is and where its stream and size
// arguments live at entry.
#pragma once

#include "bpf/cuda_trace.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>

namespace msc::trace {

enum class CudaLibrary : uint8_t { Driver, Runtime }; // libcuda.so.1, libcudart.so.*

enum class CallKind : uint8_t {
  Launch,    // enqueues a kernel; should return in microseconds
  AsyncCopy, // enqueues a copy; blocking here is an implicit synchronisation
  SyncCopy,  // synchronous by definition
  Sync,      // waits for the device on purpose
  Alloc,
  Free,
};

struct CudaFunction {
  uint32_t id;
  llvm::StringRef name;
  CudaLibrary library;
  CallKind kind;
  msc_arg_spec args;
};

llvm::ArrayRef<CudaFunction> cudaFunctions();
const CudaFunction &cudaFunction(uint32_t id);
std::optional<uint32_t> cudaFunctionId(llvm::StringRef name);
llvm::StringRef callKindName(CallKind kind);
// Calls that wait for the device (Sync, SyncCopy): their latency is what a trace is for, and they
// are rare enough that a return probe on each costs nothing that matters.
bool isSynchronising(CallKind kind);

} // namespace msc::trace

#include "bpf/CudaFunctions.h"

#include <cuda.h>

#include <cassert>
#include <cstddef>

namespace msc::trace {
namespace {

// cuLaunchKernelEx(const CUlaunchConfig *config, ...): the stream is a field of *config.
constexpr int32_t kLaunchConfigStreamOffset = offsetof(CUlaunchConfig, hStream);
static_assert(kLaunchConfigStreamOffset == 32, "CUlaunchConfig layout changed");

constexpr msc_arg_spec args(uint8_t stream, uint8_t bytes, int32_t deref = -1) { return {stream, bytes, deref}; }

// Slots follow the x86-64 SysV ABI: 1..6 in registers, 7.. on the stack. cuLaunchKernel's hStream
// is its 9th parameter (slot 9); cudaLaunchKernel passes two dim3 by value in two registers each,
// so its stream (6th parameter) lands in slot 8.
const CudaFunction kFunctions[] = {
    {0, "cuLaunchKernel", CudaLibrary::Driver, CallKind::Launch, args(9, 0)},
    {1, "cuLaunchKernelEx", CudaLibrary::Driver, CallKind::Launch, args(1, 0, kLaunchConfigStreamOffset)},
    {2, "cuMemcpyAsync", CudaLibrary::Driver, CallKind::AsyncCopy, args(4, 3)},
    {3, "cuMemcpyHtoDAsync_v2", CudaLibrary::Driver, CallKind::AsyncCopy, args(4, 3)},
    {4, "cuMemcpyDtoHAsync_v2", CudaLibrary::Driver, CallKind::AsyncCopy, args(4, 3)},
    {5, "cuMemcpyDtoDAsync_v2", CudaLibrary::Driver, CallKind::AsyncCopy, args(4, 3)},
    {6, "cuMemcpy", CudaLibrary::Driver, CallKind::SyncCopy, args(0, 3)},
    {7, "cuMemcpyHtoD_v2", CudaLibrary::Driver, CallKind::SyncCopy, args(0, 3)},
    {8, "cuMemcpyDtoH_v2", CudaLibrary::Driver, CallKind::SyncCopy, args(0, 3)},
    {9, "cuMemcpyDtoD_v2", CudaLibrary::Driver, CallKind::SyncCopy, args(0, 3)},
    {10, "cuStreamSynchronize", CudaLibrary::Driver, CallKind::Sync, args(1, 0)},
    {11, "cuCtxSynchronize", CudaLibrary::Driver, CallKind::Sync, args(0, 0)},
    {12, "cuEventSynchronize", CudaLibrary::Driver, CallKind::Sync, args(0, 0)},
    {13, "cuMemAlloc_v2", CudaLibrary::Driver, CallKind::Alloc, args(0, 2)},
    {14, "cuMemFree_v2", CudaLibrary::Driver, CallKind::Free, args(0, 0)},
    {15, "cudaLaunchKernel", CudaLibrary::Runtime, CallKind::Launch, args(8, 0)},
};
static_assert(sizeof(kFunctions) / sizeof(kFunctions[0]) <= MSC_TRACE_MAX_FN);

} // namespace

llvm::ArrayRef<CudaFunction> cudaFunctions() { return kFunctions; }

const CudaFunction &cudaFunction(uint32_t id) {
  assert(id < std::size(kFunctions) && kFunctions[id].id == id);
  return kFunctions[id];
}

std::optional<uint32_t> cudaFunctionId(llvm::StringRef name) {
  for (const CudaFunction &f : kFunctions)
    if (f.name == name)
      return f.id;
  return std::nullopt;
}

bool isSynchronising(CallKind kind) { return kind == CallKind::Sync || kind == CallKind::SyncCopy; }

llvm::StringRef callKindName(CallKind kind) {
  switch (kind) {
  case CallKind::Launch: return "launch";
  case CallKind::AsyncCopy: return "async-copy";
  case CallKind::SyncCopy: return "sync-copy";
  case CallKind::Sync: return "sync";
  case CallKind::Alloc: return "alloc";
  case CallKind::Free: return "free";
  }
  return "?";
}

} // namespace msc::trace

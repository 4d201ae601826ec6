// Kernel log lines that say something about the node's hardware, sorted into classes. Pure: the
// sampler (health/Sampler.h) reads /dev/kmsg (or a recorded file) and counts what this returns.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <optional>

namespace msc::health {

struct LogClass {
  const char *name; // "nvidia-xid-fatal", "nvidia-xid", "edac-ue", "edac-ce", "nvme-io-error", "mlx5-fatal", "mlx5-error"
  bool fatal;       // the node is failed (not placeable) while the kernel still holds such a line
};

// The class of one kernel log message, or nullopt for a line about something else. `line` may
// carry /dev/kmsg's record prefix ("3,1234,5678,-;") or not.
std::optional<LogClass> classifyKernelLogLine(llvm::StringRef line);

// The message of a /dev/kmsg record without its prefix; other lines unchanged.
llvm::StringRef kernelLogMessage(llvm::StringRef line);

// NVIDIA Xid codes that take a GPU out of service until it is reset or repaired (double-bit ECC,
// micro-controller halt, row-remap failure, NVLink error, fallen off the bus, uncontained ECC, GSP).
bool isFatalXid(unsigned xid);

} // namespace msc::health

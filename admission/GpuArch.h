// Facts of NVIDIA GPU architectures that topologies do not carry, by compute capability.
#pragma once

#include <string>

namespace msc::admission {

struct SmPartitioning {
  unsigned minSms = 0;   // smallest green-context partition
  unsigned alignment = 0; // partitions are multiples of this
};

// The CUDA driver's documented split granularity of cuDevSmResourceSplitByCount; the executor
// reads the live values (minSmPartitionSize, smCoscheduledAlignment) from the driver instead.
// Returns {0, 0} for an unknown capability.
SmPartitioning smPartitioning(int ccMajor, int ccMinor);

// The earliest compute capability (major*10+minor) with a numeric format, 0 for unknown names.
// bf16 and tf32: Ampere (8.0); fp8: Ada/Hopper (8.9); int8 dp4a: 6.1; fp16 arithmetic: 5.3.
unsigned minCapabilityFor(const std::string &precision);

// SMs that `slices` of a GPU divided into `division` equal slices hold: each slice is the
// GPU's share rounded down to the partition alignment. Lowering and admission both use this.
unsigned smsForSlices(unsigned smCount, unsigned division, unsigned slices, SmPartitioning part);

} // namespace msc::admission

#include "admission/GpuArch.h"

namespace msc::admission {

SmPartitioning smPartitioning(int ccMajor, int ccMinor) {
  (void)ccMinor;
  if (ccMajor >= 9)
    return {8, 8};
  if (ccMajor == 8)
    return {4, 2};
  if (ccMajor == 7)
    return {2, 2};
  if (ccMajor == 6)
    return {1, 1};
  return {0, 0};
}

unsigned minCapabilityFor(const std::string &precision) {
  if (precision == "fp64" || precision == "fp32")
    return 10;
  if (precision == "fp16")
    return 53;
  if (precision == "int8")
    return 61;
  if (precision == "bf16" || precision == "tf32")
    return 80;
  if (precision == "fp8")
    return 89;
  return 0;
}

unsigned smsForSlices(unsigned smCount, unsigned division, unsigned slices, SmPartitioning part) {
  if (division == 0)
    return 0;
  unsigned perSlice = smCount / division;
  if (part.alignment > 1)
    perSlice -= perSlice % part.alignment;
  return perSlice * slices;
}

} // namespace msc::admission

// Text forms of IR values, shared by the IR printer and by diagnostics that quote values.
#pragma once

#include "ir/IR.h"

#include <string>

namespace msc::ir {

std::string formatValue(int64_t v);
std::string formatValue(bool v);
std::string formatValue(const std::string &v); // quoted
std::string formatValue(double v);
std::string formatValue(Bytes v);
std::string formatValue(Nanoseconds v);
std::string formatValue(MilliCelsius v);
std::string formatValue(PartsPerMillion v);
std::string formatValue(BitsPerSecond v);
std::string formatValue(const std::vector<uint32_t> &cpus); // "[2..5, 8]"
std::string formatValue(const CpuCores &cpus);              // the list, or "4 local"
std::string formatValue(const msc::PciBus &v);
std::string formatValue(const GpuRef &v);
std::string formatValue(const RdmaPortRef &v);
std::string formatValue(const HugepagePool &v);
std::string formatValue(const RecoveryPoint &v);
std::string formatValue(const std::vector<std::string> &v);
std::string formatValue(const LeadTime &v);  // "auto" or the duration
std::string formatValue(const CountRange &v); // "4", or "2..4"
std::string formatValue(const PhaseWhen &v); // "worker", "every(500 steps, for = 20 steps)", "37min..42min"

} // namespace msc::ir

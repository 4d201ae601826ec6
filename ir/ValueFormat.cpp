#include "ir/ValueFormat.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace msc::ir {

std::string formatValue(int64_t v) { return std::to_string(v); }
std::string formatValue(bool v) { return v ? "true" : "false"; }
std::string formatValue(const std::string &v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}
std::string formatValue(double v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%.6g", v);
  return out;
}
std::string formatValue(Bytes v) { return formatBytes(v); }
std::string formatValue(Nanoseconds v) { return formatDuration(v); }
std::string formatValue(MilliCelsius v) { return formatTemperature(v); }
std::string formatValue(PartsPerMillion v) { return formatPercent(v); }
std::string formatValue(BitsPerSecond v) { return formatBandwidth(v); }

std::string formatValue(const std::vector<uint32_t> &cpus) {
  std::string out = "[";
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    if (i)
      out += ", ";
    out += std::to_string(cpus[i]);
    if (j > i + 1)
      out += ".." + std::to_string(cpus[j]);
    else if (j == i + 1)
      out += ", " + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out + "]";
}

std::string formatValue(const CpuCores &cpus) {
  if (cpus.localCores && cpus.empty())
    return std::to_string(cpus.localCores) + " local";
  return formatValue(static_cast<const std::vector<uint32_t> &>(cpus));
}

std::string formatValue(const msc::PciBus &v) { return "\"" + v.str() + "\""; }

std::string formatValue(const GpuRef &v) {
  switch (v.form) {
  case GpuRef::Form::Index: return std::to_string(v.index);
  case GpuRef::Form::Pci: return v.pci.str();
  case GpuRef::Form::Uuid: return formatValue(v.uuid);
  case GpuRef::Form::Any: return "any";
  }
  return "";
}

std::string formatValue(const RdmaPortRef &v) {
  if (v.nearest && v.device.empty())
    return "nearest";
  return "\"" + v.device + ":" + std::to_string(v.port) + "\"";
}

std::string formatValue(const HugepagePool &v) {
  return "hugepages(" + formatBytes(v.pageSize) + ", count = " + std::to_string(v.count) + ")";
}

std::string formatValue(const RecoveryPoint &v) {
  if (v.steps)
    return "every(" + std::to_string(v.steps) + " steps)";
  return "every(" + formatDuration(v.interval) + ")";
}

std::string formatValue(const std::vector<std::string> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + v[i];
  return out + "]";
}

std::string formatValue(const CountRange &v) {
  return v.elastic() ? std::to_string(v.min) + ".." + std::to_string(v.max) : std::to_string(v.min);
}
std::string formatValue(const LeadTime &v) { return v.automatic ? "auto" : formatDuration(v.fixed); }

std::string formatValue(const PhaseWhen &v) {
  switch (v.kind) {
  case PhaseWhen::Kind::Worker: return "worker";
  case PhaseWhen::Kind::Steps:
    return "every(" + std::to_string(v.everySteps) + " steps, for = " + std::to_string(v.forSteps) + " steps)";
  case PhaseWhen::Kind::WallTime: return formatDuration(v.from) + ".." + formatDuration(v.to);
  }
  return "";
}

} // namespace msc::ir

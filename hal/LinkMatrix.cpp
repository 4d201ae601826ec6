#include "hal/LinkMatrix.h"

#include "support/CpuList.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>

#include <algorithm>

namespace msc::hal {

std::optional<size_t> LinkMatrix::indexOf(llvm::StringRef label) const {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label || (i < names.size() && names[i] == label))
      return i;
  return std::nullopt;
}

LinkMatrix computeLinkMatrix(const Topology &t) {
  LinkMatrix m;
  std::vector<VertexId> rows;
  for (const GpuRef &g : t.gpus()) {
    m.labels.push_back("GPU" + std::to_string(g.index));
    m.names.push_back(g.info->pci.str());
    rows.push_back(g.vertex);
  }
  std::vector<VertexId> nics = t.verticesOf(VertexKind::RdmaDevice);
  std::stable_sort(nics.begin(), nics.end(), [&](VertexId a, VertexId b) {
    return llvm::StringRef(t.vertex(a).name).compare_numeric(t.vertex(b).name) < 0;
  });
  for (size_t i = 0; i < nics.size(); ++i) {
    m.labels.push_back("NIC" + std::to_string(i));
    m.names.push_back(t.vertex(nics[i]).name);
    rows.push_back(nics[i]);
  }
  std::vector<VertexId> nvme = t.verticesOf(VertexKind::NvmeController);
  for (size_t i = 0; i < nvme.size(); ++i) {
    m.labels.push_back("NVME" + std::to_string(i));
    const Vertex &v = t.vertex(nvme[i]);
    m.names.push_back(v.name.empty() ? v.as<NvmeControllerInfo>()->pci.str() : v.name);
    rows.push_back(nvme[i]);
  }
  for (VertexId a : rows)
    for (VertexId b : rows)
      m.cells.push_back(t.linkClass(a, b));
  for (VertexId a : rows) {
    auto node = t.numaNodeOfDevice(a);
    m.numaAffinity.push_back(node ? std::to_string(*node) : "N/A");
    m.cpuAffinity.push_back(node ? formatCpuList(t.cpusOfNumaNode(*node)) : "N/A");
  }
  return m;
}

namespace {
llvm::SmallVector<llvm::StringRef, 32> tokens(llvm::StringRef line) {
  llvm::SmallVector<llvm::StringRef, 32> out;
  llvm::SplitString(line, out, " \t\r");
  return out;
}
} // namespace

std::optional<LinkMatrix> parseNvidiaSmiTopo(llvm::StringRef text, llvm::StringRef fileName,
                                             DiagnosticEngine &diags) {
  llvm::SmallVector<llvm::StringRef, 64> lines;
  text.split(lines, '\n');
  auto at = [&](size_t i) { return Location{{}, fileName.str(), unsigned(i + 1)}; };
  size_t header = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef l = lines[i].trim();
    if (l.empty() || l.starts_with("#"))
      continue;
    auto toks = tokens(l);
    if (!toks.empty() && toks.front() == "GPU0") {
      header = i;
      break;
    }
  }
  if (header == lines.size()) {
    diags.report(DiagCode::ERR_HAL_TOPO_009, Location{{}, fileName.str(), 0}) << "no header line starting with 'GPU0'";
    return std::nullopt;
  }
  LinkMatrix m;
  llvm::StringRef head = lines[header];
  bool hasCpu = head.contains("CPU Affinity"), hasNuma = head.contains("NUMA Affinity");
  for (llvm::StringRef tok : tokens(head)) {
    if (tok == "CPU" || tok == "NUMA")
      break;
    m.labels.push_back(tok.str());
  }
  size_t n = m.labels.size();
  m.names.assign(n, "");
  m.cells.assign(n * n, LinkClass{});
  m.cpuAffinity.assign(n, "");
  m.numaAffinity.assign(n, "");
  std::vector<bool> seen(n, false);
  size_t i = header + 1;
  for (; i < lines.size(); ++i) {
    llvm::StringRef l = lines[i].trim();
    if (l.empty())
      continue;
    if (l.starts_with("Legend") || l.starts_with("NIC Legend"))
      break;
    auto toks = tokens(l);
    auto row = m.indexOf(toks.front());
    if (!row) {
      diags.report(DiagCode::ERR_HAL_TOPO_009, at(i)) << ("row '" + toks.front().str() + "' is not a header column");
      return std::nullopt;
    }
    if (seen[*row]) {
      diags.report(DiagCode::ERR_HAL_TOPO_009, at(i)) << ("row '" + toks.front().str() + "' appears twice");
      return std::nullopt;
    }
    seen[*row] = true;
    if (toks.size() < n + 1) {
      diags.report(DiagCode::ERR_HAL_TOPO_009, at(i))
          << ("row '" + toks.front().str() + "' has " + std::to_string(toks.size() - 1) + " cells; expected " +
              std::to_string(n));
      return std::nullopt;
    }
    for (size_t c = 0; c < n; ++c) {
      auto cls = LinkClass::parse(toks[c + 1]);
      if (!cls) {
        diags.report(DiagCode::ERR_HAL_TOPO_009, at(i))
            << ("unknown link class '" + toks[c + 1].str() + "' in row '" + toks.front().str() + "'");
        return std::nullopt;
      }
      m.cells[*row * n + c] = *cls;
    }
    size_t k = n + 1;
    if (hasCpu && k < toks.size())
      m.cpuAffinity[*row] = toks[k++].str();
    if (hasNuma && k < toks.size())
      m.numaAffinity[*row] = toks[k++].str();
  }
  for (size_t r = 0; r < n; ++r)
    if (!seen[r]) {
      diags.report(DiagCode::ERR_HAL_TOPO_009, at(header)) << ("no row for column '" + m.labels[r] + "'");
      return std::nullopt;
    }
  // NIC Legend: "  NIC0: mlx5_0"
  for (; i < lines.size(); ++i) {
    auto [key, value] = lines[i].trim().split(':');
    if (auto idx = m.indexOf(key.trim()); idx && !value.trim().empty() && !value.contains('='))
      m.names[*idx] = value.trim().str();
  }
  for (size_t r = 0; r < n; ++r)
    for (size_t c = r + 1; c < n; ++c)
      if (m.at(r, c) != m.at(c, r))
        diags.report(DiagCode::WRN_HAL_TOPO_002, at(header))
            << m.labels[r] << m.labels[c] << m.at(r, c).str() << m.at(c, r).str();
  return m;
}

void printLinkMatrix(const LinkMatrix &m, llvm::raw_ostream &os) {
  size_t n = m.size();
  if (n == 0) {
    os << "no GPUs, RDMA NICs or NVMe controllers: nothing to relate\n";
    return;
  }
  size_t w = 6;
  for (const std::string &l : m.labels)
    w = std::max(w, l.size() + 2);
  os << std::string(w, ' ');
  for (const std::string &l : m.labels)
    os << llvm::left_justify(l, w);
  os << llvm::left_justify("CPU Affinity", 20) << "NUMA Affinity\n";
  for (size_t r = 0; r < n; ++r) {
    os << llvm::left_justify(m.labels[r], w);
    for (size_t c = 0; c < n; ++c)
      os << llvm::left_justify(m.at(r, c).str(), w);
    os << llvm::left_justify(m.cpuAffinity[r].empty() ? "" : m.cpuAffinity[r], 20) << m.numaAffinity[r] << "\n";
  }
  os << "\nLegend:\n\n"
        "  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n\nDevices:\n\n";
  for (size_t r = 0; r < n; ++r)
    if (!m.names[r].empty())
      os << "  " << m.labels[r] << ": " << m.names[r] << "\n";
}

llvm::json::Value linkMatrixJson(const LinkMatrix &m) {
  llvm::json::Array devices;
  for (size_t r = 0; r < m.size(); ++r) {
    llvm::json::Object links;
    for (size_t c = 0; c < m.size(); ++c)
      links[m.labels[c]] = m.at(r, c).str();
    devices.push_back(llvm::json::Object{{"label", m.labels[r]},
                                         {"name", m.names[r]},
                                         {"cpu_affinity", m.cpuAffinity[r]},
                                         {"numa_affinity", m.numaAffinity[r]},
                                         {"links", std::move(links)}});
  }
  return llvm::json::Object{{"devices", std::move(devices)}};
}

} // namespace msc::hal

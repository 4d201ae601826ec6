// The `nvidia-smi topo -m` view of a node: link classes between GPUs, NICs (RDMA devices) and
// NVMe controllers, with each device's CPU and NUMA affinity. Computed from a Topology, or read
// from recorded nvidia-smi output; both render the same way.
#pragma once

#include "hal/Topology.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>
#include <vector>

namespace msc::hal {

struct LinkMatrix {
  std::vector<std::string> labels;  // "GPU0", "NIC0", "NVME0"
  std::vector<std::string> names;   // what each label stands for ("0000:44:00.0", "mlx5_0"); may be empty
  std::vector<LinkClass> cells;     // labels.size()^2, row-major
  std::vector<std::string> cpuAffinity, numaAffinity; // per row; empty when unknown

  size_t size() const { return labels.size(); }
  const LinkClass &at(size_t row, size_t col) const { return cells[row * labels.size() + col]; }
  std::optional<size_t> indexOf(llvm::StringRef label) const;
};

LinkMatrix computeLinkMatrix(const Topology &topology);
// Parses `nvidia-smi topo -m` text (tabs or spaces, with or without the legends; '#' lines skipped).
std::optional<LinkMatrix> parseNvidiaSmiTopo(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags);

void printLinkMatrix(const LinkMatrix &m, llvm::raw_ostream &os);
llvm::json::Value linkMatrixJson(const LinkMatrix &m);

} // namespace msc::hal

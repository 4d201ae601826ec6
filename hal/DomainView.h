// A node's PCIe domains as an operator reads them when deciding what jobs may use: each host bridge
// (a PCI domain and its root bus, "0000:40", as the YAML format's `pcie_domains` names it) with its
// NUMA node, and below it the devices placement binds (GPUs with their index, RDMA devices and
// their ports and network interfaces, other NICs, NVMe controllers and their namespaces) and how
// they link to the GPUs of the same domain. mscale-deploy and `mscale-cli cluster topology` print it.
#pragma once

#include "hal/Topology.h"
#include "support/PciAddress.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace msc::hal {

// The PCIe domain of a host bridge: its PCI domain and first bus.
PciBus domainOfHostBridge(const Topology &topology, VertexId hostBridge);
// The PCIe domain a device (or any vertex of the PCIe tree) sits under; nullopt outside the tree.
std::optional<PciBus> pcieDomainOf(const Topology &topology, VertexId device);
// The node's PCIe domains, in order.
std::vector<PciBus> pcieDomains(const Topology &topology);

struct DomainViewOptions {
  // Domains shown with a remark, e.g. {0000:00, "reserved by cluster config 'booster'"}.
  std::map<PciBus, std::string> remarks;
};

// "node NAME: N PCIe domains, ...", then one block per domain.
void printDomains(const Topology &topology, llvm::StringRef node, llvm::raw_ostream &os,
                  const DomainViewOptions &options = {});

} // namespace msc::hal

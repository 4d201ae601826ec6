// PCIe domains of a node that no job may use: the cluster config reserves them (the domain of the
// boot NVMe, of the management NIC; docs/deploy.md). Placement keeps jobs out of them in two ways:
//
// - what is under them counts as held, as if an admitted contract held it: binding then skips those
//   GPUs for `gpu = any`, the prefilter does not count them free, and the admission rules refuse a
//   GPU the contract names there (its SMs and memory are taken);
// - after a node's check, a placement that still uses a device under a reserved domain (an HCA that
//   `rdma_port = nearest` found there, a named HCA or NVMe, a named GPU) is refused on that node,
//   with that as the reason, before anything the check said.
//
// The node's topology itself is left whole: plans carry its fingerprint and GPU indexes, which a
// topology with devices taken out would change.
#pragma once

#include "admission/Claims.h"
#include "hal/Topology.h"
#include "passes/Placement.h"
#include "support/PciAddress.h"

#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

struct Reservation {
  std::vector<PciBus> domains; // host bridges' domain and root bus, as hal::pcieDomainOf says
  std::string by;              // who reserves them, for messages: "cluster config 'booster'"
  bool empty() const { return domains.empty(); }
};

// What `reservation` holds on `topology`: one holder per reserved domain with a device jobs could
// use ("PCIe domain 0000:00, reserved"), holding every GPU under it whole and every RDMA device's
// queue pairs where the topology knows their number.
std::vector<admission::Claims> reservationClaims(const hal::Topology &topology, const Reservation &reservation);

// A device a placement would use under a reserved domain: the reason the node refuses the job,
// "role 'r0' would use GPU 0000:03:00.0 in PCIe domain 0000:00, reserved by cluster config 'booster'".
struct ReservedUse {
  enum class Device { Gpu, Rdma, Block };
  std::string role;
  Device device = Device::Gpu;
  std::string why;
};
// The first such device in role order (GPU, then HCA, then NVMe of each role); nullopt when none.
std::optional<ReservedUse> reservedUse(const passes::Placement &placement, const hal::Topology &topology,
                                       const Reservation &reservation);

// What the reservation takes of the node, for the prefilter's reasons: GPUs and usable HCAs.
struct ReservedCounts {
  unsigned gpus = 0, hcas = 0;
};
ReservedCounts reservedCounts(const hal::Topology &topology, const Reservation &reservation);

} // namespace msc::cluster

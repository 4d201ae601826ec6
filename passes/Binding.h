// Binding: the requests of a contract that name no device (`gpu = any`, `rdma_port = nearest`,
// `cpu_cores = N local`) become named hardware of the node before placement resolves the roles.
// The result is an ordinary contract, so every rule (admission/Rules.h) then checks a bound GPU,
// HCA or core exactly as it checks a named one, and lowering writes the same plan format.
//
// Deterministic: the same contract, topology and admitted plans give the same choice; among equally
// good candidates the lowest-numbered GPU, core and HCA name win.
#pragma once

#include "admission/Claims.h"
#include "hal/Topology.h"
#include "ir/IR.h"
#include "support/Diagnostic.h"

#include <map>
#include <string>

namespace msc::passes {

// A GPU and an HCA one role could be given (no HCA when the role asks for none).
struct PairCandidate {
  unsigned gpuIndex = 0;
  std::string hca;                                     // empty: no HCA
  hal::LinkClass::Kind link = hal::LinkClass::Unknown; // GPU to HCA, as nvidia-smi topo names it
  bool oneRootComplex = true; // the GPU, the HCA and the role's NVMe sit under one root complex
  bool hcaShared = false;     // another role of the contract already uses the HCA
};

// Whether `a` is a better pick than `b`, a strict total order over distinct candidates.
// pcie_domain_first: one root complex first, then the PCIe path (PIX < PXB < PHB < NODE < SYS),
// then an HCA no other role uses, then the lowest GPU index and HCA name. Any other policy takes the
// lowest free GPU first and then its nearest HCA.
bool betterPair(const PairCandidate &a, const PairCandidate &b, bool pcieDomainFirst);

// What a role's requests were bound to and why, for --print-after and the plan ("any; PIX with
// mlx5_2"); empty for what the contract names itself.
struct RoleBinding {
  std::string gpu, rdma, cpus;
};

struct BoundContract {
  // The contract with its requests replaced by what they bound to. A request that cannot be bound
  // is reported and dropped, so that later passes do not report it a second time.
  ir::Contract contract;
  std::map<std::string, RoleBinding> bindings; // by role name
};

// Whether any role asks for something placement must bind.
bool hasUnboundRequests(const ir::Contract &contract);

// Binds the requests of `contract` on `topo` around what `held` (the admitted contracts) holds.
// Every request that cannot be bound is a coded diagnostic (ERR_HAL_BIND_*) at its field.
BoundContract bindContract(const ir::Contract &contract, const hal::Topology &topo, const admission::Held &held,
                           DiagnosticEngine &diags);

} // namespace msc::passes

#include "cluster/placement/JobShape.h"

#include "passes/GpuCount.h"

namespace msc::cluster {

JobShape shapeOf(const ir::Contract &contract) {
  JobShape s;
  const ir::Body &body = contract.body;
  s.sizes = ir::worldSizesOf(body.compute);
  s.nodes = s.sizes.max;
  for (const ir::Role &role : body.roles) {
    const ir::RoleFields &f = role.fields;
    // A role of `gpus = N` is checked as N roles of `gpu = any`, each with the role's other fields.
    const unsigned copies = static_cast<unsigned>(passes::checkedRoleNames(role).size());
    if (f.gpus) {
      s.gpus += copies;
      s.anyGpus += copies;
    } else if (f.gpu) {
      ++s.gpus;
      if (f.gpu->value.form == ir::GpuRef::Form::Any)
        ++s.anyGpus;
    }
    if (f.cpu_cores && f.cpu_cores->value.localCores)
      s.localCores += copies * f.cpu_cores->value.localCores;
    if (f.rdma_port && f.rdma_port->value.nearest)
      s.wantsHca = true;
    if (!s.ioHeavy && f.io_queue) {
      s.ioHeavy = true;
      s.ioReason = "role '" + role.name + "' reads " + f.io_queue->value;
    }
    if (!s.ioHeavy && f.gds && f.gds->value) {
      s.ioHeavy = true;
      s.ioReason = "role '" + role.name + "' uses GPU Direct Storage";
    }
  }
  if (!s.ioHeavy && body.policy.cross_domain_io && !body.policy.cross_domain_io->value) {
    s.ioHeavy = true;
    // Set by the contract or a profile it uses, or filled in from elsewhere (the cluster config's
    // scaling defaults name themselves in the origin).
    llvm::StringRef by = body.policy.cross_domain_io->origin.declaration;
    bool ownValue = by.empty() || by.starts_with("contract ") || by.starts_with("profile ");
    s.ioReason = (ownValue ? std::string("the contract") : by.str()) + " sets cross_domain_io = false";
  }
  return s;
}

std::string prefilter(const JobShape &shape, const NodeCapacity &capacity) {
  // Only `gpu = any` needs a GPU nobody holds: a named GPU may be shared in slices with an admitted
  // contract, which the node's check decides. Roles share GPUs only when they name them, so every
  // `any` role needs a free one of its own.
  if (capacity.freeGpus < shape.anyGpus)
    return std::to_string(capacity.freeGpus) + " free GPUs" +
           (capacity.reservedGpus ? " (" + std::to_string(capacity.reservedGpus) + " more in reserved PCIe domains)"
                                  : std::string()) +
           ", the job needs " + std::to_string(shape.anyGpus) + " per node";
  if (capacity.freeCores < shape.localCores)
    return std::to_string(capacity.freeCores) + " free cores, the job needs " + std::to_string(shape.localCores) +
           " per node";
  if (shape.wantsHca && capacity.usableHcas == 0)
    return capacity.reservedHcas ? "no RDMA device with a usable port outside reserved PCIe domains"
                                 : "no RDMA device with a usable port";
  return {};
}

ir::Contract strictVariant(const ir::Contract &contract) {
  ir::Contract strict = contract;
  ir::PolicyFields &policy = strict.body.policy;
  const std::string why = "placement: one PCIe domain per node";
  if (!policy.affinity_policy)
    policy.affinity_policy = ir::Field<std::string>{"pcie_domain_first", ir::Origin{why, {}, {}}};
  if (!policy.cross_domain_io || policy.cross_domain_io->value)
    policy.cross_domain_io = ir::Field<bool>{false, ir::Origin{why, {}, {}}};
  return strict;
}

} // namespace msc::cluster

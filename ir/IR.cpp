#include "ir/IR.h"

#include <algorithm>

namespace msc::ir {

llvm::StringRef fieldKindName(FieldKind kind) {
  switch (kind) {
  case FieldKind::Int: return "an integer";
  case FieldKind::Bool: return "true or false";
  case FieldKind::String: return "a string";
  case FieldKind::Size: return "a size (e.g. 2MiB)";
  case FieldKind::Duration: return "a duration (e.g. 10s)";
  case FieldKind::Temperature: return "a temperature (e.g. 70C)";
  case FieldKind::Percent: return "a percentage (e.g. 15%)";
  case FieldKind::Bandwidth: return "a bandwidth (e.g. 100Gbps)";
  case FieldKind::Real: return "a number";
  case FieldKind::CpuList: return "a list of CPU numbers or ranges (e.g. [2, 4..7]), or N local";
  case FieldKind::PciBus: return "a PCIe domain and bus (e.g. \"0000:81\")";
  case FieldKind::GpuRef: return "a GPU index, PCI address or UUID, or any";
  case FieldKind::RdmaPort: return "an RDMA port (e.g. \"mlx5_0:1\"), or nearest";
  case FieldKind::HugepagePool: return "hugepages(PAGE_SIZE, count = N)";
  case FieldKind::RecoveryPoint: return "every(N steps) or every(DURATION)";
  case FieldKind::StringList: return "a list of names";
  case FieldKind::Choice: return "one of the listed names";
  case FieldKind::Lead: return "a duration (e.g. 500us), or auto";
  case FieldKind::Count: return "a count, or a range MIN..MAX (e.g. 4, or 2..4)";
  case FieldKind::Samples: return "a number of samples (e.g. 256 samples)";
  }
  return "a value";
}

llvm::StringRef resourceKindName(ResourceKind kind) {
  switch (kind) {
  case ResourceKind::Cpu: return "cpu";
  case ResourceKind::Io: return "io";
  case ResourceKind::Gpu: return "gpu";
  case ResourceKind::Rdma: return "rdma";
  }
  return "?";
}

bool roleHolds(const RoleFields &f, ResourceKind kind) {
  switch (kind) {
  case ResourceKind::Cpu: return bool(f.cpu_cores);
  case ResourceKind::Io: return f.io_queue || f.io_limit || f.io_weight || f.io_depth;
  case ResourceKind::Gpu: return f.gpu || f.gpus || f.sm_slices || f.gpu_memory;
  case ResourceKind::Rdma: return f.rdma_port || f.queue_pairs;
  }
  return false;
}
const char *const kRoleHoldingFields = "cpu: cpu_cores; io: io_queue, io_limit, io_weight or io_depth; gpu: gpu, "
                                       "gpus, sm_slices or gpu_memory; rdma: rdma_port or queue_pairs";

const PhaseUse *Phase::use(llvm::StringRef role) const {
  for (const PhaseUse &u : uses)
    if (u.role == role)
      return &u;
  return nullptr;
}

const Phase *Body::phase(llvm::StringRef name) const {
  for (const Phase &p : phases)
    if (p.name == name)
      return &p;
  return nullptr;
}

const Role *Body::role(llvm::StringRef name) const {
  for (const Role &r : roles)
    if (r.name == name)
      return &r;
  return nullptr;
}

Role *Body::role(llvm::StringRef name) {
  return const_cast<Role *>(static_cast<const Body *>(this)->role(name));
}

const Profile *Module::profile(llvm::StringRef name) const {
  for (const Profile &p : profiles)
    if (p.name == name)
      return &p;
  return nullptr;
}

const Contract *Module::contract(llvm::StringRef name) const {
  for (const Contract &c : contracts)
    if (c.name == name)
      return &c;
  return nullptr;
}

namespace {
#define MSC_OVERRIDE(NAME, ...)                                                                   \
  if (over.NAME)                                                                                  \
    base.NAME = over.NAME;

void merge(ComputeFields &base, const ComputeFields &over) {
#define COMPUTE_FIELD MSC_OVERRIDE
#include "ir/Fields.def"
}
void merge(RoleFields &base, const RoleFields &over) {
#define ROLE_FIELD MSC_OVERRIDE
#include "ir/Fields.def"
}
void merge(FaultToleranceFields &base, const FaultToleranceFields &over) {
#define FAULT_TOLERANCE_FIELD MSC_OVERRIDE
#include "ir/Fields.def"
}
void merge(ScalingFields &base, const ScalingFields &over) {
#define SCALING_FIELD MSC_OVERRIDE
#include "ir/Fields.def"
}
void merge(PolicyFields &base, const PolicyFields &over) {
#define POLICY_FIELD MSC_OVERRIDE
#include "ir/Fields.def"
}
void merge(LendingFields &base, const LendingFields &over) {
#define LENDING_FIELD MSC_OVERRIDE
#include "ir/Fields.def"
}
#undef MSC_OVERRIDE
} // namespace

void mergeInto(Body &base, const Body &over) {
  merge(base.compute, over.compute);
  for (const Role &role : over.roles) {
    if (Role *existing = base.role(role.name))
      merge(existing->fields, role.fields);
    else
      base.roles.push_back(role);
  }
  merge(base.faultTolerance, over.faultTolerance);
  merge(base.scaling, over.scaling);
  merge(base.policy, over.policy);
  // A phase is one decision about the job's demand: a contract's phase of a profile's name replaces
  // it whole, rather than mixing two halves.
  for (const Phase &phase : over.phases) {
    auto same = std::find_if(base.phases.begin(), base.phases.end(), [&](const Phase &p) { return p.name == phase.name; });
    if (same != base.phases.end())
      *same = phase;
    else
      base.phases.push_back(phase);
  }
  merge(base.lending, over.lending);
}

} // namespace msc::ir

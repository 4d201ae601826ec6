#include "passes/Binding.h"

#include "admission/Rules.h"
#include "passes/PassUtil.h"
#include "passes/Resolve.h"
#include "support/CpuList.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <set>
#include <tuple>

namespace msc::passes {

bool betterPair(const PairCandidate &a, const PairCandidate &b, bool pcieDomainFirst) {
  auto rank = [](hal::LinkClass::Kind link) { return static_cast<unsigned>(link); };
  if (pcieDomainFirst)
    return std::make_tuple(!a.oneRootComplex, rank(a.link), a.hcaShared, a.gpuIndex, llvm::StringRef(a.hca)) <
           std::make_tuple(!b.oneRootComplex, rank(b.link), b.hcaShared, b.gpuIndex, llvm::StringRef(b.hca));
  return std::make_tuple(a.gpuIndex, rank(a.link), a.hcaShared, llvm::StringRef(a.hca)) <
         std::make_tuple(b.gpuIndex, rank(b.link), b.hcaShared, llvm::StringRef(b.hca));
}

namespace {

// A request is unbound until binding fills it in; a bound one keeps its request form (`nearest`,
// `N local`) beside the device it got, for the printers.
bool wantsGpu(const ir::RoleFields &f) { return f.gpu && f.gpu->value.form == ir::GpuRef::Form::Any; }
bool wantsHca(const ir::RoleFields &f) {
  return f.rdma_port && f.rdma_port->value.nearest && f.rdma_port->value.device.empty();
}
bool wantsCores(const ir::RoleFields &f) {
  return f.cpu_cores && f.cpu_cores->value.localCores && f.cpu_cores->value.empty();
}

} // namespace

bool hasUnboundRequests(const ir::Contract &contract) {
  return llvm::any_of(contract.body.roles, [](const ir::Role &role) {
    return wantsGpu(role.fields) || wantsHca(role.fields) || wantsCores(role.fields);
  });
}

namespace {

// The port a bound HCA is used on: its first active port, else its first, else port 1 (hwloc
// sources list no ports).
uint32_t portOf(const hal::Topology &topo, hal::VertexId hca) {
  const auto *info = topo.vertex(hca).as<hal::RdmaInfo>();
  if (!info || info->ports.empty())
    return 1;
  for (const hal::RdmaPort &p : info->ports)
    if (llvm::StringRef(p.state).contains_insensitive("active"))
      return p.number;
  return info->ports.front().number;
}

// "cores 48-63", as the kernel writes CPU lists, for notes.
std::string coresText(const std::vector<unsigned> &cores) {
  return (cores.size() == 1 ? "core " : "cores ") + formatCpuList(cores);
}

class Binder {
public:
  Binder(const ir::Contract &contract, const hal::Topology &topo, const admission::Held &held,
         DiagnosticEngine &diags)
      : topo_(topo), held_(held), diags_(diags) {
    out_.contract = contract;
    node_ = topo.name().empty() ? std::string("this node") : topo.name();
    const ir::PolicyFields &policy = contract.body.policy;
    domainFirst_ = policy.affinity_policy && policy.affinity_policy->value == "pcie_domain_first";
    if (policy.cross_domain_io && !policy.cross_domain_io->value)
      noCross_ = &*policy.cross_domain_io;
  }

  BoundContract run() {
    std::vector<ir::Role> &roles = out_.contract.body.roles;
    noteNamed(roles);
    // GPUs first (with the HCA each pairs with), so that a role without a GPU of its own can then
    // find the contract's GPU, and cores can follow the devices they are local to.
    for (ir::Role &role : roles)
      if (wantsGpu(role.fields) || (wantsHca(role.fields) && role.fields.gpu))
        bindGpuAndHca(role);
    for (ir::Role &role : roles)
      if (wantsHca(role.fields) && !role.fields.gpu)
        bindHcaOfContractGpu(role);
    for (ir::Role &role : roles)
      if (wantsCores(role.fields))
        bindCores(role);
    return std::move(out_);
  }

private:
  // What the contract names itself is taken before anything is bound around it.
  void noteNamed(const std::vector<ir::Role> &roles) {
    for (const ir::Role &role : roles) {
      const ir::RoleFields &f = role.fields;
      if (f.gpu && !wantsGpu(f))
        if (std::optional<hal::GpuRef> gpu = resolveGpu(topo_, f.gpu->value))
          gpuTakenBy_.emplace(gpu->info->pci, role.name);
      if (f.rdma_port && !f.rdma_port->value.device.empty())
        usedHcas_.insert(f.rdma_port->value.device);
      if (f.cpu_cores)
        for (unsigned cpu : f.cpu_cores->value)
          if (topo_.hasPu(cpu))
            coreTakenBy_.emplace(topo_.firstPuOfCore(cpu), role.name);
    }
  }

  std::optional<hal::GpuRef> gpuOf(const ir::RoleFields &f) const {
    return f.gpu && !wantsGpu(f) ? resolveGpu(topo_, f.gpu->value) : std::nullopt;
  }

  // The RDMA devices `rdma_port = nearest` may bind: those with a usable port, by name.
  std::vector<hal::VertexId> usableHcas() const {
    std::vector<hal::VertexId> hcas;
    for (hal::VertexId v : topo_.verticesOf(hal::VertexKind::RdmaDevice))
      if (hasUsablePort(topo_, v))
        hcas.push_back(v);
    llvm::sort(hcas, [&](hal::VertexId a, hal::VertexId b) { return topo_.vertex(a).name < topo_.vertex(b).name; });
    return hcas;
  }

  void reportNoHca(const ir::Role &role) {
    DiagBuilder d = diags_.report(DiagCode::ERR_HAL_BIND_003, at(role.fields.rdma_port->origin));
    d << role.name << node_;
    std::vector<std::string> down;
    for (hal::VertexId v : topo_.verticesOf(hal::VertexKind::RdmaDevice))
      down.push_back(topo_.vertex(v).name);
    llvm::sort(down);
    d.note(Location::none(), down.empty() ? "the node has no RDMA device"
                                          : "every port of " + llvm::join(down, ", ") + " is down");
  }

  // Binds `gpu = any` and/or `rdma_port = nearest` of a role, as one pair when both are asked for.
  void bindGpuAndHca(ir::Role &role) {
    ir::RoleFields &f = role.fields;
    bool wantGpu = wantsGpu(f), wantHca = wantsHca(f);
    std::vector<hal::GpuRef> gpus;
    if (wantGpu) {
      // The copies of a `gpus = N` role after the first that got no GPU would get none either
      // (they see the same free GPUs and HCAs): the first one's error counts them all.
      if (role.copyOf && unboundCopies_.count(role.copyOf->role)) {
        dropGpu(role);
        if (wantHca)
          f.rdma_port.reset();
        return;
      }
      gpus = freeGpus(role);
      if (gpus.empty()) {
        dropGpu(role);
        if (wantHca)
          f.rdma_port.reset(); // nearest to nothing: the error above says why
        return;
      }
    } else if (std::optional<hal::GpuRef> gpu = gpuOf(f)) {
      gpus.push_back(*gpu);
    } else {
      f.rdma_port.reset(); // the gpu pass reports the GPU the node lacks
      return;
    }
    choosePair(role, gpus, wantGpu, wantHca);
  }

  // `rdma_port = nearest` in a role without a GPU: nearest to the contract's GPU, when it has one.
  void bindHcaOfContractGpu(ir::Role &role) {
    std::set<PciAddress> used;
    std::optional<hal::GpuRef> only;
    for (const ir::Role &other : out_.contract.body.roles)
      if (std::optional<hal::GpuRef> gpu = gpuOf(other.fields))
        if (used.insert(gpu->info->pci).second)
          only = gpu;
    if (used.size() != 1) {
      std::vector<std::string> names;
      for (const PciAddress &pci : used)
        names.push_back(pci.str());
      diags_.report(DiagCode::ERR_HAL_BIND_005, at(role.fields.rdma_port->origin))
              .note(Location::none(), used.empty() ? "the contract uses no GPU; name the device, e.g. rdma_port = \"mlx5_0\""
                                                   : "the contract uses GPUs " + llvm::join(names, ", ") +
                                                         "; set 'gpu' in role '" + role.name + "' to say which")
          << role.name << "rdma_port = nearest" << "GPU";
      role.fields.rdma_port.reset();
      return;
    }
    choosePair(role, {*only}, /*wantGpu=*/false, /*wantHca=*/true);
  }

  // GPUs of the node in index order that no admitted contract holds and no other role takes; each
  // one that is not free is named in the error when none is.
  std::vector<hal::GpuRef> freeGpus(const ir::Role &role) {
    std::vector<hal::GpuRef> free;
    std::vector<std::string> why;
    for (const hal::GpuRef &gpu : topo_.gpus()) {
      std::string name = "GPU " + std::to_string(gpu.index) + " (" + gpu.info->pci.str() + ")";
      if (const admission::Claims *holder = admission::gpuHolder(held_, gpu.info->pci))
        why.push_back(name + " is held by contract '" + holder->contract + "'");
      else if (auto it = gpuTakenBy_.find(gpu.info->pci); it != gpuTakenBy_.end())
        why.push_back(name + " is taken by role '" + it->second + "'");
      else
        free.push_back(gpu);
    }
    if (free.empty()) {
      DiagBuilder d = diags_.report(DiagCode::ERR_HAL_BIND_001, at(role.fields.gpu->origin));
      d << role.name << node_;
      if (why.empty())
        d.note(Location::none(), "the node has no GPU");
      for (const std::string &w : why)
        d.note(Location::none(), w);
      noteCopiesBound(role, d);
    }
    return free;
  }

  // `gpu = any` that could not be bound (and was reported): dropped, and remembered so that its
  // `N local` cores, near nothing now, are not reported a second time.
  void dropGpu(ir::Role &role) {
    role.fields.gpu.reset();
    gpuDropped_.insert(role.name);
  }

  // A copy of a `gpus = N` role that got no GPU: how many the role asked for and how many the
  // node gave (the copies before it, each of which got one). The copies after it are skipped.
  void noteCopiesBound(const ir::Role &role, DiagBuilder &d) {
    if (!role.copyOf)
      return;
    const ir::GpuCopyOf &of = *role.copyOf;
    unboundCopies_.insert(of.role);
    d.note(Location::none(), "role '" + of.role + "' asks for " + std::to_string(of.count) + " GPUs (gpus = " +
                                 std::to_string(of.count) + "); node '" + node_ + "' could give " +
                                 std::to_string(of.index));
  }

  void choosePair(ir::Role &role, const std::vector<hal::GpuRef> &gpus, bool wantGpu, bool wantHca) {
    ir::RoleFields &f = role.fields;
    std::vector<hal::VertexId> hcas;
    if (wantHca) {
      hcas = usableHcas();
      if (hcas.empty()) {
        reportNoHca(role);
        f.rdma_port.reset();
        wantHca = false;
        if (!wantGpu)
          return;
      }
    } else if (f.rdma_port) {
      // A named HCA: `gpu = any` is paired with it.
      if (hal::VertexId named = topo_.findDevice(f.rdma_port->value.device); named != hal::NoVertex)
        hcas.push_back(named);
    }
    hal::VertexId nvme = hal::NoVertex;
    std::string nvmeName;
    if (f.io_queue) {
      nvmeName = blockDeviceName(f.io_queue->value);
      nvme = topo_.blockDevice(nvmeName);
    }

    struct Scored {
      PairCandidate pair;
      const hal::GpuRef *gpu;
      hal::VertexId hca;
    };
    std::vector<Scored> all;
    for (const hal::GpuRef &gpu : gpus) {
      auto score = [&](hal::VertexId hca) {
        Scored s{{}, &gpu, hca};
        s.pair.gpuIndex = gpu.index;
        bool hcaOk = true;
        if (hca != hal::NoVertex) {
          s.pair.hca = topo_.vertex(hca).name;
          s.pair.link = topo_.linkClass(gpu.vertex, hca).kind;
          s.pair.hcaShared = usedHcas_.count(s.pair.hca) != 0;
          hcaOk = topo_.shareRootComplex(gpu.vertex, hca);
        } else {
          s.pair.link = hal::LinkClass::Self;
        }
        s.pair.oneRootComplex = hcaOk && (nvme == hal::NoVertex || topo_.shareRootComplex(gpu.vertex, nvme));
        all.push_back(s);
      };
      if (hcas.empty())
        score(hal::NoVertex);
      for (hal::VertexId hca : hcas)
        score(hca);
    }
    auto better = [&](const Scored &a, const Scored &b) { return betterPair(a.pair, b.pair, domainFirst_); };
    const Scored *best = nullptr, *bestAllowed = nullptr;
    for (const Scored &s : all) {
      if (!best || better(s, *best))
        best = &s;
      if ((!noCross_ || s.pair.oneRootComplex) && (!bestAllowed || better(s, *bestAllowed)))
        bestAllowed = &s;
    }
    if (!bestAllowed) {
      reportCrossDomain(role, *best, wantGpu, nvme, nvmeName);
      if (wantGpu)
        dropGpu(role);
      if (wantHca)
        f.rdma_port.reset();
      return;
    }
    const Scored &pick = *bestAllowed;
    std::string link = hal::LinkClass{pick.pair.link, 0}.str();
    RoleBinding &why = out_.bindings[role.name];
    if (wantGpu) {
      ir::GpuRef bound;
      bound.form = ir::GpuRef::Form::Index;
      bound.index = pick.gpu->index;
      f.gpu->value = bound;
      gpuTakenBy_.emplace(pick.gpu->info->pci, role.name);
      why.gpu = "any";
      if (pick.hca != hal::NoVertex)
        why.gpu += "; " + link + " with " + pick.pair.hca;
      if (nvme != hal::NoVertex && pick.pair.oneRootComplex)
        why.gpu += "; one root complex with '" + nvmeName + "'";
      annotate(f.gpu->origin, why.gpu);
    }
    if (wantHca) {
      f.rdma_port->value.device = pick.pair.hca;
      f.rdma_port->value.port = portOf(topo_, pick.hca);
      usedHcas_.insert(pick.pair.hca);
      why.rdma = "nearest; " + link + " from GPU " + std::to_string(pick.gpu->index);
      annotate(f.rdma_port->origin, why.rdma);
    }
  }

  void reportCrossDomain(const ir::Role &role, const auto &best, bool wantGpu, hal::VertexId nvme,
                         const std::string &nvmeName) {
    const ir::RoleFields &f = role.fields;
    bool withHca = best.hca != hal::NoVertex;
    hal::VertexId partner = withHca ? best.hca : nvme;
    std::string partnerName = withHca ? best.pair.hca : nvmeName;
    std::string wanted = wantGpu ? (withHca ? "free GPU with an HCA on its root complex"
                                            : "free GPU on the root complex of '" + nvmeName + "'")
                                 : "HCA on the root complex of GPU " + std::to_string(best.gpu->index);
    const ir::Origin &origin = wantGpu ? f.gpu->origin : f.rdma_port->origin;
    hal::LinkClass link = topo_.linkClass(best.gpu->vertex, partner);
    DiagBuilder d = diags_.report(DiagCode::ERR_HAL_BIND_002, at(origin));
    d.note(at(noCross_->origin), "cross_domain_io = false set here")
        .note(Location::none(), "GPU " + std::to_string(best.gpu->index) + " is under root complex " +
                                    rootComplexName(topo_, topo_.rootComplexOf(best.gpu->vertex)) + ", '" +
                                    partnerName + "' under " + rootComplexName(topo_, topo_.rootComplexOf(partner)));
    if (wantGpu)
      noteCopiesBound(role, d);
    d << wanted << role.name << node_ << best.gpu->index << partnerName << link.str();
  }

  // The NUMA node `N local` cores go on: the role's GPU's, else its HCA's, else the node it declares.
  std::optional<std::pair<unsigned, std::string>> localNode(const ir::Role &role) {
    const ir::RoleFields &f = role.fields;
    if (std::optional<hal::GpuRef> gpu = gpuOf(f))
      if (std::optional<unsigned> node = topo_.numaNodeOfDevice(gpu->vertex))
        return std::make_pair(*node, "GPU " + std::to_string(gpu->index));
    if (f.rdma_port && !f.rdma_port->value.device.empty())
      if (std::optional<unsigned> node = topo_.numaNodeOfDevice(llvm::StringRef(f.rdma_port->value.device)))
        return std::make_pair(*node, f.rdma_port->value.device);
    if (f.numa_node)
      return std::make_pair(static_cast<unsigned>(f.numa_node->value), std::string("numa_node"));
    if (topo_.numaNodes().size() == 1)
      return std::make_pair(topo_.numaNodes().front(), std::string("the node's only NUMA node"));
    return std::nullopt;
  }

  struct CoreCensus {
    std::vector<unsigned> free, unusable;
    std::map<std::string, std::vector<unsigned>> heldBy, takenBy;
  };

  // Every physical core of `node`, sorted into free and why not. A core is usable when the CPU
  // rules accept a role holding it (online, not isolated): the same rules as a listed CPU.
  CoreCensus census(unsigned node, const std::string &roleName) const {
    CoreCensus c;
    std::set<unsigned> cores;
    for (unsigned cpu : topo_.cpusOfNumaNode(node))
      cores.insert(topo_.firstPuOfCore(cpu));
    for (unsigned core : cores) {
      if (const admission::Claims *holder = admission::coreHolder(held_, core)) {
        c.heldBy[holder->contract].push_back(core);
        continue;
      }
      if (auto it = coreTakenBy_.find(core); it != coreTakenBy_.end()) {
        c.takenBy[it->second].push_back(core);
        continue;
      }
      CollectingConsumer sink;
      DiagnosticEngine scratch(nullptr, sink);
      admission::Claims trial;
      admission::RoleClaims &r = trial.roles.emplace_back();
      r.role = roleName;
      r.cpus = {core};
      admission::checkCpus(trial, {topo_, scratch, Location::none()});
      (scratch.hasErrors() ? c.unusable : c.free).push_back(core);
    }
    return c;
  }

  void bindCores(ir::Role &role) {
    ir::RoleFields &f = role.fields;
    unsigned wanted = f.cpu_cores->value.localCores;
    std::optional<std::pair<unsigned, std::string>> local = localNode(role);
    if (!local && gpuDropped_.count(role.name)) {
      f.cpu_cores.reset(); // near the GPU it did not get: that error says why
      return;
    }
    if (!local) {
      diags_.report(DiagCode::ERR_HAL_BIND_005, at(f.cpu_cores->origin))
              .note(Location::none(), "set 'gpu', 'rdma_port' or 'numa_node' in role '" + role.name +
                                          "', or list the CPUs")
          << role.name << (std::to_string(wanted) + " local") << "GPU or RDMA port";
      f.cpu_cores.reset();
      return;
    }
    auto [node, device] = *local;
    CoreCensus c = census(node, role.name);
    if (c.free.size() < wanted) {
      DiagBuilder d = diags_.report(DiagCode::ERR_HAL_BIND_004, at(f.cpu_cores->origin));
      d << role.name << wanted << node << node_ << static_cast<uint64_t>(c.free.size());
      d.note(Location::none(), "NUMA node " + std::to_string(node) + " is the node of " + device);
      for (const auto &[holder, cores] : c.heldBy)
        d.note(Location::none(), coresText(cores) + " held by contract '" + holder + "'");
      for (const auto &[other, cores] : c.takenBy)
        d.note(Location::none(), coresText(cores) + " taken by role '" + other + "'");
      if (!c.unusable.empty())
        d.note(Location::none(), coresText(c.unusable) + " offline or isolated");
      // What came closest: the other NUMA node with the most free cores.
      std::optional<unsigned> bestNode;
      size_t bestFree = 0;
      for (unsigned other : topo_.numaNodes()) {
        if (other == node)
          continue;
        size_t free = census(other, role.name).free.size();
        if (free > bestFree)
          bestNode = other, bestFree = free;
      }
      if (bestNode && bestFree > c.free.size())
        d.note(Location::none(), "best: NUMA node " + std::to_string(*bestNode) + " has " + std::to_string(bestFree) +
                                     " free cores, away from " + device);
      f.cpu_cores.reset();
      return;
    }
    ir::CpuCores bound(c.free.begin(), c.free.begin() + wanted);
    bound.localCores = wanted;
    f.cpu_cores->value = bound;
    for (unsigned core : bound)
      coreTakenBy_.emplace(core, role.name);
    out_.bindings[role.name].cpus =
        std::to_string(wanted) + " local; NUMA node " + std::to_string(node) + " of " + device;
    annotate(f.cpu_cores->origin, out_.bindings[role.name].cpus);
  }

  // The IR printer writes a value's origin beside it: a bound value says what it was bound from.
  static void annotate(ir::Origin &origin, const std::string &why) {
    origin.declaration += ", bound: " + why;
  }

  const hal::Topology &topo_;
  const admission::Held &held_;
  DiagnosticEngine &diags_;
  BoundContract out_;
  std::string node_;
  bool domainFirst_ = false;
  const ir::Field<bool> *noCross_ = nullptr; // cross_domain_io = false, where it is set
  std::map<PciAddress, std::string> gpuTakenBy_;
  std::set<std::string> unboundCopies_; // roles of `gpus = N` a copy of which got no GPU
  std::set<std::string> gpuDropped_;    // roles whose `gpu = any` could not be bound
  std::set<std::string> usedHcas_;
  std::map<unsigned, std::string> coreTakenBy_;
};

} // namespace

BoundContract bindContract(const ir::Contract &contract, const hal::Topology &topo, const admission::Held &held,
                           DiagnosticEngine &diags) {
  return Binder(contract, topo, held, diags).run();
}

} // namespace msc::passes

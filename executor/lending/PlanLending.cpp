#include "executor/lending/PlanLending.h"

#include <algorithm>
#include <map>
#include <set>

namespace msc::exec::lending {

std::optional<Owner> ownerOf(const plan::Plan &plan) {
  if (plan.lending().phases().empty())
    return std::nullopt;
  Owner o;
  o.contract = plan.provenance().contract();
  std::map<std::string, std::set<unsigned>> cpusOfRole;
  std::map<std::string, std::string> deviceOfRole;
  std::set<unsigned> all;
  std::set<std::string> devices;
  for (const plan::IoBinding &b : plan.io_bindings()) {
    for (uint32_t c : b.cpus()) {
      cpusOfRole[b.role()].insert(c);
      all.insert(c);
    }
    if (!b.block_device().empty()) {
      deviceOfRole[b.role()] = b.block_device();
      devices.insert(b.block_device());
    }
  }
  o.cpus.assign(all.begin(), all.end());
  o.ioDevices.assign(devices.begin(), devices.end());
  std::map<std::string, std::vector<unsigned>> sharesOfRole;
  for (const plan::GpuSlice &g : plan.gpu_slices()) {
    GpuShare share;
    share.role = g.role();
    share.gpuIndex = g.gpu_index();
    share.gpu = g.pci_address();
    share.units = std::max(1u, g.slices());
    share.smsPerUnit = g.sm_count() / share.units;
    sharesOfRole[g.role()].push_back(unsigned(o.gpuShares.size()));
    o.gpuShares.push_back(std::move(share));
  }
  std::map<std::string, std::vector<unsigned>> groupsOfRole;
  for (const plan::RdmaSetting &r : plan.rdma()) {
    groupsOfRole[r.role()].push_back(unsigned(o.rdmaShares.size()));
    o.rdmaShares.push_back(RdmaShare{r.role(), r.device(), r.port() ? r.port() : 1u, std::max(1u, r.queue_pairs()) - 1});
  }
  for (const plan::Phase &p : plan.lending().phases()) {
    PhaseSpec spec;
    spec.name = p.name();
    std::set<unsigned> kept;
    std::set<std::string> keptDevices;
    auto names = [&](const plan::Phase::Use &use, const char *kind) {
      return std::find(use.exclusive().begin(), use.exclusive().end(), kind) != use.exclusive().end();
    };
    for (const plan::Phase::Use &use : p.uses()) {
      if (names(use, "cpu"))
        if (auto it = cpusOfRole.find(use.role()); it != cpusOfRole.end())
          kept.insert(it->second.begin(), it->second.end());
      if (names(use, "io"))
        if (auto it = deviceOfRole.find(use.role()); it != deviceOfRole.end())
          keptDevices.insert(it->second);
      auto keepShares = [&](ShareKind kind, const std::map<std::string, std::vector<unsigned>> &ofRole) {
        if (auto it = ofRole.find(use.role()); it != ofRole.end() && names(use, shareResourceName(kind)))
          spec.keptShares[kind].insert(spec.keptShares[kind].end(), it->second.begin(), it->second.end());
      };
      keepShares(kGpuShare, sharesOfRole);
      keepShares(kRdmaShare, groupsOfRole);
    }
    for (std::vector<unsigned> &kept : spec.keptShares) {
      std::sort(kept.begin(), kept.end());
      kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    }
    spec.keptCpus.assign(kept.begin(), kept.end());
    spec.keptDevices.assign(keptDevices.begin(), keptDevices.end());
    switch (p.trigger()) {
    case plan::Phase::STEPS:
      spec.trigger = PhaseSpec::Trigger::Steps;
      spec.everySteps = p.every_steps();
      spec.forSteps = p.for_steps();
      break;
    case plan::Phase::WALL_TIME:
      spec.trigger = PhaseSpec::Trigger::WallTime;
      spec.fromNs = p.from_ns();
      spec.toNs = p.to_ns();
      break;
    default:
      spec.trigger = PhaseSpec::Trigger::Worker;
      break;
    }
    o.phases.push_back(std::move(spec));
  }
  if (plan.lending().reclaim_within_ns())
    o.reclaimWithinNs = plan.lending().reclaim_within_ns();
  o.leadAuto = plan.lending().lead_auto();
  o.leadNs = plan.lending().lead_ns();
  return o;
}

unsigned mostLentUnits(const Owner &owner, ShareKind kind) {
  unsigned most = 0;
  for (const PhaseSpec &p : owner.phases)
    for (unsigned s = 0; s < shareCount(owner, kind); ++s)
      if (!std::binary_search(p.keptShares[kind].begin(), p.keptShares[kind].end(), s))
        most = std::max(most, shareUnits(owner, kind, s));
  return most;
}

unsigned mostLent(const Owner &owner) {
  size_t most = 0;
  for (const PhaseSpec &p : owner.phases)
    most = std::max(most, owner.cpus.size() - std::min(owner.cpus.size(), p.keptCpus.size()));
  return unsigned(most);
}

bool isBorrower(const plan::Plan &plan) { return plan.has_borrow(); }

} // namespace msc::exec::lending

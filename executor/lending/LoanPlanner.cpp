#include "executor/lending/LoanPlanner.h"

#include <algorithm>
#include <set>

namespace msc::exec::lending {

namespace {
void addAll(std::set<unsigned> &to, const CpuSet &cpus) { to.insert(cpus.begin(), cpus.end()); }

bool intersects(const std::vector<unsigned> &a, const std::vector<unsigned> &b) {
  for (unsigned c : a)
    if (std::binary_search(b.begin(), b.end(), c))
      return true;
  return false;
}

bool contains(const std::vector<unsigned> &sorted, unsigned v) { return std::binary_search(sorted.begin(), sorted.end(), v); }

// Lends units of `kind`: each share not kept has its units free; borrowers in admission order keep
// the loan they have where it still fits, then take the first share with room.
void decideShares(ShareKind kind, const std::vector<Owner> &owners,
                  const std::vector<PerShareKind<std::set<unsigned>>> &keptShares, const std::vector<Borrower> &borrowers,
                  Decision &d) {
  std::map<std::pair<std::string, unsigned>, unsigned> free; // (owner, share) -> units
  for (size_t i = 0; i < owners.size(); ++i)
    for (unsigned s = 0; s < shareCount(owners[i], kind); ++s)
      if (!keptShares[i][kind].count(s))
        free[{owners[i].contract, s}] = shareUnits(owners[i], kind, s);
  for (const auto &[share, units] : free)
    d.lendableUnits[kind] = std::max(d.lendableUnits[kind], units);
  std::map<std::string, ShareLoan> &out = d.borrowerShares[kind];
  auto take = [&](const Borrower &b, const std::string &owner, unsigned share) {
    auto it = free.find({owner, share});
    if (it == free.end() || it->second < b.units[kind])
      return false;
    it->second -= b.units[kind];
    out[b.contract] = ShareLoan{owner, share, b.units[kind]};
    return true;
  };
  // A borrower frozen off every CPU could not use a device: its units stay free for one that runs.
  auto runs = [&](const Borrower &b) { return !b.cpuCores || !d.borrowerCpus[b.contract].empty(); };
  std::vector<bool> placed(borrowers.size());
  for (size_t i = 0; i < borrowers.size(); ++i) {
    const ShareLoan &current = borrowers[i].currentShares[kind];
    if (borrowers[i].units[kind] && runs(borrowers[i]) && !current.empty() && current.units == borrowers[i].units[kind])
      placed[i] = take(borrowers[i], current.owner, current.share);
  }
  for (size_t i = 0; i < borrowers.size(); ++i) {
    if (!borrowers[i].units[kind] || placed[i])
      continue;
    out[borrowers[i].contract] = {};
    if (!runs(borrowers[i]))
      continue;
    for (const Owner &o : owners)
      for (unsigned s = 0; s < shareCount(o, kind) && !placed[i]; ++s)
        placed[i] = take(borrowers[i], o.contract, s);
  }
}

} // namespace

const char *shareUnitsName(ShareKind kind) { return kind == kGpuShare ? "GPU units" : "RDMA queue pairs"; }

const char *shareResourceName(ShareKind kind) { return kind == kGpuShare ? "gpu" : "rdma"; }

size_t shareCount(const Owner &o, ShareKind kind) { return kind == kGpuShare ? o.gpuShares.size() : o.rdmaShares.size(); }

unsigned shareUnits(const Owner &o, ShareKind kind, unsigned share) {
  return kind == kGpuShare ? o.gpuShares[share].units : o.rdmaShares[share].units;
}

bool sharesLentFrom(const Decision &d, ShareKind kind, const std::string &owner, const std::vector<unsigned> &shares) {
  for (const auto &[borrower, loan] : d.borrowerShares[kind])
    if (loan.owner == owner && contains(shares, loan.share))
      return true;
  return false;
}

bool sharesLentFrom(const Decision &d, const std::string &owner, const PhaseSpec &phase) {
  for (unsigned k = 0; k < kShareKinds; ++k)
    if (sharesLentFrom(d, ShareKind(k), owner, phase.keptShares[k]))
      return true;
  return false;
}

uint64_t leadOf(const Owner &o, unsigned number) {
  if (!o.leadAuto)
    return o.leadNs;
  const PhaseSpec &p = o.phases[number - 1];
  // A worker phase's entries jitter with the step; the node's own triggers only by the reclaim.
  if (p.trigger == PhaseSpec::Trigger::Worker && o.rhythm)
    return o.rhythm->lead(number, o.reclaimCostNs);
  return o.reclaimCostNs + (p.trigger == PhaseSpec::Trigger::Steps ? o.nsPerStep / 4 : 0);
}

std::vector<unsigned> activePhases(const Owner &o, uint64_t nowNs) {
  std::vector<unsigned> out;
  for (unsigned n = 1; n <= o.phases.size(); ++n) {
    const PhaseSpec &p = o.phases[n - 1];
    bool active = false;
    switch (p.trigger) {
    case PhaseSpec::Trigger::Worker: active = o.workerPhase == n; break;
    // every(N steps, for = M) is after N steps, and every N after: steps 0..M-1 are the job's start
    // (before its first step, an owner keeps everything), not a window.
    case PhaseSpec::Trigger::Steps:
      active = p.everySteps && o.step >= p.everySteps && o.step % p.everySteps < p.forSteps;
      break;
    case PhaseSpec::Trigger::WallTime: {
      uint64_t since = nowNs > o.startedNs ? nowNs - o.startedNs : 0;
      active = o.startedNs && since >= p.fromNs && since < p.toNs;
      break;
    }
    }
    if (active)
      out.push_back(n);
  }
  return out;
}

std::optional<uint64_t> nextStart(const Owner &o, unsigned number, uint64_t nowNs) {
  const PhaseSpec &p = o.phases[number - 1];
  switch (p.trigger) {
  case PhaseSpec::Trigger::Worker:
    return o.rhythm ? o.rhythm->nextEntry(number, nowNs) : std::nullopt;
  case PhaseSpec::Trigger::Steps: {
    if (!p.everySteps || !o.nsPerStep)
      return std::nullopt;
    uint64_t windowStart = (o.step / p.everySteps + 1) * p.everySteps;
    return nowNs + (windowStart - o.step) * o.nsPerStep;
  }
  case PhaseSpec::Trigger::WallTime:
    if (!o.startedNs || o.startedNs + p.fromNs < nowNs)
      return std::nullopt;
    return o.startedNs + p.fromNs;
  }
  return std::nullopt;
}

Decision decide(const std::vector<Owner> &owners, const std::vector<Borrower> &borrowers, uint64_t nowNs) {
  Decision d;
  std::set<unsigned> pool;
  std::map<unsigned, const Owner *> ownerOf;
  std::set<std::string> throttled;
  std::vector<PerShareKind<std::set<unsigned>>> keptShares(owners.size());
  for (const Owner &o : owners) {
    std::vector<unsigned> active = activePhases(o, nowNs);
    std::set<unsigned> kept;
    PerShareKind<std::set<unsigned>> &shares = keptShares[size_t(&o - owners.data())];
    auto keep = [&](const PhaseSpec &p) {
      addAll(kept, p.keptCpus);
      throttled.insert(p.keptDevices.begin(), p.keptDevices.end());
      for (unsigned k = 0; k < kShareKinds; ++k)
        shares[k].insert(p.keptShares[k].begin(), p.keptShares[k].end());
    };
    auto keptNow = [&] {
      for (unsigned k = 0; k < kShareKinds; ++k)
        d.sharesKeptNow[k][o.contract].assign(shares[k].begin(), shares[k].end());
    };
    if (active.empty()) {
      addAll(kept, o.cpus); // before the demand curve starts, and between phases
      throttled.insert(o.ioDevices.begin(), o.ioDevices.end());
      for (unsigned k = 0; k < kShareKinds; ++k)
        for (unsigned s = 0; s < shareCount(o, ShareKind(k)); ++s)
          shares[k].insert(s);
      d.keptNow[o.contract] = o.cpus;
      keptNow();
    } else {
      for (unsigned n : active)
        keep(o.phases[n - 1]);
      d.keptNow[o.contract] = CpuSet(kept.begin(), kept.end());
      keptNow();
      for (unsigned n = 1; n <= o.phases.size(); ++n) {
        if (std::find(active.begin(), active.end(), n) != active.end())
          continue;
        std::optional<uint64_t> next = anticipates(o) ? nextStart(o, n, nowNs) : std::nullopt;
        if (next && *next - nowNs <= leadOf(o, n))
          keep(o.phases[n - 1]);
      }
    }
    d.kept[o.contract] = CpuSet(kept.begin(), kept.end());
    for (unsigned c : o.cpus)
      if (!kept.count(c)) {
        pool.insert(c);
        ownerOf[c] = &o;
      }
  }
  // Borrowers in admission order: what they have and may keep first, then the lowest free CPUs.
  std::vector<CpuSet> given(borrowers.size());
  for (size_t i = 0; i < borrowers.size(); ++i)
    for (unsigned c : borrowers[i].current)
      if (given[i].size() < borrowers[i].cpuCores && pool.erase(c))
        given[i].push_back(c);
  for (size_t i = 0; i < borrowers.size(); ++i) {
    while (given[i].size() < borrowers[i].cpuCores && !pool.empty()) {
      given[i].push_back(*pool.begin());
      pool.erase(pool.begin());
    }
    std::sort(given[i].begin(), given[i].end());
    d.borrowerCpus[borrowers[i].contract] = given[i];
    for (unsigned c : given[i])
      d.lent[ownerOf[c]->contract].push_back(c);
  }
  for (unsigned k = 0; k < kShareKinds; ++k)
    decideShares(ShareKind(k), owners, keptShares, borrowers, d);
  for (const Owner &o : owners) {
    CpuSet &lent = d.lent[o.contract];
    std::sort(lent.begin(), lent.end());
    uint32_t mask = 0;
    for (unsigned n = 1; n <= o.phases.size() && n <= 32; ++n)
      if (intersects(o.phases[n - 1].keptCpus, lent) || sharesLentFrom(d, o.contract, o.phases[n - 1]))
        mask |= 1u << (n - 1);
    d.wakeMask[o.contract] = mask;
  }
  d.throttledDevices.assign(throttled.begin(), throttled.end());
  return d;
}

uint64_t nextDecisionNs(const std::vector<Owner> &owners, const Decision &decided, uint64_t nowNs) {
  uint64_t next = UINT64_MAX;
  for (const Owner &o : owners) {
    auto lent = decided.lent.find(o.contract);
    std::vector<unsigned> active = activePhases(o, nowNs);
    for (unsigned n = 1; n <= o.phases.size(); ++n) {
      const PhaseSpec &p = o.phases[n - 1];
      if (std::find(active.begin(), active.end(), n) != active.end()) {
        // A window the node opened closes on its own: what it kept may be lent again.
        if (p.trigger == PhaseSpec::Trigger::WallTime)
          next = std::min(next, o.startedNs + p.toNs);
        else if (p.trigger == PhaseSpec::Trigger::Steps && o.nsPerStep)
          next = std::min(next, nowNs + (p.forSteps - o.step % p.everySteps) * o.nsPerStep);
        continue;
      }
      if ((lent == decided.lent.end() || !intersects(p.keptCpus, lent->second)) &&
          !sharesLentFrom(decided, o.contract, p))
        continue;
      if (std::optional<uint64_t> start = anticipates(o) ? nextStart(o, n, nowNs) : std::nullopt) {
        uint64_t lead = leadOf(o, n);
        next = std::min(next, *start > nowNs + lead ? *start - lead : nowNs);
      }
    }
  }
  return next;
}

} // namespace msc::exec::lending

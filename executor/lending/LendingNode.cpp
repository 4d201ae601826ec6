#include "executor/lending/LendingNode.h"

#include "support/CpuList.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace msc::exec::lending {

namespace {
CpuSet intersection(const CpuSet &a, const CpuSet &b) {
  CpuSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// The shares of each kind `owner`'s active phases keep in `d`.
PerShareKind<std::vector<unsigned>> keptNowOf(Decision &d, const std::string &owner) {
  PerShareKind<std::vector<unsigned>> kept;
  for (unsigned k = 0; k < kShareKinds; ++k)
    kept[k] = d.sharesKeptNow[k][owner];
  return kept;
}
} // namespace

LendingNode::LendingNode(const Clock &clock, LoanMechanism &mechanism, LendingOptions options)
    : clock_(clock), mechanism_(mechanism), options_(options) {}

void LendingNode::addOwner(Owner owner, mscale::worker::ControlPage *page) {
  OwnerState o;
  o.spec = std::move(owner);
  o.page = page;
  if (page) {
    // Entries made before the node knew the owner are history, not phase changes to account.
    o.seenEntries = page->phaseEntries.load(std::memory_order_acquire);
    page->phaseWake.store(0, std::memory_order_seq_cst);
  }
  owners_.push_back(std::move(o));
}

void LendingNode::removeOwner(const std::string &contract) {
  for (OwnerState &o : owners_)
    if (o.spec.contract == contract) {
      o.leaving = true;
      o.page = nullptr; // the caller may unmap it now: nothing more is read or written there
    }
  // Its GPU slices and queue-pair groups go with its session: what is lent of them comes back now,
  // not at the next tick.
  for (BorrowerState &b : borrowers_)
    for (unsigned k = 0; k < kShareKinds; ++k) {
      BorrowerState::HeldShare &held = b.shares[k];
      if (shareMechanisms_[k] && held.lent.owner == contract) {
        std::string error;
        shareMechanisms_[k]->takeBack(b.spec.contract, error);
        held.lent = {};
      }
      if (held.releasing.owner == contract) {
        held.releasing = {};
        held.releaseByNs = 0;
      }
    }
}

void LendingNode::replacePage(const std::string &contract, mscale::worker::ControlPage *page) {
  for (OwnerState &o : owners_)
    if (o.spec.contract == contract && !o.leaving) {
      o.page = page;
      o.spec.workerPhase = 0;
      o.activeBefore.clear();
      o.seenEntries = page ? page->phaseEntries.load(std::memory_order_acquire) : 0;
      if (page)
        page->phaseWake.store(0, std::memory_order_seq_cst);
    }
}

void LendingNode::hold(const std::string &contract) {
  for (OwnerState &o : owners_)
    if (o.spec.contract == contract) {
      o.held = true;
      o.heldAtNs = clock_.monotonicNs();
    }
}

bool LendingNode::lends(const std::string &owner) const {
  for (const BorrowerState &b : borrowers_) {
    for (const BorrowerState::HeldShare &held : b.shares)
      if (held.lent.owner == owner || held.releasing.owner == owner)
        return true;
    for (const auto &[cpu, loan] : b.loans)
      if (loan.first == owner)
        return true;
  }
  return false;
}

void LendingNode::addBorrower(const std::string &contract, unsigned cpuCores, mscale::worker::ControlPage *page,
                              PerShareKind<unsigned> units) {
  BorrowerState b;
  b.spec.contract = contract;
  b.spec.cpuCores = cpuCores;
  b.spec.units = units;
  b.page = page;
  borrowers_.push_back(std::move(b));
}

void LendingNode::replaceBorrowerPage(const std::string &contract, mscale::worker::ControlPage *page) {
  for (BorrowerState &b : borrowers_)
    if (b.spec.contract == contract) {
      if (b.page != page && b.yieldByNs)
        ++yieldStats_.withdrawn; // its new worker is frozen when the time is up, unasked
      b.page = page;
      b.asked = false;
      b.yieldByNs = 0;
    }
}

void LendingNode::removeBorrower(const std::string &contract) {
  timeline_.borrower(contract, {}, clock_.monotonicNs());
  for (BorrowerState &b : borrowers_)
    for (unsigned k = 0; k < kShareKinds; ++k)
      if (b.spec.contract == contract && !b.shares[k].lent.empty() && shareMechanisms_[k]) {
        std::string error; // its processes are ended by the caller: what it held goes with them
        shareMechanisms_[k]->takeBack(contract, error);
      }
  std::erase_if(borrowers_, [&](const BorrowerState &b) { return b.spec.contract == contract; });
}

bool LendingNode::reviveBorrower(const std::string &contract, std::string &error) {
  for (BorrowerState &b : borrowers_) {
    if (b.spec.contract != contract || !b.ended)
      continue;
    // Ended, it was thawed (a frozen task does not die) on whatever cpuset it had: frozen before
    // anything of the new worker can run there. Nothing runs in it, so the freeze is immediate.
    if (!mechanism_.setCpus(contract, {}, error))
      return false;
    for (int i = 0; i < 1000; ++i)
      switch (mechanism_.settle(contract, error)) {
      case LoanMechanism::Settle::Done:
        b.ended = false;
        b.freezing = false;
        b.spec.current.clear();
        return true;
      case LoanMechanism::Settle::Failed: return false;
      case LoanMechanism::Settle::Pending: break;
      }
    error = "borrower '" + contract + "' did not freeze empty";
    return false;
  }
  return true;
}

bool LendingNode::ended(const std::string &borrower) const {
  for (const BorrowerState &b : borrowers_)
    if (b.spec.contract == borrower)
      return b.ended;
  return false;
}

void LendingNode::read(OwnerState &o, uint64_t nowNs) {
  Owner &s = o.spec;
  if (!o.page) {
    s.workerPhase = 0;
    return;
  }
  unsigned phase = o.page->phase.load(std::memory_order_acquire);
  uint64_t entries = o.page->phaseEntries.load(std::memory_order_acquire);
  uint64_t enteredNs = o.page->phaseEnteredNs.load(std::memory_order_relaxed);
  uint64_t step = o.page->step.load(std::memory_order_relaxed);
  o.enteredNs = enteredNs;
  // The worker after a fault has entered a phase: the owner lends by its phases again.
  if (o.held && phase && enteredNs > o.heldAtNs)
    o.held = false;
  // A number past the plan's phases is no phase: the owner keeps everything.
  s.workerPhase = phase <= s.phases.size() ? phase : 0;
  if (step > o.stepSeen && o.stepSeenAtNs && nowNs > o.stepSeenAtNs) {
    uint64_t sample = (nowNs - o.stepSeenAtNs) / (step - o.stepSeen);
    s.nsPerStep = s.nsPerStep ? (7 * s.nsPerStep + sample) / 8 : sample;
  }
  if (step != o.stepSeen || !o.stepSeenAtNs) {
    o.stepSeen = step;
    o.stepSeenAtNs = nowNs;
  }
  s.step = step;
  if (entries != o.seenEntries) {
    bool unseen = entries - o.seenEntries > 1;
    o.seenEntries = entries;
    if (s.workerPhase) {
      o.rhythm.entered(s.workerPhase, enteredNs, unseen);
      account(o, s.workerPhase, enteredNs);
    }
  }
}

void LendingNode::account(OwnerState &o, unsigned phase, uint64_t atNs) {
  const CpuSet &kept = o.spec.phases[phase - 1].keptCpus;
  const PerShareKind<std::vector<unsigned>> &keptShares = o.spec.phases[phase - 1].keptShares;
  if (kept.empty() && std::all_of(keptShares.begin(), keptShares.end(), [](const auto &k) { return k.empty(); }))
    return;
  // Home by now is not home at the entry: a take-back that was still in the kernel when the owner
  // entered (a freeze waiting for the borrower's threads) made it wait until the take-back returned.
  bool lent = lentFrom(o.spec.contract, kept) || sharesHeldFrom(o.spec.contract, keptShares);
  uint64_t homeLate = 0;
  for (unsigned c : kept)
    if (auto it = homeAtNs_.find(c); !lent && it != homeAtNs_.end() && it->second > atNs)
      homeLate = std::max(homeLate, it->second);
  ledger_.entered(o.spec.contract, atNs, lent || homeLate, o.spec.reclaimWithinNs);
  if (homeLate)
    ledger_.reclaimed(o.spec.contract, homeLate);
}

bool LendingNode::lentFrom(const std::string &owner, const CpuSet &cpus) const {
  for (const BorrowerState &b : borrowers_)
    for (const auto &[cpu, loan] : b.loans)
      if (loan.first == owner && std::binary_search(cpus.begin(), cpus.end(), cpu))
        return true;
  return false;
}

bool LendingNode::sharesHeldFrom(const std::string &owner, ShareKind kind, const std::vector<unsigned> &shares) const {
  auto of = [&](const ShareLoan &l) {
    return l.owner == owner && std::binary_search(shares.begin(), shares.end(), l.share);
  };
  return std::any_of(borrowers_.begin(), borrowers_.end(), [&](const BorrowerState &b) {
    const BorrowerState::HeldShare &held = b.shares[kind];
    return of(held.lent) || (held.releaseByNs && of(held.releasing));
  });
}

bool LendingNode::sharesHeldFrom(const std::string &owner, const PerShareKind<std::vector<unsigned>> &shares) const {
  for (unsigned k = 0; k < kShareKinds; ++k)
    if (sharesHeldFrom(owner, ShareKind(k), shares[k]))
      return true;
  return false;
}

void LendingNode::takeBackShare(BorrowerState &b, ShareKind kind, uint64_t nowNs, TickResult &result) {
  BorrowerState::HeldShare &held = b.shares[kind];
  std::string error;
  if (!shareMechanisms_[kind]->takeBack(b.spec.contract, error))
    result.errors.push_back("borrower '" + b.spec.contract + "': take-back of " + shareUnitsName(kind) + ": " + error);
  uint64_t bound = 2'000'000;
  for (const OwnerState &o : owners_)
    if (o.spec.contract == held.lent.owner)
      bound = o.spec.reclaimWithinNs;
  held.releasing = held.lent;
  held.releaseByNs = nowNs + std::max<uint64_t>(bound / 2, 1);
  held.lent = {};
  checkReleased(b, kind, nowNs, result);
}

void LendingNode::checkReleased(BorrowerState &b, ShareKind kind, uint64_t nowNs, TickResult &result) {
  BorrowerState::HeldShare &held = b.shares[kind];
  if (!held.releaseByNs)
    return;
  if (shareMechanisms_[kind]->released(b.spec.contract) || b.ended) {
    held.releaseByNs = 0;
    held.releasing = {};
    return;
  }
  if (nowNs < held.releaseByNs)
    return;
  std::string why = "borrower '" + b.spec.contract + "' did not let go of its " + shareUnitsName(kind) + " of '" +
                    held.releasing.owner + "' in time";
  held.releaseByNs = 0;
  held.releasing = {};
  endBorrower(b, why, result);
}

void LendingNode::apply(BorrowerState &b, const CpuSet &cpus, const std::map<unsigned, const OwnerState *> &ownerOf,
                        uint64_t nowNs, TickResult &result) {
  const std::string &name = b.spec.contract;
  CpuSet target = cpus;
  std::string error;
  bool freezing = target.empty();
  if (!mechanism_.setCpus(name, target, error)) {
    std::string what = "borrower '" + name + "' on CPUs [" + formatCpuList(target) + "]: " + error;
    bool takingBack = intersection(target, b.spec.current) != b.spec.current;
    if (!takingBack) {
      result.errors.push_back(what + "; it keeps what it has");
      return;
    }
    // What an owner keeps comes back whatever fails: frozen, or else ended.
    std::string frozenError;
    if (mechanism_.setCpus(name, {}, frozenError)) {
      result.errors.push_back(what + "; frozen instead");
      freezing = true;
    } else {
      endBorrower(b, what + "; freezing failed too (" + frozenError + ")", result);
      freezing = false;
    }
    target.clear();
  }
  b.spec.current = target;
  if (freezing) {
    b.freezing = true;
    b.freezeAskedNs = nowNs;
    settle(b, result); // a borrower with nothing running is frozen at once
    return;
  }
  b.freezing = false;
  if (b.asked)
    withdrawAsk(b); // it runs again: its yieldNow() returns
  giveBack(b, target, clock_.monotonicNs());
  for (unsigned c : target)
    if (!b.loans.count(c))
      if (auto it = ownerOf.find(c); it != ownerOf.end())
        b.loans[c] = {it->second->spec.contract, nowNs};
}

void LendingNode::throttle(BorrowerState &b, const std::vector<std::string> &devices,
                           const std::map<unsigned, const OwnerState *> &ownerOf, uint64_t nowNs,
                           TickResult &result) {
  std::string error;
  if (mechanism_.throttleIo(b.spec.contract, devices, error)) {
    b.throttled = devices;
    return;
  }
  bool adds = !std::includes(b.throttled.begin(), b.throttled.end(), devices.begin(), devices.end());
  std::string what = "borrower '" + b.spec.contract + "': IO throttle [" + llvm::join(devices, ",") + "]: " + error;
  if (!adds) {
    result.errors.push_back(what + "; it stays throttled");
    return;
  }
  // An owner's IO is kept whatever fails: a frozen borrower does no IO.
  result.errors.push_back(what + "; frozen instead");
  if (!b.spec.current.empty() || b.loans.size())
    apply(b, {}, ownerOf, nowNs, result);
}

void LendingNode::giveBack(BorrowerState &b, const CpuSet &kept, uint64_t doneNs) {
  std::erase_if(b.loans, [&](const auto &loan) {
    bool back = !std::binary_search(kept.begin(), kept.end(), loan.first);
    if (back)
      homeAtNs_[loan.first] = doneNs;
    return back;
  });
}

void LendingNode::endBorrower(BorrowerState &b, const std::string &why, TickResult &result) {
  mechanism_.end(b.spec.contract);
  for (unsigned k = 0; k < kShareKinds; ++k) {
    BorrowerState::HeldShare &held = b.shares[k];
    if (shareMechanisms_[k] && !held.lent.empty()) {
      std::string error; // its contexts and queue pairs die with it: the owner's share is made whole again
      if (!shareMechanisms_[k]->takeBack(b.spec.contract, error))
        result.errors.push_back("borrower '" + b.spec.contract + "': take-back of " + shareUnitsName(ShareKind(k)) +
                                ": " + error);
    }
    held = {};
  }
  b.ended = true;
  b.freezing = false;
  b.spec.current.clear();
  giveBack(b, {}, clock_.monotonicNs());
  result.errors.push_back(why + ", ended");
}

void LendingNode::settle(BorrowerState &b, TickResult &result) {
  std::string error;
  switch (mechanism_.settle(b.spec.contract, error)) {
  case LoanMechanism::Settle::Pending:
    return;
  case LoanMechanism::Settle::Done: {
    uint64_t done = clock_.monotonicNs();
    b.freezing = false;
    giveBack(b, {}, done);
    uint64_t sample = done - b.freezeAskedNs;
    reclaimCostNs_ = reclaimCostNs_ ? (3 * reclaimCostNs_ + sample) / 4 : sample;
    return;
  }
  case LoanMechanism::Settle::Failed:
    endBorrower(b, "borrower '" + b.spec.contract + "': " + error, result);
    return;
  }
}

TickResult LendingNode::tick() {
  TickResult result;
  uint64_t now = clock_.monotonicNs();
  size_t lentCount = 0;
  PerShareKind<size_t> lentUnits = {};
  for (const BorrowerState &b : borrowers_) {
    lentCount += b.loans.size();
    for (unsigned k = 0; k < kShareKinds; ++k)
      lentUnits[k] += b.shares[k].lent.units;
  }
  if (lastTickNs_ && now > lastTickNs_) {
    lentCoreNs_ += lentCount * (now - lastTickNs_);
    for (unsigned k = 0; k < kShareKinds; ++k) {
      lentUnitNs_[k] += lentUnits[k] * (now - lastTickNs_);
      lendableUnitNs_[k] += uint64_t(lendableUnits_[k]) * (now - lastTickNs_);
    }
    lendableCoreNs_ += uint64_t(lendableCores_) * (now - lastTickNs_);
  }
  lastTickNs_ = now;

  // A freeze under way holds the borrower's CPUs until the kernel has finished it; units taken back
  // are held until the borrower lets go of them.
  for (BorrowerState &b : borrowers_) {
    if (b.freezing)
      settle(b, result);
    for (unsigned k = 0; k < kShareKinds; ++k)
      if (shareMechanisms_[k])
        checkReleased(b, ShareKind(k), now, result);
  }

  std::vector<Owner> owners;
  std::map<unsigned, const OwnerState *> ownerOf;
  for (OwnerState &o : owners_) {
    read(o, now);
    o.spec.rhythm = &o.rhythm;
    o.spec.reclaimCostNs = reclaimCostNs_;
    Owner view = o.spec;
    if (o.leaving || o.held)
      view.phases.clear(); // no phase: it keeps everything
    std::vector<unsigned> active = activePhases(view, now);
    for (unsigned n : active)
      if (view.phases[n - 1].trigger != PhaseSpec::Trigger::Worker &&
          std::find(o.activeBefore.begin(), o.activeBefore.end(), n) == o.activeBefore.end())
        account(o, n, now); // a window the node opens is entered now
    o.activeBefore = std::move(active);
    timeline_.owner(o.spec.contract, o.activeBefore, now);
    for (unsigned c : o.spec.cpus)
      ownerOf[c] = &o;
    owners.push_back(std::move(view));
  }
  std::vector<Borrower> borrowers;
  for (const BorrowerState &b : borrowers_) {
    borrowers.push_back(b.spec);
    for (unsigned k = 0; k < kShareKinds; ++k) {
      borrowers.back().currentShares[k] = b.shares[k].lent;
      if (b.ended || !shareMechanisms_[k] || b.shares[k].releaseByNs)
        borrowers.back().units[k] = 0; // none to lend with, or it has not let go of the last yet
    }
    if (b.ended)
      borrowers.back().cpuCores = 0; // nothing runs there any more: lent nothing until removed
  }
  Decision d = decide(owners, borrowers, now);
  lendableCores_ = 0;
  for (const Owner &o : owners) {
    auto kept = d.kept.find(o.contract);
    lendableCores_ += unsigned(o.cpus.size() - (kept == d.kept.end() ? 0 : kept->second.size()));
  }
  for (unsigned k = 0; k < kShareKinds; ++k)
    lendableUnits_[k] = shareMechanisms_[k] ? d.lendableUnits[k] : 0;
  for (const std::string &device : d.throttledDevices)
    ioKeptAtNs_[device] = now;
  std::erase_if(ioKeptAtNs_, [&](const auto &kept) { return now - kept.second >= options_.ioHoldNs; });
  d.throttledDevices.clear(); // what is kept now, and what was kept within the hold (ordered)
  for (const auto &[device, keptAt] : ioKeptAtNs_)
    d.throttledDevices.push_back(device);

  // 1. Take back: every borrower down to what it may keep. One that keeps none of its CPUs but is
  // lent others moves there in one cpuset write, where no other borrower still runs on them: the
  // kernel migrates its threads at once, queued or running, whereas a freeze waits until each has
  // been scheduled again (a scheduler tick per thread queued behind the owner's on a CPU it keeps).
  // IO first: a device an owner keeps now or soon is throttled for every borrower before anything
  // else moves (a lift waits for step 4, with the lending).
  for (BorrowerState &b : borrowers_)
    if (!b.ended && !std::includes(b.throttled.begin(), b.throttled.end(), d.throttledDevices.begin(),
                                   d.throttledDevices.end()))
      throttle(b, d.throttledDevices, ownerOf, now, result);
  bool tookBack = false;
  for (BorrowerState &b : borrowers_) {
    const CpuSet &target = d.borrowerCpus[b.spec.contract];
    CpuSet keep = intersection(b.spec.current, target);
    if (keep == b.spec.current && !(b.freezing && !target.empty())) {
      if (b.yieldByNs)
        withdrawAsk(b); // what it was asked to yield is lent on
      continue;
    }
    bool moves = keep.empty() && !target.empty() && !b.ended &&
                 std::none_of(borrowers_.begin(), borrowers_.end(), [&](const BorrowerState &other) {
                   return &other != &b && (!intersection(other.spec.current, target).empty() ||
                                           std::any_of(target.begin(), target.end(), [&](unsigned c) {
                                             return other.loans.count(c) != 0;
                                           }));
                 });
    if (b.freezing && !moves)
      continue; // it goes on freezing
    // To be frozen, on CPUs some owner needs now and others it needs only soon (a lead): it leaves
    // the first at once (a shrink, which the kernel makes before the write returns) and freezes on
    // the second, which are not needed until later. A freeze waits for every task to be scheduled.
    if (keep.empty() && !moves && !b.ended) {
      CpuSet later = neededLater(b, d);
      if (!later.empty() && later != b.spec.current) {
        apply(b, later, ownerOf, now, result);
        tookBack = true;
      }
    }
    // Frozen next: one that cooperates is asked first, and runs on until it yields or its time is up.
    if (keep.empty() && !moves && !b.ended && b.page && b.page->cooperates.load(std::memory_order_acquire) &&
        askToYield(b, yieldDeadline(b, owners, d, now), now))
      continue;
    if (!moves)
      b.yieldByNs = 0; // a notice is over: frozen now, and asked still until it is lent again
    apply(b, moves ? target : keep, ownerOf, now, result);
    tookBack = true;
  }
  // GPU units and queue pairs: the borrower's share goes, the owner's is whole again, and its
  // worker is told.
  for (BorrowerState &b : borrowers_)
    for (unsigned k = 0; k < kShareKinds; ++k)
      if (!b.shares[k].lent.empty() && d.borrowerShares[k][b.spec.contract] != b.shares[k].lent) {
        takeBackShare(b, ShareKind(k), now, result);
        tookBack = true;
      }
  uint64_t done = clock_.monotonicNs();
  if (tookBack) {
    uint64_t sample = done - now;
    reclaimCostNs_ = reclaimCostNs_ ? (3 * reclaimCostNs_ + sample) / 4 : sample;
  }
  for (OwnerState &o : owners_)
    if (ledger_.open(o.spec.contract) && !lentFrom(o.spec.contract, d.keptNow[o.spec.contract]) &&
        !sharesHeldFrom(o.spec.contract, keptNowOf(d, o.spec.contract)))
      ledger_.reclaimed(o.spec.contract, done);

  // 2. Publish which entries must wake the node, then 3. look again: an owner that entered a phase
  // meanwhile may keep what 4. would lend, and is decided first.
  for (OwnerState &o : owners_)
    if (o.page)
      o.page->phaseWake.store(d.wakeMask[o.spec.contract], std::memory_order_seq_cst);
  for (OwnerState &o : owners_)
    if (o.page && o.page->phaseEntries.load(std::memory_order_seq_cst) != o.seenEntries) {
      result.nextNs = clock_.monotonicNs();
      recordLoans();
      return result;
    }
  for (BorrowerState &b : borrowers_) {
    // One whose throttle could not be set (step 1) is lent nothing until it can be.
    if (!std::includes(b.throttled.begin(), b.throttled.end(), d.throttledDevices.begin(), d.throttledDevices.end()))
      continue;
    if (!b.ended && b.throttled != d.throttledDevices)
      throttle(b, d.throttledDevices, ownerOf, now, result); // lifts what no owner keeps any more
    const CpuSet &target = d.borrowerCpus[b.spec.contract];
    if (target != b.spec.current && !b.ended && !b.yieldByNs) // one asked to yield is step 1's
      apply(b, target, ownerOf, now, result);
    for (unsigned k = 0; k < kShareKinds; ++k) {
      const ShareLoan &loan = d.borrowerShares[k][b.spec.contract];
      BorrowerState::HeldShare &held = b.shares[k];
      if (!shareMechanisms_[k] || loan.empty() || !held.lent.empty() || b.ended || held.releaseByNs)
        continue;
      std::string error;
      if (shareMechanisms_[k]->lend(b.spec.contract, loan, error)) {
        held.lent = loan;
        held.sinceNs = now;
      } else {
        result.errors.push_back("borrower '" + b.spec.contract + "': " + shareUnitsName(ShareKind(k)) + " of '" +
                                loan.owner + "': " + error + "; it is lent none");
      }
    }
  }
  result.nextNs = std::min(nextDecisionNs(owners, d, now), after(now, options_.pollNs));
  for (const auto &[device, keptAt] : ioKeptAtNs_) // a hold that ends lifts a throttle
    result.nextNs = std::min(result.nextNs, after(keptAt, options_.ioHoldNs));
  // A freeze under way is looked at soon, then less and less often: the loop runs SCHED_FIFO, and
  // polling a long freeze every few microseconds would take the very CPU its tasks need to freeze.
  for (const BorrowerState &b : borrowers_)
    if (b.freezing)
      result.nextNs = std::min(result.nextNs, after(now, std::clamp((now - std::min(now, b.freezeAskedNs)) / 4,
                                                                     options_.settlePollNs,
                                                                     options_.settlePollMaxNs)));
  // A borrower told to let go of units is looked at as a freeze is, and ended when its time is up.
  for (const BorrowerState &b : borrowers_)
    for (const BorrowerState::HeldShare &held : b.shares)
      if (held.releaseByNs)
        result.nextNs = std::min({result.nextNs, held.releaseByNs, after(now, options_.settlePollNs)});
  // A borrower asked to yield is looked at as a freeze is, and frozen when its time is up.
  for (const BorrowerState &b : borrowers_)
    if (b.yieldByNs)
      result.nextNs = std::min({result.nextNs, b.yieldByNs,
                                after(now, std::clamp((now - std::min(now, b.askedAtNs)) / 4, options_.settlePollNs,
                                                      options_.settlePollMaxNs))});
  // An entry while the node lent may have found those CPUs home and then lost them: decide again now.
  for (OwnerState &o : owners_)
    if (o.page && o.page->phaseEntries.load(std::memory_order_seq_cst) != o.seenEntries)
      result.nextNs = clock_.monotonicNs();
  std::erase_if(owners_, [&](const OwnerState &o) { return o.leaving && !lends(o.spec.contract); });
  recordLoans();
  return result;
}

CpuSet LendingNode::neededLater(const BorrowerState &b, const Decision &d) const {
  CpuSet later;
  for (const auto &[cpu, loan] : b.loans) {
    auto kept = d.kept.find(loan.first), now = d.keptNow.find(loan.first);
    if (kept != d.kept.end() && std::binary_search(kept->second.begin(), kept->second.end(), cpu) &&
        (now == d.keptNow.end() || !std::binary_search(now->second.begin(), now->second.end(), cpu)))
      later.push_back(cpu); // the map is ordered by CPU
  }
  return later;
}

uint64_t LendingNode::yieldDeadline(const BorrowerState &b, const std::vector<Owner> &owners, const Decision &d,
                                    uint64_t nowNs) const {
  uint64_t cost = 2 * reclaimCostNs_, by = UINT64_MAX;
  for (const auto &[cpu, loan] : b.loans) {
    size_t i = 0;
    while (i < owners_.size() && owners_[i].spec.contract != loan.first)
      ++i;
    auto kept = d.kept.find(loan.first);
    if (i == owners_.size() || kept == d.kept.end() || !std::binary_search(kept->second.begin(), kept->second.end(), cpu))
      continue; // not wanted back by its owner: a CPU given to another borrower
    const OwnerState &o = owners_[i];
    const Owner &view = owners[i];
    auto keeps = [&](unsigned n) {
      const CpuSet &k = view.phases[n - 1].keptCpus;
      return std::binary_search(k.begin(), k.end(), cpu);
    };
    uint64_t margin = std::max({cost, view.reclaimWithinNs / 2, options_.noticeMarginNs});
    // Kept now: in a phase (or between phases, which keeps everything) since its entry.
    bool now = view.phases.empty() || view.workerPhase == 0 ||
               std::any_of(o.activeBefore.begin(), o.activeBefore.end(), keeps);
    if (now) {
      bool byWorker = !view.phases.empty() && std::none_of(o.activeBefore.begin(), o.activeBefore.end(), [&](unsigned n) {
        return keeps(n) && view.phases[n - 1].trigger != PhaseSpec::Trigger::Worker;
      });
      if (o.leaving || o.held || !o.page || !byWorker) {
        by = std::min(by, nowNs); // no entry to count from: at once
        continue;
      }
      uint64_t entered = std::min(o.enteredNs, nowNs);
      by = std::min(by, entered + view.reclaimWithinNs > margin ? entered + view.reclaimWithinNs - margin : 0);
      continue;
    }
    // Kept soon: before the phase's expected start.
    uint64_t start = UINT64_MAX;
    for (unsigned n = 1; n <= view.phases.size(); ++n)
      if (keeps(n))
        if (std::optional<uint64_t> s = nextStart(view, n, nowNs))
          start = std::min(start, *s);
    by = std::min(by, start == UINT64_MAX ? nowNs : start > cost ? start - cost : 0);
  }
  return by == UINT64_MAX ? nowNs : by;
}

bool LendingNode::askToYield(BorrowerState &b, uint64_t byNs, uint64_t nowNs) {
  mscale::worker::ControlPage *p = b.page;
  if (b.yieldByNs) {
    if (p->yieldAck.load(std::memory_order_acquire) == b.askSeq) {
      ++yieldStats_.yielded;
      return false;
    }
    if (byNs < b.yieldByNs) { // an owner needs it sooner now: an entry earlier than expected
      b.yieldByNs = byNs;
      p->yieldByNs.store(byNs, std::memory_order_release);
    }
    if (nowNs >= b.yieldByNs) {
      ++yieldStats_.expired;
      return false;
    }
    return true;
  }
  if (byNs < nowNs + options_.minNoticeNs)
    return false;
  b.askSeq = b.askSeq + 1 ? b.askSeq + 1 : 1;
  b.yieldByNs = byNs;
  b.askedAtNs = nowNs;
  b.asked = true;
  p->yieldByNs.store(byNs, std::memory_order_relaxed);
  p->yieldAsk.store(b.askSeq, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&p->yieldAsk), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  ++yieldStats_.asked;
  return true;
}

void LendingNode::withdrawAsk(BorrowerState &b) {
  if (b.yieldByNs)
    ++yieldStats_.withdrawn; // still running: the take-back was called off, or it moved to other lent CPUs
  b.yieldByNs = 0;
  b.asked = false;
  if (!b.page)
    return;
  b.page->yieldAsk.store(0, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&b.page->yieldAsk), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void LendingNode::recordLoans() {
  uint64_t now = clock_.monotonicNs();
  for (const BorrowerState &b : borrowers_) {
    CpuSet lent;
    for (const auto &[cpu, loan] : b.loans)
      lent.push_back(cpu); // ordered by CPU
    timeline_.borrower(b.spec.contract, lent, now);
  }
}

std::vector<Loan> LendingNode::loans() const {
  std::map<std::pair<std::string, std::string>, Loan> grouped;
  for (const BorrowerState &b : borrowers_) {
    for (unsigned k = 0; k < kShareKinds; ++k) {
      const BorrowerState::HeldShare &held = b.shares[k];
      if (held.lent.empty())
        continue;
      Loan &l = grouped[{held.lent.owner, b.spec.contract}];
      bool first = l.owner.empty();
      l.owner = held.lent.owner;
      l.borrower = b.spec.contract;
      l.shares[k] = held.lent;
      if (first || held.sinceNs < l.sinceNs)
        l.sinceNs = held.sinceNs;
      for (const OwnerState &o : owners_) {
        if (o.spec.contract != held.lent.owner || held.lent.share >= shareCount(o.spec, ShareKind(k)))
          continue;
        if (k == kGpuShare) {
          l.shareRoles[k] = o.spec.gpuShares[held.lent.share].role;
          l.gpuIndex = o.spec.gpuShares[held.lent.share].gpuIndex;
        } else {
          const RdmaShare &share = o.spec.rdmaShares[held.lent.share];
          l.shareRoles[k] = share.role;
          l.rdmaPort = share.device + ":" + std::to_string(share.port);
        }
      }
    }
    for (const auto &[cpu, loan] : b.loans) {
      Loan &l = grouped[{loan.first, b.spec.contract}];
      if (l.owner.empty() || loan.second < l.sinceNs)
        l.sinceNs = loan.second;
      l.owner = loan.first;
      l.borrower = b.spec.contract;
      l.cpus.push_back(cpu); // the map is ordered by CPU
    }
  }
  std::vector<Loan> out;
  for (auto &[key, loan] : grouped)
    out.push_back(std::move(loan));
  return out;
}

unsigned LendingNode::phaseOf(const std::string &owner) const {
  for (const OwnerState &o : owners_)
    if (o.spec.contract == owner)
      return o.spec.workerPhase;
  return 0;
}

const PhaseRhythm *LendingNode::rhythmOf(const std::string &owner) const {
  for (const OwnerState &o : owners_)
    if (o.spec.contract == owner)
      return &o.rhythm;
  return nullptr;
}

ShareLoan LendingNode::shareOf(const std::string &borrower, ShareKind kind) const {
  for (const BorrowerState &b : borrowers_)
    if (b.spec.contract == borrower)
      return b.shares[kind].lent;
  return {};
}

const CpuSet &LendingNode::cpusOf(const std::string &borrower) const {
  static const CpuSet kNone;
  for (const BorrowerState &b : borrowers_)
    if (b.spec.contract == borrower)
      return b.spec.current;
  return kNone;
}

} // namespace msc::exec::lending

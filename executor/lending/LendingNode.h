// The node's reclaim machine, one tick at a time on the injected clock. A tick reads every owner's
// control page (its phase, its entries and when the newest was made, its step), learns its rhythm,
// decides what is lent (LoanPlanner.h), takes back first, publishes which phase entries must wake
// the node (ControlPage::phaseWake), checks that no owner moved meanwhile, and only then lends more;
// every phase entry that keeps CPUs is accounted against the bound (ReclaimLedger.h). A freeze does
// not hold the node: its CPUs are back when the kernel has finished it, and until then the next
// tick may move the borrower elsewhere instead. A reclaim that fails falls back to freezing the
// borrower, and a freeze that fails to ending it: a mechanism's error never leaves a borrower on
// what an owner keeps. A borrower that cooperates (its control page says so) is asked to yield
// before it is frozen, and given what is left of the time: it is frozen when it acknowledges, or
// when that time is up (ControlPage::yieldAsk).
//
// The agent calls tick() from its lending loop (LendingLoop.h) when an owner's phase word wakes it
// or at the time the last tick returned; the unit tests and the simulator call it on a ManualClock
// with SimLoans.
#pragma once

#include "executor/lending/LoanMechanism.h"
#include "executor/lending/LoanPlanner.h"
#include "executor/lending/LoanTimeline.h"
#include "executor/lending/PhaseRhythm.h"
#include "executor/lending/ReclaimLedger.h"
#include "executor/lending/ShareLoans.h"
#include "support/Clock.h"
#include "worker/WorkerApi.h"

#include <map>
#include <string>
#include <vector>

namespace msc::exec::lending {

struct LendingOptions {
  // The longest a tick waits when no time is due: a phase left for one that keeps nothing lent does
  // not wake the node, so lending again after it waits for this.
  uint64_t pollNs = 1'000'000;
  // How often a freeze under way is looked at until the kernel has finished it: first after this,
  // then after a quarter of the time it has taken so far, at most settlePollMaxNs apart.
  uint64_t settlePollNs = 20'000;
  uint64_t settlePollMaxNs = 1'000'000;
  // A borrower asked to yield is frozen by then at the latest: an owner in a phase that keeps its
  // CPUs needs them within its bound of the entry, less a margin for the freeze itself (twice the
  // measured cost of a reclaim, at least half the bound and `noticeMarginNs`); an owner that will
  // enter one, before its expected start, less twice that cost. With less than `minNoticeNs` left
  // it is frozen without being asked.
  uint64_t noticeMarginNs = 200'000;
  uint64_t minNoticeNs = 50'000;
  // A throttle stays set until no owner has kept the device for this long: each new limit starts a
  // fresh budget the kernel lets through at once (a 100 ms slice of blk-throttle), so lifting and
  // setting it at every short phase would let a flood through during the very phases that keep it.
  uint64_t ioHoldNs = 500'000'000;
};

// How the node's requests to yield ended (ControlPage::yieldAsk).
struct YieldStats {
  uint64_t asked = 0;     // notices given
  uint64_t yielded = 0;   // acknowledged in time: frozen then
  uint64_t expired = 0;   // not acknowledged: frozen at the time given
  uint64_t withdrawn = 0; // lent again before either (called off, or moved to other lent CPUs)
};

// A loan as people read it (mscale-cli node loans, contract status): who lends which CPUs, GPU
// units and queue pairs to whom, since when (monotonic; the oldest).
struct Loan {
  std::string owner, borrower;
  CpuSet cpus;
  uint64_t sinceNs = 0;
  PerShareKind<ShareLoan> shares = {}; // per kind; empty: none of it
  PerShareKind<std::string> shareRoles = {}; // the owner's role each share is of
  unsigned gpuIndex = 0;   // the GPU the GPU units are on
  std::string rdmaPort = {}; // the HCA port the queue pairs are on ("mlx5_0:1")
};

struct TickResult {
  uint64_t nextNs = UINT64_MAX;    // when to tick again at the latest
  std::vector<std::string> errors; // mechanism failures and what was done instead
};

class LendingNode {
public:
  LendingNode(const Clock &clock, LoanMechanism &mechanism, LendingOptions options = {});
  // How units of `kind` are lent and taken back (GpuLoans.h, RdmaLoans.h); without one, none is lent.
  void setShareMechanism(ShareKind kind, ShareLoanMechanism *mechanism) { shareMechanisms_[kind] = mechanism; }

  // An owner lends from `page`, which must outlive it here. `owner.startedNs` is when its worker
  // started; the fields the node reads (workerPhase, step, ...) are its own.
  void addOwner(Owner owner, mscale::worker::ControlPage *page);
  // Everything lent from it is taken back first (the next tick; its GPU units and queue pairs at
  // once, as its slices and groups go with its session), then it is forgotten.
  void removeOwner(const std::string &contract);
  // Its worker now has `page` (a warm standby took over with a page of its own): read from now on,
  // as a new worker's, which keeps everything until it enters a phase. The old page is not touched
  // again once this returns.
  void replacePage(const std::string &contract, mscale::worker::ControlPage *page);
  // An owner's worker faulted: it keeps everything from the next tick on, whatever its page says,
  // until its next worker enters a phase (an entry after now), so that recovery starts on all of it.
  void hold(const std::string &contract);
  // Whether anything is lent from `owner` now (a freeze under way included).
  bool lends(const std::string &owner) const;
  // A borrower asking for `cpuCores` CPUs, admitted after those before it; it runs on none until lent.
  // `page`, when it has a worker with one (which must outlive it here, or be replaced first), is
  // where a borrower that cooperates is asked to yield.
  // `units`: of each kind, what it asks for, lent all from one share (GPU slices on one GPU, queue
  // pairs on one port; ShareLoans.h). A borrower told to let go of them that has not acknowledged
  // within half its lender's bound is ended: neither can be frozen from the host.
  void addBorrower(const std::string &contract, unsigned cpuCores, mscale::worker::ControlPage *page = nullptr,
                   PerShareKind<unsigned> units = {});
  void replaceBorrowerPage(const std::string &contract, mscale::worker::ControlPage *page);
  void removeBorrower(const std::string &contract);
  // A borrower the node ended (a take-back that neither shrank nor froze it) gets a new worker: it is
  // frozen again, on nothing, and lent as any other from the next tick. False with `error` when it
  // cannot be frozen (it stays ended). True, doing nothing, for one that was not ended.
  bool reviveBorrower(const std::string &contract, std::string &error);
  bool ended(const std::string &borrower) const;

  TickResult tick();

  std::vector<Loan> loans() const;
  const ReclaimLedger &ledger() const { return ledger_; }
  // The phase the owner is in (0: none), as last read.
  unsigned phaseOf(const std::string &owner) const;
  const CpuSet &cpusOf(const std::string &borrower) const;
  ShareLoan shareOf(const std::string &borrower, ShareKind kind) const;
  // Each owner's active phases and each borrower's lent CPUs over time, as they changed.
  const LoanTimeline &timeline() const { return timeline_; }
  // The rhythm learnt of an owner's worker phases (null: no such owner).
  const PhaseRhythm *rhythmOf(const std::string &owner) const;
  // Core-nanoseconds lent so far, over every owner.
  uint64_t lentCoreNs() const { return lentCoreNs_; }
  // Unit-nanoseconds of `kind` lent so far, over every owner.
  uint64_t lentUnitNs(ShareKind kind) const { return lentUnitNs_[kind]; }
  // Core-nanoseconds the owners could have lent so far (their CPUs outside what they kept, whether a
  // borrower took them or not): over a window, against the window times what they lend at their
  // most, the share of time that capacity was there, as the cluster's placement of borrowers reads it.
  uint64_t lendableCoreNs() const { return lendableCoreNs_; }
  // The CPUs the owners could lend as of the last tick.
  unsigned lendableCores() const { return lendableCores_; }
  // The same for units of `kind`: unit-nanoseconds lendable so far (the most units of one share its
  // owners did not keep, over time: a borrower of the kind asks for units of one share), and the
  // units lendable as of the last tick (none of a kind the node has no mechanism for).
  uint64_t lendableUnitNs(ShareKind kind) const { return lendableUnitNs_[kind]; }
  unsigned lendableUnits(ShareKind kind) const { return lendableUnits_[kind]; }
  uint64_t reclaimCostNs() const { return reclaimCostNs_; }
  const YieldStats &yieldStats() const { return yieldStats_; }

private:
  struct OwnerState {
    Owner spec;
    mscale::worker::ControlPage *page = nullptr;
    PhaseRhythm rhythm;
    uint64_t seenEntries = 0;
    std::vector<unsigned> activeBefore;
    uint64_t stepSeen = 0, stepSeenAtNs = 0;
    uint64_t enteredNs = 0; // when its worker entered the phase it is in (its page's clock)
    bool leaving = false; // removed: lends nothing, forgotten once nothing of it is lent
    bool held = false;    // its worker faulted: it keeps everything until its next worker enters a phase
    uint64_t heldAtNs = 0;
  };
  struct BorrowerState {
    Borrower spec;
    std::map<unsigned, std::pair<std::string, uint64_t>> loans; // CPU -> owner, since
    bool ended = false;    // a take-back could neither shrink nor freeze it
    bool freezing = false; // asked to freeze, not yet frozen: `loans` are not back yet
    std::vector<std::string> throttled; // block devices its IO is throttled to
    uint64_t freezeAskedNs = 0;
    mscale::worker::ControlPage *page = nullptr;
    uint32_t askSeq = 0;     // the last yieldAsk it was given
    bool asked = false;      // its page's yieldAsk is set: cleared when it is lent again
    uint64_t yieldByNs = 0;  // a notice is running: frozen by then (0: none)
    uint64_t askedAtNs = 0;
    struct HeldShare {
      ShareLoan lent;           // now
      uint64_t sinceNs = 0;
      ShareLoan releasing;      // taken back, not yet let go of by its worker
      uint64_t releaseByNs = 0; // ended then (0: nothing to let go of)
    };
    PerShareKind<HeldShare> shares; // per kind
  };

  void read(OwnerState &o, uint64_t nowNs);
  void account(OwnerState &o, unsigned phase, uint64_t atNs);
  bool lentFrom(const std::string &owner, const CpuSet &cpus) const;
  // Whether a borrower has, or has not yet let go of, a loan of one of `owner`'s `shares` of `kind`.
  bool sharesHeldFrom(const std::string &owner, ShareKind kind, const std::vector<unsigned> &shares) const;
  // The same for any of `shares`, per kind (a phase's kept shares, or those kept now).
  bool sharesHeldFrom(const std::string &owner, const PerShareKind<std::vector<unsigned>> &shares) const;
  void takeBackShare(BorrowerState &b, ShareKind kind, uint64_t nowNs, TickResult &result);
  // Ends a borrower whose time to let go of its units of `kind` is up; forgets one that has let go.
  void checkReleased(BorrowerState &b, ShareKind kind, uint64_t nowNs, TickResult &result);
  void apply(BorrowerState &b, const CpuSet &cpus, const std::map<unsigned, const OwnerState *> &ownerOf,
             uint64_t nowNs, TickResult &result);
  // Its loans of CPUs outside `kept` are back, at `doneNs`.
  void giveBack(BorrowerState &b, const CpuSet &kept, uint64_t doneNs);
  void settle(BorrowerState &b, TickResult &result);
  void endBorrower(BorrowerState &b, const std::string &why, TickResult &result);
  void recordLoans(); // each borrower's lent CPUs into the timeline
  // Of `b`'s lent CPUs, those its owner keeps only for a phase expected soon, not for an active one.
  CpuSet neededLater(const BorrowerState &b, const Decision &d) const;
  // When `b` must be frozen at the latest for every owner that keeps one of its CPUs now or soon
  // to have it back on time (LendingOptions::noticeMarginNs); `nowNs` where it cannot be said.
  uint64_t yieldDeadline(const BorrowerState &b, const std::vector<Owner> &owners, const Decision &d,
                         uint64_t nowNs) const;
  // Asks `b` to yield by `byNs`, or goes on waiting for it: true while it may still run. False
  // when it must be frozen now (it acknowledged, its time is up, or there is none to give).
  bool askToYield(BorrowerState &b, uint64_t byNs, uint64_t nowNs);
  // Its page's request is cleared (it is lent again, or the take-back was called off).
  void withdrawAsk(BorrowerState &b);
  // Its IO throttled to `devices`; a throttle that cannot be set while an owner needs it freezes it.
  void throttle(BorrowerState &b, const std::vector<std::string> &devices,
                const std::map<unsigned, const OwnerState *> &ownerOf, uint64_t nowNs, TickResult &result);

  const Clock &clock_;
  LoanMechanism &mechanism_;
  PerShareKind<ShareLoanMechanism *> shareMechanisms_ = {};
  LendingOptions options_;
  std::vector<OwnerState> owners_;
  std::vector<BorrowerState> borrowers_;
  ReclaimLedger ledger_;
  uint64_t reclaimCostNs_ = 0; // smoothed cost of one shrink or freeze, for lead = auto
  uint64_t lastTickNs_ = 0, lentCoreNs_ = 0, lendableCoreNs_ = 0;
  PerShareKind<uint64_t> lentUnitNs_ = {}, lendableUnitNs_ = {};
  PerShareKind<unsigned> lendableUnits_ = {};
  unsigned lendableCores_ = 0;
  YieldStats yieldStats_;
  std::map<unsigned, uint64_t> homeAtNs_; // per CPU: when its last take-back returned
  std::map<std::string, uint64_t> ioKeptAtNs_; // per throttled device: when an owner last kept it
  LoanTimeline timeline_;
};

} // namespace msc::exec::lending

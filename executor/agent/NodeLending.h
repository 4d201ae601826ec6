// The node's loans, kept by the agent beside its ledger (NodeLedger.h): the admitted contracts whose
// plans have phases lend what their phases do not keep, those of `class = opportunistic` run on it,
// and the lending loop (executor/lending/LendingLoop.h) takes it back on time. One manager for one
// resource, as kubelet's cm/ has them: its policy is LoanPlanner's, its state LendingNode's, its
// mechanism the borrowers' cgroups (CgroupLoans), or SimLoans on a simulated host.
//
// Called on the agent's loop thread; the lending loop runs on its own, and every change to the node
// goes through LendingLoop::withNode.
#pragma once

#include "executor/core/Logger.h"
#include "executor/gpu/GpuBackend.h"
#include "executor/lending/CgroupLoans.h"
#include "executor/lending/GpuLoans.h"
#include "executor/lending/RdmaLoans.h"
#include "executor/lending/LendingLoop.h"
#include "executor/lending/SimLoans.h"
#include "plan/plan.pb.h"
#include "support/Clock.h"
#include "worker/ControlPage.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace msc::exec {

// What `contract status` and `node loans` show of one contract.
struct LendingView {
  std::string phase;                   // an owner's phase now ("" between phases, before the first)
  std::vector<lending::Loan> loans;    // lent by it (an owner), or lent to it (a borrower)
  bool borrower = false, frozen = false; // a borrower running on nothing now
  lending::ReclaimStats reclaims;      // an owner's entries against its bound
  uint64_t reclaimWithinNs = 0;        // an owner's bound
  std::optional<uint64_t> cpuTimeNs;   // a borrower's CPU time from its cgroup (none on a sim host)
};

// An owner's GPU slices and queue-pair groups as its session holds them, lent through its backends
// (null: none of that kind lent).
struct OwnerDevices {
  GpuBackend *gpuBackend = nullptr;
  std::vector<std::pair<int, SliceId>> slices; // plan.gpu_slices() index, the backend's slice
  RdmaBackend *rdmaBackend = nullptr;
  std::vector<std::pair<int, QpGroupId>> qpGroups; // plan.rdma() index, the backend's group
};

// What the node lends, as the cluster's placement of borrowers reads it (cluster/agent's
// LendingReporter publishes it): the most its owners lend, what they could lend and what is lent
// now, and the core-time (unit-time) lendable and lent so far on the lending's monotonic clock.
struct LendingOffer {
  unsigned owners = 0;
  unsigned cpus = 0;     // the CPUs the owners lend at their most, summed (the largest borrower admitted)
  unsigned gpuUnits = 0;       // the most GPU units one owner lends on one GPU
  unsigned rdmaQueuePairs = 0; // the most queue pairs one owner lends on one port
  unsigned lendableCpus = 0, lentCpus = 0; // as of the lending's last tick
  uint64_t lendableCoreNs = 0;             // LendingNode::lendableCoreNs
  uint64_t lentCoreNs = 0;                 // LendingNode::lentCoreNs
  // The same of GPU units and queue pairs (lending::ShareKind), on one GPU / port.
  lending::PerShareKind<unsigned> lendableUnits = {}, lentUnits = {};
  lending::PerShareKind<uint64_t> lendableUnitNs = {}, lentUnitNs = {};
  uint64_t atNs = 0;                       // when it was read (monotonic)
};

class NodeLending {
public:
  // `simulated`: the host backend is `sim` (a recorded node served on this machine): loans are
  // decided and kept as on a real node, and no cgroup is touched. `recordDir` (the agent's state
  // directory's `borrowers/`; empty: none) names each borrower while it has cgroups, so that the
  // next agent of this state directory ends what an agent that died left of them (WRN_EXEC_005):
  // nothing of theirs may run unsupervised on what an owner keeps. Borrowers of other agents (their
  // own state directories) are not touched.
  NodeLending(Logger &log, bool simulated, std::string recordDir);
  ~NodeLending();
  NodeLending(const NodeLending &) = delete;
  NodeLending &operator=(const NodeLending &) = delete;

  // An owner: `plan` has phases. Its worker's control page (rank 0's: a job enters its phases in
  // lockstep) is read through a mapping of the lending's own, so that a page the worker group drops
  // (a standby taking over) is never read after it is gone. False with `error`.
  // Its GPU slices and queue pairs (`devices`) are lent too, in phases that do not keep their
  // role's `gpu` / `rdma`; the backends must outlive the owner here (remove() takes back what is
  // lent of them at once).
  bool addOwner(const plan::Plan &plan, const worker::ControlPageHost &page, std::string &error,
                const OwnerDevices &devices = {});
  // The contract's worker now has `page` (a new owner's worker after a standby took over; a
  // borrower's, where it is asked to yield): followed from now on.
  void followPage(const std::string &contract, const worker::ControlPageHost &page);
  // An owner's worker faulted: everything it lent is taken back before recovery starts, and stays
  // home until its next worker enters a phase (LendingNode::hold). Waits for the take-back, at
  // most its bound and then as long again for a freeze to settle; false when it is not back by then.
  bool holdForRecovery(const std::string &contract);

  // A borrower (`plan` of class = opportunistic): admitted when the owners here lend, at their most,
  // at least the CPUs it asks for, one of them the GPU units it asks for (gpu_sm_slices) on one GPU,
  // and one the queue pairs it asks for (rdma_qps) on one port; its cgroups are made, frozen. False
  // with the reason (ERR_EXEC_033).
  bool addBorrower(const plan::Plan &plan, std::string &error);
  // The gate of the borrower's worker: it joins its cgroups before it execs. A worker started after
  // the node ended the last one (its supervisor's restart) revives the borrower: frozen again, then
  // lent as any other.
  bool joinBorrower(const std::string &contract, pid_t pid, std::string &error);

  // Forgets an owner (what it lent comes back first) or a borrower (its processes ended).
  void remove(const std::string &contract);

  bool lends(const std::string &contract) const { return owners_.count(contract) != 0; }
  bool borrows(const std::string &contract) const { return borrowers_.count(contract) != 0; }
  // A borrower that runs on nothing now: its silence is no hang.
  bool frozen(const std::string &borrower);
  // How the node's requests to yield ended, over every borrower.
  lending::YieldStats yieldStats();
  std::optional<LendingView> view(const std::string &contract);
  std::vector<lending::Loan> loans();
  // Core-nanoseconds lent since this lending started, over every owner.
  uint64_t lentCoreNs();
  LendingOffer offer();
  // Of offer(), who lends and how much at their most (owners, cpus, units): what the agent's
  // thread keeps itself, read without stopping the lending loop, so that a change is seen at once.
  LendingOffer most() const;
  // Unit-nanoseconds of `kind` lent since this lending started, over every owner.
  uint64_t lentUnitNs(lending::ShareKind kind);
  // What it did over time (LendingNode::timeline), with each owner's CPUs and phase names, and the
  // time it was read on the same clock.
  struct Timeline {
    struct OwnerInfo {
      std::string contract;
      lending::CpuSet cpus;
      std::vector<std::string> phases;
    };
    uint64_t nowNs = 0;
    std::vector<OwnerInfo> owners;
    std::vector<lending::TimelineChange> changes;
  };
  Timeline timeline();
  const char *mechanism() const { return mechanism_; }
  // On a simulated host, runs `change` on its SimLoans between the loop's ticks (tests and the
  // simulator make a take-back fail this way); false on a real host.
  bool withSimLoans(const std::function<void(lending::SimLoans &)> &change);

private:
  struct MappedPage {
    int fd = -1;
    void *map = nullptr;
    ino_t inode = 0;
    std::vector<std::string> phaseNames;
    uint64_t reclaimWithinNs = 0;
    lending::CpuSet cpus;
  };
  bool mapPage(const worker::ControlPageHost &page, MappedPage &out, std::string &error);
  static void unmapPage(MappedPage &p);
  void endLeftBorrowers();
  void onErrors(const std::vector<std::string> &errors);
  void watchPages();

  Logger &log_;
  std::string recordDir_;
  SystemClock clock_;
  ManualClock simClock_{0}; // SimLoans' changes take no time on a simulated host
  std::unique_ptr<lending::CgroupLoans> cgroups_;
  std::unique_ptr<lending::SimLoans> sim_;
  const char *mechanism_ = "";
  std::unique_ptr<lending::LendingNode> node_;
  std::unique_ptr<lending::LendingLoop> loop_;
  std::map<std::string, MappedPage> owners_;
  std::map<std::string, unsigned> borrowers_; // CPUs asked
  std::map<std::string, MappedPage> borrowerPages_; // their workers' control pages, once known
  std::map<std::string, unsigned> mostLent_;  // per owner
  std::map<std::string, lending::PerShareKind<unsigned>> mostLentUnits_; // per owner: of each kind, from one share
  lending::BackendGpuLoans gpuLoans_;   // used on the loop's thread (withNode)
  lending::BackendRdmaLoans rdmaLoans_; // used on the loop's thread (withNode)
};

} // namespace msc::exec

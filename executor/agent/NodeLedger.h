// The node's ledger: the contracts admitted on this node, each with its Session (the applied
// resources) and Supervisor (its worker). Admit = re-check + apply + persist; release; resize.
// Knows nothing of sockets or of the protocol.
#pragma once

#include "admission/Claims.h"
#include "executor/host/HostAppliers.h"
#include "executor/core/Logger.h"
#include "executor/NodeConfig.h"
#include "executor/Session.h"
#include "executor/Supervisor.h"
#include "executor/agent/AttachedProcesses.h"
#include "executor/agent/NodeLending.h"
#include "executor/claims/NodeClaims.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

struct LedgerOptions {
  std::string topology = "live"; // what plans are re-checked against (tests: a recorded node)
  // The name the node goes by when it is not the topology's own: a cluster node is its registration
  // (`serve --endpoints ... --node N`), and the controller compiles its plans for a topology of that name.
  std::string nodeName;
  NodeConfig config;
  ApplierOptions appliers;
};

// Admissions are kept in state_dir/<contract>.msp, so that a restarted agent re-applies what it had
// admitted (without the workers).
class NodeLedger {
public:
  enum class WorkerState { None, Running, Exited, Killed };
  // Where a contract's worker output is kept: state_dir/logs/<contract>/ (empty without state_dir).
  std::string logDir(const std::string &contract) const;
  struct Contract {
    std::unique_ptr<Session> session;
    // What its workers print, by rank and attempt (state_dir/logs/<contract>/); before the
    // supervisor, which writes through it, so that it outlives it.
    std::unique_ptr<WorkerOutput> output;
    std::unique_ptr<Supervisor> supervisor; // its worker (if any), heartbeats, recovery, resizes
    std::vector<std::string> command;
    WorkerState workerState = WorkerState::None;
    int exitStatus = 0; // the exit status, or the signal when killed
    pid_t lastPid = 0;
    int64_t admittedMs = 0;
    std::unique_ptr<AttachedProcesses> attached; // made at the first attach
  };
  // What an attached process needs to behave as a worker of the contract: the environment the
  // agent's workers get, less the variables naming the agent's file descriptors (WorkerVariables.h),
  // and those descriptors (the hugepage pools, its control page) for it to take.
  struct Attachment {
    std::map<std::string, std::string> environment;
    std::vector<HandedFd> fds;
  };

  NodeLedger(LedgerOptions options, Logger &log);
  // Releases every contract's resources; the admissions stay in state_dir.
  ~NodeLedger();
  NodeLedger(const NodeLedger &) = delete;
  NodeLedger &operator=(const NodeLedger &) = delete;

  // Re-checks and re-applies the admissions kept in state_dir, without their workers. A plan that no
  // longer fits stays admitted but not applied (status says so) until it is released.
  void loadState(DiagnosticEngine &diags);
  // The admission's re-check alone (a valid contract id; the plan against the live node and everything
  // admitted), applying nothing: `--mscale-contract-check` and admit. The live topology, or nullopt
  // with diagnostics when refused.
  std::shared_ptr<const hal::Topology> recheck(const plan::Plan &plan, const std::string &planName,
                                               DiagnosticEngine &diags) const;
  // Re-check against everything admitted, apply, start the worker when `command` is not empty,
  // persist. Null with diagnostics when refused; then nothing of it stays applied.
  const Contract *admit(const plan::Plan &plan, const std::string &planName, std::vector<std::string> command,
                        std::map<std::string, std::string> environment, DiagnosticEngine &diags);
  // Stops the worker, releases the resources and forgets the admission (its state file too).
  void release(const std::string &contract, DiagnosticEngine &diags);
  // Hands `contract` over to `next` (its plan compiled anew) while the worker runs, then persists it.
  // False with `error` when the supervisor refuses; nothing changed then.
  bool resize(const std::string &contract, const plan::Plan &next, const std::string &why, std::string &error,
              DiagnosticEngine &diags);

  // The job of `contract` was placed anew and keeps this node with other placement variables
  // (Supervisor::reassign): its worker restarts with `environment`, the applied resources and the
  // memory tier stay. False with `error` when the contract is not admitted with a worker or nothing
  // can be kept; nothing changed then (the caller releases and admits anew).
  bool reassign(const std::string &contract, std::map<std::string, std::string> environment, const std::string &why,
                std::string &error);

  // Binds process `pid` (started by someone else, e.g. slurmstepd) to an applied contract, watches
  // its heartbeats from then on (AttachedProcesses.h) and returns what it needs. The caller has
  // checked that the contract exists and that the asker may move the process. Null with
  // ERR_EXEC_028 (with the appliers' own code before it) when it cannot be attached.
  std::optional<Attachment> attach(const std::string &contract, pid_t pid, DiagnosticEngine &diags);
  const Contract *find(const std::string &contract) const;
  // A planned stop of the contract's workers (a drain: Supervisor::requestStopAfter; 0 withdraws
  // it). False when the contract has no supervised worker.
  bool requestStopAfter(const std::string &contract, uint64_t step);
  // The node's loans (NodeLending.h): what the contracts with phases lend and the opportunistic
  // ones borrow. Null until the first of them was admitted.
  NodeLending *lending() const { return lending_.get(); }
  const std::map<std::string, std::unique_ptr<Contract>> &contracts() const { return contracts_; }

  // What the admitted contracts hold, all of them or all but `contract`: the one input of every
  // re-check, computed here only.
  admission::Held held() const;
  admission::Held heldExcept(const std::string &contract) const;

  // Supervision between requests: reap exited workers (recovering where the supervisor says so), run
  // the supervisors' timers and watch the attached processes; nextWakeNs says when the loop must come back for them.
  void supervise(uint64_t nowNs);
  uint64_t nextWakeNs(uint64_t nowNs) const;

private:
  std::string claimsDir() const;
  bool usesLedger() const; // NodeClaims::used
  std::optional<NodeClaims> lockClaims(DiagnosticEngine &diags) const;
  void claim(const plan::Plan &plan, NodeClaims &claims);
  void reapWorkers();
  // The node's topology as plans are re-checked against it (options_.topology, named nodeName). A
  // live node (or a recorded sysfs tree) is discovered once and then kept current by re-reading
  // what changes while it runs (hal/LiveRefresh.h); a topology file is read every time.
  std::shared_ptr<const hal::Topology> nodeTopology(DiagnosticEngine &diags) const;
  std::shared_ptr<const hal::Topology> discoverNodeTopology(DiagnosticEngine &diags) const;
  // The plan file of `contract` in the state directory (only meaningful when one is configured).
  std::string statePath(const std::string &contract) const;
  bool persist(const Contract &c, DiagnosticEngine &diags);
  SessionOptions sessionOptions() const;
  std::unique_ptr<Supervisor> makeSupervisor(Session &session, std::vector<std::string> command,
                                             std::map<std::string, std::string> environment,
                                             const std::string &planName, WorkerOutput *output = nullptr);

  // Made at the first contract that lends or borrows, or at loadState when an agent before this one
  // left borrowers (it ends them).
  NodeLending &makeLending();
  // An admitted contract with phases lends from now on, when the node can read its phases and take
  // its CPUs back; else WRN_EXEC_006 says why it keeps everything.
  void startLending(const std::string &contract, const Contract &c);

  LedgerOptions options_;
  Logger &log_;
  std::unique_ptr<NodeLending> lending_;
  std::map<std::string, std::unique_ptr<Contract>> contracts_;
  // The last live topology (nodeTopology); Sessions share it, so a change makes a new one.
  mutable std::shared_ptr<const hal::Topology> live_;
};

} // namespace msc::exec

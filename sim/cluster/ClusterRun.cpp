#include "sim/cluster/ClusterRun.h"

#include "cluster/controller/ClusterState.h"
#include "cluster/controller/Decide.h"
#include "cluster/controller/Reconcile.h"
#include "cluster/keys/Keys.h"
#include "sim/cluster/SimStore.h"
#include "support/Clock.h"

#include <llvm/ADT/StringRef.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <set>

namespace msc::sim {

namespace {
constexpr double kHourNs = 3.6e12;
constexpr const char *kJob = "job";
constexpr int64_t kLeaderRevision = 1; // one leader for the whole run: its key's create revision

std::string nodeName(unsigned k) {
  char name[16];
  std::snprintf(name, sizeof name, "node%05u", k);
  return name;
}

// The lemon nodes' extra faults: their GPU and node causes at (factor - 1) times the rate, over
// the lemons alone.
std::vector<FaultCause> lemonExcess(const std::vector<FaultCause> &causes, double factor) {
  std::vector<FaultCause> out;
  for (FaultCause c : causes)
    if (c.scope != Scope::Job && factor > 1) { // a job's own causes strike no node more than another
      c.perComponentHour *= factor - 1;
      out.push_back(std::move(c));
    }
  return out;
}

struct SimNode {
  std::string name;
  int64_t lease = 0;  // 0: not registered (its lease expired, in repair)
  bool down = false;  // taken out by a fault: its agent is gone, its registration waits for the TTL
  bool lemon = false;
  int64_t workerFaults = 0; // the agent's count of its workers' faults (AssignmentStatus::faults)
};

enum class Phase { Training, Detecting, Unplaced, Restarting, Stopped };

class Cluster {
public:
  Cluster(const ClusterSpec &spec, uint64_t seed)
      : spec_(spec), costs_(spec.costs), model_(spec.causes, {spec.nodes, spec.gpusPerNode}),
        lemonModel_(lemonExcess(spec.causes, spec.lemonFactor), {spec.lemonNodes, spec.gpusPerNode}),
        policy_(spec.costs.policy), rng_(seed), lemonRng_(seed ^ 0x9e3779b97f4a7c15ull), clock_(0) {
    options_.stdlibDir = spec.stdlibDir;
    options_.compilerVersion = "sim";
    options_.lostNodeGrace = std::chrono::milliseconds(costs_.lostNodeGraceNs / 1'000'000);
    options_.growElastic = false;
  }

  ClusterRun run(uint64_t durationNs) {
    for (unsigned k = 0; k < spec_.nodes; ++k) {
      nodes_.push_back({nodeName(k)});
      registerNode(k);
    }
    // Lemons spread over the cluster: placement takes nodes in name order, and lemons all at the
    // front would all be in the job.
    for (unsigned i = 0; i < spec_.lemonNodes && spec_.nodes; ++i)
      nodes_[lemonNode(i)].lemon = true;
    if (!spec_.clusterConfig.empty())
      store_.put(cluster::kConfigKey, cluster::encodeConfig({"sim", spec_.clusterConfig}));
    store_.put(std::string(cluster::kContractsPrefix) + kJob,
               cluster::encodeSubmission({kJob, spec_.contractSource, {"/bin/true"}, {}}));
    requestRound();
    scheduleFault();
    scheduleLemonFault();
    while (!events_.empty() && events_.top().at < durationNs) {
      Event e = events_.top();
      events_.pop();
      advance(e.at);
      handle(e);
    }
    advance(durationNs);
    out_.hours = double(durationNs) / kHourNs;
    return out_;
  }

private:
  enum class Kind { Fault, LemonFault, LeaseExpired, NodeBack, Round, JobStep };
  struct Event {
    uint64_t at;
    uint64_t seq;
    Kind kind;
    unsigned node = 0;
    uint64_t epoch = 0; // a JobStep: the job's epoch it belongs to (a newer interruption voids it)
    size_t cause = 0;   // a fault: its cause
    bool operator>(const Event &o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  unsigned lemonNode(unsigned i) const { return unsigned(uint64_t(i) * spec_.nodes / spec_.lemonNodes); }

  void schedule(uint64_t at, Kind kind, unsigned node = 0, uint64_t epoch = 0, size_t cause = 0) {
    events_.push({at, seq_++, kind, node, epoch, cause});
  }
  void scheduleFault() {
    if (model_.perHour() <= 0)
      return;
    Fault f = model_.next(now_, rng_);
    schedule(f.atNs, Kind::Fault, f.node, 0, f.cause);
  }
  void scheduleLemonFault() {
    if (spec_.lemonNodes == 0 || lemonModel_.perHour() <= 0)
      return;
    Fault f = lemonModel_.next(now_, lemonRng_);
    schedule(f.atNs, Kind::LemonFault, lemonNode(f.node), 0, f.cause);
  }

  void handle(const Event &e) {
    switch (e.kind) {
    case Kind::Fault:
      strike(e.node, model_.causes()[e.cause]);
      scheduleFault();
      break;
    case Kind::LemonFault:
      strike(e.node, lemonModel_.causes()[e.cause]);
      scheduleLemonFault();
      break;
    case Kind::LeaseExpired:
      say(nodes_[e.node].name + ": its lease ran out");
      store_.revokeLease(nodes_[e.node].lease);
      nodes_[e.node].lease = 0;
      if (placement_.count(e.node) && phase_ == Phase::Detecting && waitingForStore_)
        enter(Phase::Unplaced);
      requestRound();
      break;
    case Kind::NodeBack:
      say(nodes_[e.node].name + ": back from repair");
      nodes_[e.node].down = false;
      registerNode(e.node);
      requestRound();
      break;
    case Kind::Round:
      if (e.at != lastRoundAt_ || out_.rounds == 0)
        round();
      break;
    case Kind::JobStep:
      if (e.epoch == epoch_)
        stepDone();
      break;
    }
  }

  // --- the nodes' agents ----------------------------------------------------------------------

  void say(const std::string &what) {
    if (spec_.trace)
      spec_.trace(now_, what);
  }

  void registerNode(unsigned k) {
    SimNode &n = nodes_[k];
    n.lease = store_.grantLease();
    store_.put(cluster::nodeKey(n.name), cluster::encodeRegistration({"sim", spec_.topologyYaml}), n.lease);
  }

  // A fault of `cause` strikes node `k` (a job's own cause strikes one of its ranks).
  void strike(unsigned k, const FaultCause &cause) {
    if (cause.scope == Scope::Job) {
      if (placement_.empty())
        return;
      auto it = placement_.begin();
      std::advance(it, rng_() % placement_.size()); // not a std distribution: the same draw everywhere
      k = *it;
    }
    SimNode &n = nodes_[k];
    if (n.down)
      return; // nothing of it runs while it is out
    bool ofTheJob = placement_.count(k) && jobRuns();
    say(n.name + ": " + cause.name + (ofTheJob ? " (the job's)" : ""));
    if (takesNodeOut(cause.faultClass)) {
      // The agent goes with its node: its registration stays until its lease runs out.
      n.down = true;
      ++out_.lostNodes;
      schedule(after(now_, costs_.leaseTtlNs), Kind::LeaseExpired, k);
      schedule(after(now_, costs_.repairNs), Kind::NodeBack, k);
      if (ofTheJob) {
        interrupted();
        waitingForStore_ = true;
        enter(Phase::Detecting);
      }
      return;
    }
    if (!ofTheJob)
      return; // a worker fault needs a worker
    ++out_.workerFaults;
    interrupted();
    exec::RestartDecision d = policy_.onFault(cause.faultClass, attemptTrained_ > 0, attemptStartedNs_, now_);
    // Its agent counts the fault in the assignment's status: the controller's evidence for the
    // lemon rule.
    writeStatus(k, cause);
    if (!d.restarts()) {
      enter(Phase::Stopped);
      return;
    }
    pendingRestartNs_ = d.delayNs + costs_.restartNs;
    enter(Phase::Detecting);
    waitingForStore_ = false;
    schedule(after(now_, cause.faultClass == exec::FaultClass::WorkerHung ? costs_.hangDetectNs : costs_.crashDetectNs),
             Kind::JobStep, 0, epoch_);
  }

  void writeStatus(unsigned k, const FaultCause &cause) {
    SimNode &n = nodes_[k];
    cluster::AssignmentStatus s;
    s.state = "applied";
    s.leaderRevision = kLeaderRevision;
    s.worker = "running";
    s.faults = ++n.workerFaults;
    s.lastFault = std::string(exec::faultClassName(cause.faultClass)) + ": " + cause.name;
    store_.put(cluster::statusKey(n.name, kJob), cluster::encodeStatus(s), n.lease);
    requestRound();
  }

  // --- the controller -------------------------------------------------------------------------

  void requestRound(uint64_t delayNs = 0) { schedule(after(now_, costs_.reconcileNs + delayNs), Kind::Round); }

  void round() {
    lastRoundAt_ = now_;
    ++out_.rounds;
    clock_.set(now_);
    cluster::ClusterState state =
        cluster::clusterStateFrom(store_.range(cluster::kRootPrefix), store_.revision(), memory_);
    cluster::Decision d = cluster::decide(state, memory_, clock_, options_, kLeaderRevision);
    cluster::commitDecision(d, state.revision, [&](const etcd::Txn &txn) { return store_.txn(txn); });
    out_.cordoned += d.report.cordoned.size();
    for (const auto *lines : {&d.report.placed, &d.report.replaced, &d.report.refused, &d.report.waiting,
                              &d.report.released, &d.report.cordoned, &d.report.faults})
      for (const std::string &line : *lines)
        say("controller: " + line.substr(0, 160));
    if (!d.report.refused.empty())
      ++out_.refusedRounds;
    if (!d.report.waiting.empty())
      requestRound(costs_.lostNodeGraceNs); // the grace runs out then
    placementRead();
  }

  // The job's assignments as its agents find them after the round.
  void placementRead() {
    std::set<unsigned> nodes;
    int64_t identity = 0;
    for (const etcd::KeyValue &kv : store_.range(cluster::kAssignmentsPrefix)) {
      llvm::StringRef rest = llvm::StringRef(kv.key).drop_front(std::strlen(cluster::kAssignmentsPrefix));
      auto [node, contract] = rest.split('/');
      if (contract != kJob || !node.consume_front("node"))
        continue;
      unsigned k = 0;
      if (node.getAsInteger(10, k) || k >= nodes_.size())
        continue;
      nodes.insert(k);
      identity = std::max(identity, kv.modRevision);
    }
    if (nodes.empty()) {
      if (!placement_.empty()) { // released: whatever ran stops
        if (phase_ == Phase::Training)
          interrupted();
        placement_.clear();
        enter(Phase::Unplaced);
      }
      return;
    }
    if (identity == placementIdentity_)
      return;
    // A new placement: its workers start and restore.
    if (phase_ == Phase::Training)
      interrupted();
    placement_ = std::move(nodes);
    placementIdentity_ = identity;
    ++out_.placements;
    if (out_.mostNodes == 0)
      out_.mostNodes = unsigned(placement_.size());
    pendingRestartNs_ = costs_.restartNs;
    enter(Phase::Restarting);
    schedule(after(now_, pendingRestartNs_), Kind::JobStep, 0, epoch_);
  }

  // --- the job ----------------------------------------------------------------------------------

  void enter(Phase p) {
    phase_ = p;
    ++epoch_;
  }

  void stepDone() {
    if (phase_ == Phase::Detecting) {
      enter(Phase::Restarting);
      schedule(after(now_, pendingRestartNs_), Kind::JobStep, 0, epoch_);
    } else if (phase_ == Phase::Restarting) {
      enter(Phase::Training);
      attemptStartedNs_ = now_;
      attemptTrained_ = 0;
    }
  }

  // Whether the job's ranks are up (training, restarting or seeing a worker's fault), so that a
  // fault of one of them interrupts it: not while it waits for a lost node's replacement.
  bool jobRuns() const {
    return phase_ == Phase::Training || phase_ == Phase::Restarting || (phase_ == Phase::Detecting && !waitingForStore_);
  }

  double sizeShare() const { return out_.mostNodes ? double(placement_.size()) / out_.mostNodes : 0; }

  // An interruption of the running job: what it trained since its newest snapshot is lost.
  void interrupted() {
    ++out_.interruptions;
    double lost = double(sinceSnapshot_) / kHourNs;
    out_.training -= lost;
    out_.sizedTraining -= lost * sizeShare();
    out_.replayed += lost;
    sinceSnapshot_ = 0;
    stallLeft_ = 0;
  }

  // Accounts the time from now to `to` to what the job is doing.
  void advance(uint64_t to) {
    if (to <= now_)
      return;
    uint64_t ns = to - now_;
    now_ = to;
    double hours = double(ns) / kHourNs;
    switch (phase_) {
    case Phase::Training: train(ns); break;
    case Phase::Detecting: out_.detection += hours; break;
    case Phase::Unplaced: out_.unplaced += hours; break;
    case Phase::Restarting: out_.restart += hours; break;
    case Phase::Stopped: out_.stopped += hours; break;
    }
  }

  void train(uint64_t ns) {
    while (ns > 0) {
      if (stallLeft_ > 0) {
        uint64_t x = std::min(ns, stallLeft_);
        stallLeft_ -= x, ns -= x;
        out_.snapshots += double(x) / kHourNs;
        if (stallLeft_ == 0)
          sinceSnapshot_ = 0; // committed
        continue;
      }
      uint64_t every = costs_.snapshotEveryNs;
      uint64_t x = every ? std::min(ns, every - sinceSnapshot_) : ns;
      sinceSnapshot_ += x;
      attemptTrained_ += x;
      out_.training += double(x) / kHourNs;
      out_.sizedTraining += double(x) / kHourNs * sizeShare();
      ns -= x;
      if (every && sinceSnapshot_ == every) {
        if (costs_.snapshotStallNs)
          stallLeft_ = costs_.snapshotStallNs;
        else
          sinceSnapshot_ = 0;
      }
    }
  }

  const ClusterSpec &spec_;
  const ClusterCosts &costs_;
  FaultModel model_, lemonModel_;
  exec::RestartPolicy policy_;
  std::mt19937_64 rng_, lemonRng_;
  ManualClock clock_;
  SimStore store_;
  cluster::ReconcileMemory memory_;
  cluster::ReconcileOptions options_;
  std::vector<SimNode> nodes_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0, now_ = 0, lastRoundAt_ = 0;
  ClusterRun out_;

  Phase phase_ = Phase::Unplaced;
  uint64_t epoch_ = 0;
  bool waitingForStore_ = false; // Detecting a lost node: the job waits for its lease to run out
  uint64_t pendingRestartNs_ = 0;
  std::set<unsigned> placement_;
  int64_t placementIdentity_ = 0;
  uint64_t sinceSnapshot_ = 0, stallLeft_ = 0, attemptStartedNs_ = 0, attemptTrained_ = 0;
};
} // namespace

ClusterRun runCluster(const ClusterSpec &spec, uint64_t durationNs, uint64_t seed) {
  return Cluster(spec, seed).run(durationNs);
}

} // namespace msc::sim

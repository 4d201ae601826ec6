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
#include <optional>
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
  cluster::AssignmentStatus status; // what its agent last wrote for the job there
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
    stepNs_ = costs_.stepNs ? costs_.stepNs : 1'000'000'000;
  }

  ClusterRun run(uint64_t durationNs) {
    for (unsigned k = 0; k < spec_.nodes; ++k) {
      nodes_.push_back({nodeName(k), 0, false, false, {}});
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
    for (;;) {
      // The job reaches the step the leader asked it to stop after before the next event: it
      // stops there, and what that writes is seen in its own time.
      uint64_t next = events_.empty() ? durationNs : std::min(events_.top().at, durationNs);
      if (std::optional<uint64_t> stop = stopTime(); stop && *stop <= next && *stop < durationNs) {
        advance(*stop);
        stoppedForGrow();
        continue;
      }
      if (events_.empty() || events_.top().at >= durationNs)
        break;
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
      if (e.at > lastRoundAt_ || out_.rounds == 0) // a round at or after it saw what it was asked for
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
    bool standby = costs_.standbyRestartNs && policy_.budgetLeft();
    exec::RestartDecision d = policy_.onFault(cause.faultClass, attemptTrained_ > 0, attemptStartedNs_, now_);
    // Its agent counts the fault in the assignment's status: the controller's evidence for the
    // lemon rule.
    writeStatus(k, cause);
    if (!d.restarts()) {
      enter(Phase::Stopped);
      return;
    }
    pendingRestartNs_ = d.delayNs + (standby ? costs_.standbyRestartNs : costs_.restartNs);
    enter(Phase::Detecting);
    waitingForStore_ = false;
    schedule(after(now_, cause.faultClass == exec::FaultClass::WorkerHung ? costs_.hangDetectNs : costs_.crashDetectNs),
             Kind::JobStep, 0, epoch_);
  }

  void writeStatus(unsigned k, const FaultCause &cause) {
    cluster::AssignmentStatus &s = nodes_[k].status;
    ++s.faults;
    s.lastFault = std::string(exec::faultClassName(cause.faultClass)) + ": " + cause.name;
    putStatus(k);
  }

  void putStatus(unsigned k) {
    SimNode &n = nodes_[k];
    n.status.state = "applied";
    n.status.leaderRevision = kLeaderRevision;
    store_.put(cluster::statusKey(n.name, kJob), cluster::encodeStatus(n.status), n.lease);
    requestRound();
  }

  uint64_t step() const { return keptNs_ / stepNs_; }

  // The agents answer the planned stop the job's assignments carry (PlannedStops.h): the step the
  // job is at and how long a step takes, then, once the leader chose the step, nothing until every
  // rank stopped after it (advance() stops the job there).
  void answerStops() {
    stopAfter_ = 0;
    for (unsigned k : placement_) {
      const etcd::KeyValue *kv = store_.get(cluster::assignmentKey(nodes_[k].name, kJob));
      std::string why;
      std::optional<cluster::Assignment> a = kv ? cluster::decodeAssignment(kv->value, why) : std::nullopt;
      if (!a || !a->stop)
        continue;
      stopAsked_ = *a->stop;
      cluster::AssignmentStatus &s = nodes_[k].status;
      if (!a->stop->afterStep) {
        if (!s.stop || s.stop->id != a->stop->id || s.stop->attempt != a->stop->attempt) {
          s.stop = cluster::StopAnswer{a->stop->id, a->stop->attempt, step(), stepNs_ / 1'000'000};
          putStatus(k);
        }
      } else {
        stopAfter_ = a->stop->afterStep;
      }
    }
    if (stopAfter_ && stopAfter_ * stepNs_ < keptNs_ && phase_ == Phase::Training)
      stopAfter_ = 0; // past it already: not answered as a miss here, the leader's grow times out
  }

  // Every rank stopped after `stopAfter_` with its snapshot: the job waits to be placed again.
  void stoppedForGrow() {
    sinceSnapshot_ = 0; // the stop's snapshot: nothing is lost
    stallLeft_ = 0;
    for (unsigned k : placement_) {
      cluster::AssignmentStatus &s = nodes_[k].status;
      s.stop = cluster::StopAnswer{stopAsked_.id, stopAsked_.attempt, stopAfter_, stepNs_ / 1'000'000, stopAfter_};
      s.worker = "none";
      putStatus(k);
    }
    say("job: every rank stopped after step " + std::to_string(stopAfter_) + " for the controller's grow");
    stopAfter_ = 0;
    ++out_.grows;
    enter(Phase::Unplaced);
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
    if (d.report.stopping)
      requestRound(uint64_t(options_.growTimeout.count()) * 1'000'000 / 4); // look again before its deadline
    placementRead();
    answerStops();
  }

  // The job's assignments as its agents find them after the round.
  void placementRead() {
    std::set<unsigned> nodes;
    std::string identity; // the rendezvous port and the nodes: fresh at every placement (Rendezvous.h)
    for (const etcd::KeyValue &kv : store_.range(cluster::kAssignmentsPrefix)) {
      llvm::StringRef rest = llvm::StringRef(kv.key).drop_front(std::strlen(cluster::kAssignmentsPrefix));
      auto [node, contract] = rest.split('/');
      if (contract != kJob || !node.consume_front("node"))
        continue;
      unsigned k = 0;
      if (node.getAsInteger(10, k) || k >= nodes_.size())
        continue;
      if (nodes.empty()) {
        std::string why;
        if (std::optional<cluster::Assignment> a = cluster::decodeAssignment(kv.value, why))
          identity = a->environment["MASTER_PORT"];
      }
      nodes.insert(k);
      identity += " " + std::to_string(k);
    }
    if (nodes.empty()) {
      if (!placement_.empty()) { // released: whatever ran stops
        if (phase_ == Phase::Training)
          interrupted();
        placement_.clear();
        placementIdentity_.clear(); // placed anew, it may take the same port on the same nodes
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
    for (unsigned k : placement_)
      nodes_[k].status.worker = "running";
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
    keptNs_ -= sinceSnapshot_;
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

  // When the training job reaches the step the leader asked it to stop after (none: not asked, or
  // not training).
  std::optional<uint64_t> stopTime() const {
    if (phase_ != Phase::Training || !stopAfter_ || stopAfter_ * stepNs_ < keptNs_)
      return std::nullopt;
    uint64_t training = stopAfter_ * stepNs_ - keptNs_;
    return after(now_, training + snapshotStallsWithin(training));
  }

  // The time the job stands still for snapshots while it trains `trainNs` more.
  uint64_t snapshotStallsWithin(uint64_t trainNs) const {
    uint64_t stalls = 0, since = sinceSnapshot_, stall = stallLeft_;
    while (trainNs > 0) {
      if (stall) {
        stalls += stall, stall = 0, since = 0;
        continue;
      }
      uint64_t every = costs_.snapshotEveryNs;
      uint64_t x = every ? std::min(trainNs, every - since) : trainNs;
      trainNs -= x, since += x;
      if (every && since == every) {
        if (costs_.snapshotStallNs)
          stall = costs_.snapshotStallNs;
        else
          since = 0;
      }
    }
    return stalls;
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
      keptNs_ += x;
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
  std::string placementIdentity_;
  uint64_t stepNs_ = 0;
  uint64_t keptNs_ = 0;    // trained and kept: the job's progress, in steps of stepNs_
  uint64_t stopAfter_ = 0; // the step the leader asked every rank to stop after (0: none)
  cluster::PlannedStop stopAsked_;
  uint64_t sinceSnapshot_ = 0, stallLeft_ = 0, attemptStartedNs_ = 0, attemptTrained_ = 0;
};
} // namespace

ClusterRun runCluster(const ClusterSpec &spec, uint64_t durationNs, uint64_t seed) {
  return Cluster(spec, seed).run(durationNs);
}

} // namespace msc::sim

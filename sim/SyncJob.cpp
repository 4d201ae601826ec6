#include "sim/SyncJob.h"

#include "support/Clock.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <random>
#include <vector>

namespace msc::sim {

namespace {
constexpr double kHourNs = 3.6e12;

// A part of a recovery: the hours of the run it is accounted to.
using Part = double SyncJobRun::*;

// The job's state between events: training (with the snapshot cadence) or recovering (a queue of
// timed parts, each accounted to its cause).
class Job {
public:
  Job(const FaultModel &model, const SyncJobCosts &costs) : model_(model), costs_(costs), policy_(costs.policy) {
    spares_ = costs.spareNodes;
  }

  SyncJobRun run(uint64_t durationNs, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Fault fault = model_.next(0, rng);
    while (now_ < durationNs) {
      uint64_t until = std::min(fault.atNs, durationNs);
      if (recovery_.empty()) {
        train(until - now_);
        now_ = until;
      } else {
        // The current part ends, or a fault cuts it short.
        auto &[part, left] = recovery_.front();
        uint64_t step = std::min(left, until - now_);
        account(part, step);
        left -= step;
        now_ += step;
        if (left == 0)
          finishPart();
      }
      if (now_ == fault.atNs && now_ < durationNs) {
        interrupted(fault);
        fault = model_.next(now_, rng);
      }
    }
    out_.hours = double(durationNs) / kHourNs;
    return out_;
  }

private:
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
      trained(x);
      ns -= x;
      if (every && sinceSnapshot_ == every) {
        if (costs_.snapshotStallNs)
          stallLeft_ = costs_.snapshotStallNs;
        else
          sinceSnapshot_ = 0;
      }
    }
  }
  void trained(uint64_t ns) {
    sinceSnapshot_ += ns;
    attemptTrained_ += ns;
    out_.training += double(ns) / kHourNs;
  }
  void account(Part part, uint64_t ns) { out_.*part += double(ns) / kHourNs; }
  void finishPart() {
    recovery_.pop_front();
    if (recovery_.empty()) { // the job trains again: a new attempt
      attemptStartedNs_ = now_;
      attemptTrained_ = 0;
    }
  }

  // Nodes back from repair before `now_` join the spares.
  void collectRepairs() {
    while (!repairs_.empty() && repairs_.top() <= now_) {
      repairs_.pop();
      ++spares_;
    }
  }

  void interrupted(const Fault &fault) {
    ++out_.interruptions;
    // What was trained since the newest snapshot is lost; a snapshot being taken is lost with it.
    double lost = double(sinceSnapshot_) / kHourNs;
    out_.training -= lost;
    out_.replayed += lost;
    sinceSnapshot_ = 0;
    stallLeft_ = 0;
    const FaultCause &cause = model_.causes()[fault.cause];
    exec::RestartDecision d = policy_.onFault(cause.faultClass, attemptTrained_ > 0, attemptStartedNs_, now_);
    recovery_.clear(); // a fault during a recovery starts it over
    recovery_.push_back({&SyncJobRun::detection, cause.faultClass == exec::FaultClass::WorkerHung ? costs_.hangDetectNs
                                                                                            : costs_.crashDetectNs});
    if (takesNodeOut(cause.faultClass)) {
      collectRepairs();
      repairs_.push(after(now_, costs_.repairNs));
      uint64_t wait = 0;
      if (spares_ > 0) {
        --spares_;
      } else { // the first node back from repair takes the lost one's place
        wait = repairs_.top() - now_;
        repairs_.pop();
      }
      recovery_.push_back({&SyncJobRun::waitingForNode, wait});
      recovery_.push_back({&SyncJobRun::replacement, costs_.replaceNodeNs});
    }
    recovery_.push_back({&SyncJobRun::restart, d.delayNs + costs_.restartNs});
    attemptStartedNs_ = now_;
    attemptTrained_ = 0;
    // Parts of no length end at once (the job trains again now if all are).
    while (!recovery_.empty() && recovery_.front().second == 0)
      finishPart();
  }

  const FaultModel &model_;
  const SyncJobCosts &costs_;
  exec::RestartPolicy policy_;
  SyncJobRun out_;
  uint64_t now_ = 0;
  uint64_t sinceSnapshot_ = 0, stallLeft_ = 0;
  uint64_t attemptStartedNs_ = 0, attemptTrained_ = 0;
  std::deque<std::pair<Part, uint64_t>> recovery_;
  unsigned spares_ = 0;
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> repairs_; // when each node is back
};
} // namespace

SyncJobRun runSyncJob(const FaultModel &model, const SyncJobCosts &costs, uint64_t durationNs, uint64_t seed) {
  return Job(model, costs).run(durationNs, seed);
}

} // namespace msc::sim

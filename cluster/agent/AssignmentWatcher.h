// A node agent's side of the controller's assignments: watches /mscale/assignments/<node>/ (Keys.h),
// admits each new plan through the node's ledger (the same re-check as a plan submitted on the
// socket), releases deleted ones, and writes what came of each to /mscale/status/<node>/<contract>.
//
// Fencing at the agent: every assignment carries the leader revision of the controller that wrote
// it (the create revision of its leader key). Controllers' writes are already fenced in etcd
// (etcd::Fencing); the agent refuses, too, an assignment older than the newest leader it has heard
// from, so a controller that is deposed but not yet aware of it cannot make a node run its stale
// decision even if its write went through some other path (ERR_CLUSTER_003).
//
// Not thread-safe: the agent's loop calls it, like every other user of the ledger.
#pragma once

#include "cluster/keys/Keys.h"
#include "cluster/etcd/EtcdClient.h"
#include "cluster/etcd/Watch.h"
#include "executor/core/Logger.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace msc::exec {
class NodeLedger;
}

namespace msc::cluster {

class AssignmentWatcher {
public:
  // `wake`, when set, is called from the watch's thread when assignments change (ClusterAgent::setWake).
  AssignmentWatcher(etcd::EtcdClient &client, std::string node, exec::Logger &log, std::function<void()> wake = {});

  // Reads every assignment of the node and handles them in the order etcd wrote them (their mod
  // revisions: the order a watch would have delivered them), then watches from the revision after
  // that read. Status keys are put under `statusLease` (the registration's), so they go with it.
  etcd::Status start(exec::NodeLedger &ledger, int64_t statusLease);
  // Handles what arrived, waiting up to `wait` for it; rewrites the status of contracts whose worker
  // changed state. A watch that ended (its history compacted, etcd gone past the call timeout) is
  // started again from a fresh read; its error is returned once.
  etcd::Status poll(exec::NodeLedger &ledger, int64_t statusLease,
                    std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  // The ledger released everything (the registration was lost): forget what was admitted here, so
  // that the next start() admits the assignments still in etcd again.
  void forgetAdmitted();
  // Called with the contract whenever its assignment here is put anew or deleted: its submission may
  // have changed with it (ClusterAgent forgets its cached lookup then).
  void setOnContractChange(std::function<void(const std::string &)> f) { onContractChange_ = std::move(f); }
  // Stops watching until the next start().
  void stop() { watch_.reset(); }

  int64_t highestLeaderRevision() const { return highestLeaderRevision_; }
  bool admitted(const std::string &contract) const { return admitted_.count(contract) != 0; }

private:
  void onPut(exec::NodeLedger &ledger, const etcd::KeyValue &kv, int64_t statusLease);
  void onDelete(exec::NodeLedger &ledger, const std::string &key);
  // A changed assignment that is the same job placed anew on this node (samePlacedJob: another
  // world size, another rank): the contract stays applied and its worker restarts at its new place
  // (NodeLedger::reassign), so the node keeps its warm state. False when it cannot be kept in place:
  // then it is released and admitted anew.
  bool keptAcrossPlacement(exec::NodeLedger &ledger, const std::string &contract, const Assignment &next,
                           const std::string &value, const std::string &unstoppedBytes, int64_t statusLease);
  // Refuses an assignment: logs the diagnostic and writes a "refused" status.
  void refuse(const std::string &contract, int64_t leaderRevision, const std::string &code,
              const std::vector<std::string> &messages, int64_t statusLease);
  AssignmentStatus statusOf(const exec::NodeLedger &ledger, const std::string &contract) const;
  void writeStatus(const std::string &contract, const AssignmentStatus &s, int64_t statusLease);

  etcd::EtcdClient &client_;
  const std::string node_;
  exec::Logger &log_;
  std::function<void()> wake_;
  std::function<void(const std::string &)> onContractChange_;
  std::unique_ptr<etcd::Watch> watch_;
  int64_t highestLeaderRevision_ = 0; // only grows, across re-registrations too
  // A planned stop (Keys.h: PlannedStop) asked of an admitted contract: handed to its supervisor,
  // and answered in its status (StopAnswer): the job's step and pace when first asked, then whether
  // it stopped after the step asked or went past it.
  void answerStop(exec::NodeLedger &ledger, const std::string &contract);
  struct Admitted {
    std::string value; // the assignment's bytes: a put of the same bytes changes nothing
    int64_t leaderRevision = 0;
    std::string lastStatus; // the ledger's view, encoded, to rewrite the status only when it changes
    // The assignment without its planned stop and leader revision: a put that differs from it in
    // those alone changes nothing of the running contract.
    std::string unstopped = {};
    std::optional<PlannedStop> stop = {};
    std::optional<StopAnswer> answer = {};
  };
  std::map<std::string, Admitted> admitted_;
};

} // namespace msc::cluster

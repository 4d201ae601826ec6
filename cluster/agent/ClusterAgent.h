// A node agent in the cluster (`mscale-exec serve --endpoints H:P,... --node NAME`): the node's
// registration (NodeRegistration.h) and its assignments (AssignmentWatcher.h) driven from the
// agent's loop. The tool parses options and calls start() and tick(); everything else is here.
#pragma once

#include "cluster/agent/AssignmentWatcher.h"
#include "cluster/agent/ContractCache.h"
#include "cluster/agent/HealthReporter.h"
#include "cluster/agent/LendingReporter.h"
#include "cluster/agent/NodeRegistration.h"
#include "cluster/etcd/EtcdClient.h"
#include "executor/core/Logger.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {
class NodeLedger;
}
namespace msc::agent {
class ClusterContract;
class Diagnostic;
} // namespace msc::agent

namespace msc::cluster {

struct ClusterAgentOptions {
  std::string endpoints; // "host:port,host:port" (etcdctl's --endpoints)
  std::string node;      // the registration's name: /mscale/nodes/<node>
  // The topology registered (hal::TopologySource::fromArgument: "live" or a recorded node), the same
  // the ledger re-checks plans against, so the controller places on what the agent admits.
  std::string topology = "live";
  int64_t leaseTtlSeconds = 5;
  // Where other nodes reach this node's workers (Registration::address): the rendezvous address of
  // jobs whose rank 0 runs here. Empty: the host name.
  std::string address = {};
  // Where the node's health is read (HealthReporter.h). Empty: the topology's own root ("/" for
  // "live", the directory of a recorded sysfs tree); a topology file (XML, YAML) has no values to
  // re-read, so such a node publishes no verdict unless a root is given.
  std::string healthRoot = {};
  std::chrono::nanoseconds healthInterval = std::chrono::seconds(10);
  // How often what the node lends is sampled for /mscale/lending/<node> (LendingReporter.h).
  std::chrono::nanoseconds lendingInterval = std::chrono::seconds(1);
  const Clock *clock = &SystemClock::instance(); // when health is judged, and its samples' times
};

class ClusterAgent {
public:
  ClusterAgent(ClusterAgentOptions options, exec::Logger &log);
  // The ledger is released (workers stopped) by its owner before this revokes the lease.
  ~ClusterAgent();

  // Connects, exports the topology, registers the node and admits its assignments. False with the
  // coded error in the log (ERR_ETCD_001 endpoints, ERR_HAL_* topology, ERR_CLUSTER_002 the node is
  // registered by another live agent, ERR_ETCD_00x etcd).
  bool start(exec::NodeLedger &ledger);
  // How to make the agent's loop call tick() now (exec::Agent::wake): called from the assignment
  // watch's thread when assignments change, so a plan is applied within milliseconds of its
  // assignment instead of at the loop's next timeout. Set before start().
  void setWake(std::function<void()> wake) { wake_ = std::move(wake); }
  // Where the node agent's HTTP endpoint listens (exec::Agent::httpAddress: "HOST:PORT" as bound,
  // "unix:PATH", or empty), so that the registration says where other machines read this node's
  // worker output. Set before start().
  void setHttpEndpoint(const std::string &bound) { httpBound_ = bound; }
  // From the agent's loop: lease loss (stop everything), re-registration, assignments.
  void tick(exec::NodeLedger &ledger);
  // Judges the node's health when it is due and publishes a changed verdict (tick() calls it).
  void judgeHealth();
  // Samples what the node lends when it is due and publishes a changed record under the current
  // lease, again under a fresh one after a re-registration (tick() calls it).
  void publishLending(exec::NodeLedger &ledger);

  // A contract as the cluster holds it (/mscale/contracts/<contract>), from the cache while it is
  // younger than the cluster config's agents.contract_cache_ttl, else read from any etcd member
  // (serializable: a lookup works while etcd has no quorum). Every read from etcd reads the config
  // too, so a changed TTL applies within the TTL that was in force. ERR_CLUSTER_014 for a name that
  // is not a contract's or a contract not submitted, ERR_CLUSTER_006 for a value that does not
  // read, ERR_ETCD_* when etcd does not answer.
  struct LookedUp {
    Submission submission;
    int64_t modRevision = 0;
    bool fromCache = false;
    std::chrono::nanoseconds age{0};
  };
  etcd::Result<LookedUp> lookupContract(const std::string &contract);
  // The agent's LookupRequest (exec::Agent::setContractLookup) answered by lookupContract().
  bool answerLookup(const std::string &contract, agent::ClusterContract &found, agent::Diagnostic &error);
  const ContractCache &contractCache() const { return cache_; }

  NodeRegistration *registration() { return registration_.get(); }
  AssignmentWatcher *watcher() { return watcher_.get(); }
  HealthReporter *health() { return health_.get(); }

private:
  ClusterAgentOptions options_;
  exec::Logger &log_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<NodeRegistration> registration_;
  std::unique_ptr<AssignmentWatcher> watcher_;
  std::unique_ptr<HealthReporter> health_; // null: the node publishes no verdict
  std::optional<NodeHealth> unpublished_;  // a changed verdict whose put failed
  std::unique_ptr<LendingReporter> lending_;
  bool lendingUnpublished_ = false; // a changed record whose put failed, or a lease it is not under yet
  int64_t lendingLease_ = 0;        // the lease the published record is under
  std::function<void()> wake_;
  std::string httpBound_;
  ContractCache cache_;

  void logVerdict(); // the last verdict with its evidence, one line
};

} // namespace msc::cluster

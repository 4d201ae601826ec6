// A node agent in the cluster (`mscale-exec serve --cluster ENDPOINTS --node NAME`): the node's
// registration (NodeRegistration.h) and its assignments (AssignmentWatcher.h) driven from the
// agent's loop. The tool parses options and calls start() and tick(); everything else is here.
#pragma once

#include "cluster/agent/AssignmentWatcher.h"
#include "cluster/agent/NodeRegistration.h"
#include "cluster/etcd/EtcdClient.h"
#include "executor/Logger.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {
class NodeLedger;
}

namespace msc::cluster {

struct ClusterAgentOptions {
  std::string endpoints; // "host:port,host:port" (etcdctl's --endpoints)
  std::string node;      // the registration's name: /mscale/nodes/<node>
  // The topology registered (hal::TopologySource::fromArgument: "live" or a recorded node), the same
  // the ledger re-checks plans against, so the controller places on what the agent admits.
  std::string topology = "live";
  int64_t leaseTtlSeconds = 5;
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
  // From the agent's loop: lease loss (stop everything), re-registration, assignments.
  void tick(exec::NodeLedger &ledger);

  NodeRegistration *registration() { return registration_.get(); }
  AssignmentWatcher *watcher() { return watcher_.get(); }

private:
  ClusterAgentOptions options_;
  exec::Logger &log_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<NodeRegistration> registration_;
  std::unique_ptr<AssignmentWatcher> watcher_;
  std::function<void()> wake_;
};

} // namespace msc::cluster

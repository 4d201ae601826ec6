// What mscale-deploy and `mscale-cli cluster topology` read of the cluster: every registered node
// with its topology (or why its registration does not read), and the published cluster config.
#pragma once

#include "cluster/config/ClusterConfig.h"
#include "cluster/etcd/EtcdClient.h"
#include "cluster/keys/Keys.h"
#include "hal/Topology.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

struct RegisteredNode {
  std::string name;
  std::string agentVersion;
  std::string address; // Registration::address; empty when it advertises none
  std::string http;    // Registration::http; empty when it serves none to other machines
  std::optional<NodeHealth> health; // the agent's verdict; absent when it publishes none
  std::string healthUnreadable;     // why its health lines do not read (ERR_CLUSTER_016)
  std::optional<hal::Topology> topology;
  std::string unreadable; // why the registration does not read, when topology is absent
};

// In name order. `consistency`: mscale-deploy checks against the newest (linearizable); reads for
// people may come from any member (serializable).
etcd::Result<std::vector<RegisteredNode>> readRegisteredNodes(etcd::EtcdClient &client, etcd::Consistency consistency);
// One registration key (/mscale/nodes/<node>) as read: every reader of registrations for people
// reads them so (mscale-deploy, `cluster topology`, `cluster status`, `cluster nodes`).
RegisteredNode registeredNodeOf(const etcd::KeyValue &kv);

// The config at /mscale/config: absent (nothing published), or its value; `modRevision` of the key.
struct StoredConfig {
  PublishedConfig published;
  int64_t modRevision = 0;
};
etcd::Result<std::optional<StoredConfig>> readStoredConfig(etcd::EtcdClient &client, etcd::Consistency consistency);

} // namespace msc::cluster

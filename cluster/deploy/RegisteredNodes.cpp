#include "cluster/deploy/RegisteredNodes.h"

#include "hal/TopologyYaml.h"
#include "support/Diagnostic.h"

namespace msc::cluster {

etcd::Result<std::vector<RegisteredNode>> readRegisteredNodes(etcd::EtcdClient &client, etcd::Consistency consistency) {
  etcd::RangeOptions o;
  o.rangeEnd = etcd::prefixEnd(kNodesPrefix);
  o.consistency = consistency;
  auto r = client.range(kNodesPrefix, o);
  if (!r)
    return r.status();
  std::vector<RegisteredNode> nodes;
  for (const etcd::KeyValue &kv : r->kvs)
    nodes.push_back(registeredNodeOf(kv));
  return nodes;
}

RegisteredNode registeredNodeOf(const etcd::KeyValue &kv) {
  RegisteredNode node;
  node.name = kv.key.substr(std::string(kNodesPrefix).size());
  std::optional<Registration> registration = decodeRegistration(kv.value, node.unreadable);
  if (!registration)
    return node;
  requireLeaseForHealth(*registration, kv.lease);
  node.agentVersion = registration->agentVersion;
  node.address = registration->address;
  node.http = registration->http;
  node.health = registration->health;
  node.healthUnreadable = registration->healthUnreadable;
  // The topology reader's first error is the reason; the registration is no file to show.
  CollectingConsumer errors;
  DiagnosticEngine diags(nullptr, errors);
  node.topology = hal::readTopologyYaml(registration->topologyYaml, kv.key, diags);
  if (node.topology)
    node.topology->setName(node.name);
  else
    for (const Diagnostic &d : errors.diags)
      if (d.severity == Severity::Error && node.unreadable.empty())
        node.unreadable = "error[" + diagInfo(d.code).name.str() + "]: " + d.message +
                          (d.loc.line ? " (line " + std::to_string(d.loc.line + 1) + " of the value)" : "");
  return node;
}

etcd::Result<std::optional<StoredConfig>> readStoredConfig(etcd::EtcdClient &client, etcd::Consistency consistency) {
  etcd::RangeOptions o;
  o.consistency = consistency;
  auto r = client.range(kConfigKey, o);
  if (!r)
    return r.status();
  if (r->kvs.empty())
    return std::optional<StoredConfig>();
  std::string why;
  std::optional<PublishedConfig> published = decodeConfig(r->kvs.front().value, why);
  if (!published)
    return etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_010, {std::string(kConfigKey) + ": " + why});
  return std::optional<StoredConfig>(StoredConfig{std::move(*published), r->kvs.front().modRevision});
}

} // namespace msc::cluster

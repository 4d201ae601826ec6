#include "cluster/controller/ClusterState.h"

#include "hal/TopologyYaml.h"
#include "plan/PlanFile.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

namespace msc::cluster {
namespace {

// `line` into `fresh` once per value of a node's key: not again while its mod revision is the one
// it was said at (a reconciliation runs on every change of the cluster).
void sayOnce(std::map<std::string, int64_t> &saidAt, const std::string &node, int64_t modRevision, std::string line,
             std::vector<std::string> &fresh) {
  auto [at, first] = saidAt.try_emplace(node, modRevision);
  if (first || at->second != modRevision) {
    at->second = modRevision;
    fresh.push_back(std::move(line));
  }
}

} // namespace

ClusterState clusterStateFrom(const std::vector<etcd::KeyValue> &kvs, int64_t revision, ReconcileMemory &memory) {
  ClusterState state;
  state.revision = revision;
  std::set<std::string> seenAssignments;
  for (const etcd::KeyValue &kv : kvs) {
    llvm::StringRef key(kv.key);
    if (key.starts_with(kNodesPrefix)) {
      std::string node = key.drop_front(llvm::StringRef(kNodesPrefix).size()).str();
      ReconcileMemory::ParsedNode &parsed = memory.nodes[node];
      if (parsed.modRevision != kv.modRevision) {
        parsed = {kv.modRevision, nullptr};
        std::string why;
        std::optional<Registration> r = decodeRegistration(kv.value, why);
        if (r)
          requireLeaseForHealth(*r, kv.lease);
        // A malformed registration places nothing; it is reported once per value (the parsed cache
        // holds it until the value changes), with the topology reader's own first error.
        CapturedDiagnostics yaml;
        std::optional<hal::Topology> topo =
            r ? hal::readTopologyYaml(r->topologyYaml, kv.key, yaml.diags) : std::optional<hal::Topology>{};
        if (r) {
          parsed.address = r->address;
          parsed.health = r->health;
          if (!r->healthUnreadable.empty()) {
            parsed.healthUnreadable =
                etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_016, {node, r->healthUnreadable}).str();
            state.unreadableHealthNew.push_back(parsed.healthUnreadable);
          }
        }
        if (topo) {
          topo->setName(node);
          parsed.topology = std::make_shared<const hal::Topology>(std::move(*topo));
        } else {
          yaml.done();
          state.unreadableNodes.push_back(
              etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_012, {node, r ? yaml.firstLine() : why}).str());
        }
      }
      state.nodes[node] = parsed.topology;
      if (!parsed.address.empty())
        state.addresses[node] = parsed.address;
      if (parsed.health)
        state.health[node] = *parsed.health;
      if (!parsed.healthUnreadable.empty())
        state.unreadableHealth[node] = parsed.healthUnreadable;
    } else if (key.starts_with(kCordonsPrefix)) {
      std::string node = key.drop_front(llvm::StringRef(kCordonsPrefix).size()).str(), why;
      std::optional<Cordon> cordon = decodeCordon(kv.value, why);
      state.cordons[node] = cordon ? *cordon : Cordon{"unknown", "its cordon does not read (" + why + ")", 0, 0};
    } else if (key.starts_with(kDrainsPrefix)) {
      std::string node = key.drop_front(llvm::StringRef(kDrainsPrefix).size()).str(), why;
      if (std::optional<Drain> drain = decodeDrain(kv.value, why)) {
        state.drains[node] = {*drain, kv.modRevision};
        continue;
      }
      // Nothing is moved on a drain that does not read; its cordon (written with it) still stands.
      sayOnce(memory.unreadableDrainsAt, node, kv.modRevision,
              etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_021, {node, why}).str(), state.unreadableDrainsNew);
      state.unreadableDrains.insert(node);
    } else if (key.starts_with(kLendingPrefix)) {
      std::string node = key.drop_front(llvm::StringRef(kLendingPrefix).size()).str(), why;
      std::optional<LendingRecord> record = decodeLending(kv.value, why);
      if (record && kv.lease == 0)
        record.reset(), why = "it is under no lease, so no agent stands behind it (an agent writes it under its lease)";
      if (record) {
        state.lending[node] = *record;
        continue;
      }
      sayOnce(memory.unreadableLendingAt, node, kv.modRevision,
              etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_022, {node, why}).str(), state.unreadableLendingNew);
      state.unreadableLending.insert(node);
    } else if (key.starts_with(kNodeFaultsPrefix)) {
      std::string node = key.drop_front(llvm::StringRef(kNodeFaultsPrefix).size()).str(), why;
      if (std::optional<std::vector<NodeFault>> faults = decodeFaults(kv.value, why)) {
        state.faults[node] = {std::move(*faults), kv.modRevision};
        continue;
      }
      std::string line = etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_019, {node, why}).str();
      state.unreadableFaults[node] = line;
      sayOnce(memory.unreadableFaultsAt, node, kv.modRevision, line, state.unreadableFaultsNew);
    } else if (key.starts_with(kStatusPrefix)) {
      std::string rest = key.drop_front(llvm::StringRef(kStatusPrefix).size()).str();
      size_t slash = rest.find('/');
      if (slash == std::string::npos)
        continue;
      if (std::optional<AssignmentStatus> s = decodeStatus(kv.value))
        state.statuses[rest.substr(0, slash)][rest.substr(slash + 1)] = std::move(*s);
    } else if (key == kConfigKey) {
      state.config = kv.value;
    } else if (key.starts_with(kContractStatusPrefix)) {
      state.decided.insert(key.drop_front(llvm::StringRef(kContractStatusPrefix).size()).str());
    } else if (key.starts_with(kContractEventsPrefix)) {
      state.events[key.drop_front(llvm::StringRef(kContractEventsPrefix).size()).str()] = kv.value;
    } else if (key.starts_with(kContractsPrefix)) {
      state.contracts[key.drop_front(llvm::StringRef(kContractsPrefix).size()).str()] = kv.value;
    } else if (key.starts_with(kAssignmentsPrefix)) {
      std::string rest = key.drop_front(llvm::StringRef(kAssignmentsPrefix).size()).str();
      size_t slash = rest.find('/');
      if (slash == std::string::npos)
        continue;
      seenAssignments.insert(kv.key);
      ReconcileMemory::DecodedAssignment &d = memory.assignments[kv.key];
      if (d.value != kv.value) { // compared, not trusted to the revision: a test's store may not move it
        std::string why;
        d = {kv.value, decodeAssignment(kv.value, why), nullptr};
        // A plan that does not decode is the agent's to refuse; here it holds nothing.
        CollectingConsumer sink;
        DiagnosticEngine quiet(nullptr, sink);
        if (d.assignment)
          if (std::optional<plan::Plan> plan = plan::decodePlan(d.assignment->plan, kv.key, quiet))
            d.plan = std::make_shared<const plan::Plan>(std::move(*plan));
      }
      if (!d.assignment)
        continue;
      state.assigned[rest.substr(slash + 1)].push_back(
          {rest.substr(0, slash), kv.key, *d.assignment, d.plan, kv.modRevision});
    }
  }
  std::erase_if(memory.nodes, [&](const auto &entry) { return !state.nodes.count(entry.first); });
  std::erase_if(memory.assignments, [&](const auto &entry) { return !seenAssignments.count(entry.first); });
  std::erase_if(memory.unreadableFaultsAt, [&](const auto &entry) { return !state.unreadableFaults.count(entry.first); });
  std::erase_if(memory.unreadableDrainsAt, [&](const auto &entry) { return !state.unreadableDrains.count(entry.first); });
  std::erase_if(memory.unreadableLendingAt, [&](const auto &entry) { return !state.unreadableLending.count(entry.first); });
  return state;
}

etcd::Result<ClusterState> readClusterState(etcd::EtcdClient &client, ReconcileMemory &memory) {
  etcd::RangeOptions o;
  o.rangeEnd = etcd::prefixEnd(kRootPrefix);
  auto all = client.range(kRootPrefix, o);
  if (!all)
    return all.status();
  return clusterStateFrom(all->kvs, all->revision, memory);
}

} // namespace msc::cluster

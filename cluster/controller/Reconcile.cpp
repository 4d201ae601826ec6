#include "cluster/controller/Reconcile.h"

#include "cluster/controller/ApplyConfig.h"
#include "cluster/controller/ContractCheck.h"

#include "cluster/keys/Keys.h"
#include "cluster/placement/Placer.h"
#include "hal/TopologyYaml.h"
#include "plan/PlanFile.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <map>
#include <set>

namespace msc::cluster {
namespace {

etcd::RangeOptions under(const char *prefix) {
  etcd::RangeOptions o;
  o.rangeEnd = etcd::prefixEnd(prefix);
  return o;
}

struct Assigned {
  std::string node;
  std::string key;
  Assignment assignment;
};

} // namespace

etcd::Result<ReconcileReport> reconcile(etcd::EtcdClient &client, etcd::Fencing &fencing,
                                        const ReconcileOptions &options, ReconcileMemory &memory) {
  // One linearizable read of the whole cluster, so nodes, assignments and contracts agree.
  auto all = client.range(kRootPrefix, under(kRootPrefix));
  if (!all)
    return all.status();
  ReconcileReport report;
  report.revision = all->revision;

  CapturedDiagnostics setup;
  NodeRegistry registry;
  std::map<std::string, std::string> contracts;           // name -> its submission as stored
  const etcd::KeyValue *configValue = nullptr;            // /mscale/config, when published
  std::map<std::string, std::vector<Assigned>> assigned;   // contract -> its assignments
  std::set<std::string> live;                             // registered nodes
  for (const etcd::KeyValue &kv : all->kvs) {
    llvm::StringRef key(kv.key);
    if (key.starts_with(kNodesPrefix)) {
      std::string node = key.drop_front(llvm::StringRef(kNodesPrefix).size()).str();
      ReconcileMemory::ParsedNode &parsed = memory.nodes[node];
      if (parsed.modRevision != kv.modRevision) {
        parsed = {kv.modRevision, nullptr};
        std::string why;
        std::optional<Registration> r = decodeRegistration(kv.value, why);
        // A malformed registration places nothing; it is reported once per value (the parsed cache
        // holds it until the value changes), with the topology reader's own first error.
        CapturedDiagnostics yaml;
        std::optional<hal::Topology> topo =
            r ? hal::readTopologyYaml(r->topologyYaml, kv.key, yaml.diags) : std::optional<hal::Topology>{};
        if (topo) {
          topo->setName(node);
          parsed.topology = std::make_shared<const hal::Topology>(std::move(*topo));
        } else {
          yaml.done();
          report.unreadableNodes.push_back(
              etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_012, {node, r ? yaml.firstLine() : why}).str());
        }
      }
      live.insert(node);
      if (parsed.topology)
        registry.add(node, parsed.topology, setup.diags);
    } else if (key == kConfigKey) {
      configValue = &kv;
    } else if (key.starts_with(kContractsPrefix)) {
      contracts[key.drop_front(llvm::StringRef(kContractsPrefix).size()).str()] = kv.value;
    } else if (key.starts_with(kAssignmentsPrefix)) {
      std::string rest = key.drop_front(llvm::StringRef(kAssignmentsPrefix).size()).str();
      size_t slash = rest.find('/');
      std::string why;
      std::optional<Assignment> a = decodeAssignment(kv.value, why);
      if (slash == std::string::npos || !a)
        continue;
      assigned[rest.substr(slash + 1)].push_back({rest.substr(0, slash), kv.key, std::move(*a)});
    }
  }

  std::erase_if(memory.nodes, [&](const auto &entry) { return !live.count(entry.first); });

  // The cluster config, as published now: it decides the placements made in this reconciliation.
  // One that does not read (written around the leader) places nothing: which domains it reserves is
  // unknown, and a job on the management NIC's domain is worse than a job that waits.
  std::optional<ClusterConfig> config;
  std::string configError;
  if (configValue) {
    std::string why;
    std::optional<PublishedConfig> published = decodeConfig(configValue->value, why);
    ConfigSource source(kConfigKey, published ? published->yaml : std::string());
    if (published)
      config = parseClusterConfig(source);
    else
      source.error(etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_010, {why}));
    configError = source.printed();
    if (config)
      reserveDomains(*config, registry, setup.diags);
  }

  // What stays: a contract whose every assignment is on a live node holds those nodes' resources.
  std::set<std::string> toPlace, lost;
  auto now = std::chrono::steady_clock::now();
  for (const auto &[name, value] : contracts) {
    auto it = assigned.find(name);
    if (it == assigned.end()) {
      toPlace.insert(name);
      continue;
    }
    bool whole = true;
    for (const Assigned &a : it->second)
      whole &= registry.find(a.node) != nullptr;
    if (whole)
      continue;
    lost.insert(name);
    auto since = memory.lostSince.try_emplace(name, now).first->second;
    if (now - since >= options.lostNodeGrace)
      toPlace.insert(name);
    else
      report.waiting.push_back(name);
  }
  std::erase_if(memory.lostSince, [&](const auto &entry) { return !lost.count(entry.first) || toPlace.count(entry.first); });
  // A contract waiting out the grace still holds its live nodes' resources.
  for (const auto &[name, list] : assigned) {
    if (toPlace.count(name) || !contracts.count(name))
      continue;
    for (const Assigned &a : list)
      if (std::optional<plan::Plan> p = plan::decodePlan(a.assignment.plan, a.key, setup.diags))
        registry.admit(a.node, std::move(*p), "an assignment", setup.diags);
  }

  const std::string rev = std::to_string(fencing.leader().rev);
  // A withdrawn contract: its assignments go (the agents stop its workers) and so does its status.
  for (const auto &[name, list] : assigned) {
    if (contracts.count(name))
      continue;
    std::vector<etcd::TxnOp> ops;
    for (const Assigned &a : list)
      ops.push_back(etcd::TxnOp::remove(a.key));
    ops.push_back(etcd::TxnOp::remove(std::string(kContractStatusPrefix) + name));
    // Only while it is still withdrawn: a submission of the same name since then is placed anew.
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::absent(std::string(kContractsPrefix) + name));
    txn.success = std::move(ops);
    auto done = fencing.commit(txn);
    if (!done)
      return done.status();
    report.withdrawn.push_back(name);
  }
  ContractSourceOptions sourceOptions{options.stdlibDir, options.scratchDir};
  for (const std::string &name : toPlace) {
    CapturedDiagnostics decision;
    std::vector<etcd::TxnOp> ops;
    bool replacing = assigned.count(name) != 0;
    std::string why;
    std::optional<Submission> submission = decodeSubmission(contracts[name], why);
    if (submission && submission->contract != name)
      why = "it names contract '" + submission->contract + "'", submission.reset();
    std::optional<LoadedContract> loaded;
    if (!submission)
      decision.os << etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_006, {name, why}).str() << "\n";
    else
      loaded = loadSubmittedContract(name, submission->source, sourceOptions, decision);
    PlacementResult placed;
    std::string defaults; // what the config filled in, for the status and the log
    if (loaded && configValue && !config) {
      decision.os << configError;
    } else if (loaded) {
      ir::Contract contract = loaded->contract();
      if (config)
        if (std::vector<std::string> filled = applyScalingDefaults(*config, contract); !filled.empty())
          defaults = "defaults from " + config->describe() + ": " + llvm::join(filled, ", ");
      Placer placer(registry, options.compilerVersion);
      placed = placer.place(contract, decision.diags);
    }
    decision.done();
    std::string status;
    if (placed.placed()) {
      std::string nodes;
      for (const NodePlacement &p : placed.nodes) {
        Assignment a;
        a.leaderRevision = fencing.leader().rev;
        a.plan = plan::encodePlan(p.plan);
        a.command = submission->command;
        a.environment = submission->environment;
        ops.push_back(etcd::TxnOp::put(assignmentKey(p.node->name, name), encodeAssignment(a)));
        nodes += (nodes.empty() ? "" : ",") + p.node->name;
      }
      status = "placed " + nodes + " leader-rev " + rev + "\n" + (defaults.empty() ? "" : defaults + "\n");
      // The old set goes, live nodes included (placed whole); a node chosen again gets its new
      // assignment by the put above (etcd refuses a key twice in one transaction).
      for (const Assigned &a : assigned[name])
        if (std::find_if(ops.begin(), ops.end(), [&](const etcd::TxnOp &op) { return op.key == a.key; }) == ops.end())
          ops.push_back(etcd::TxnOp::remove(a.key));
      (replacing ? report.replaced : report.placed)
          .push_back(name + " -> " + nodes + (defaults.empty() ? "" : " (" + defaults + ")"));
    } else {
      std::string first = decision.firstLine();
      status = "refused leader-rev " + rev + "\n" + (defaults.empty() ? "" : defaults + "\n") + decision.text;
      // A job that cannot be placed whole again does not run in part: its workers on the nodes that
      // are left stop too (their snapshots stay on the shared disk). It is placed again, and resumes,
      // once the cluster can take it whole.
      for (const Assigned &a : assigned[name])
        ops.push_back(etcd::TxnOp::remove(a.key));
      if (replacing)
        report.released.push_back(name);
      report.refused.push_back(name + ": " + first);
    }
    ops.push_back(etcd::TxnOp::put(std::string(kContractStatusPrefix) + name, status));
    // Placed with what this read saw: if the contract changed since, the next reconciliation redoes it.
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::onModRevision(std::string(kContractsPrefix) + name,
                                                        etcd::Compare::Op::Less, report.revision + 1));
    txn.success = std::move(ops);
    auto done = fencing.commit(txn);
    if (!done)
      return done.status();
  }
  return report;
}

} // namespace msc::cluster

#include "cluster/status/ClusterStatus.h"

#include "cluster/deploy/RegisteredNodes.h"
#include "cluster/placement/NodeRegistry.h"
#include "hal/Render.h"
#include "plan/PlanFile.h"
#include "support/Clock.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Format.h>

#include <algorithm>
#include <map>
#include <set>

namespace msc::cluster {

namespace {

struct Read {
  std::map<std::string, NodeView> nodes;
  std::map<std::string, std::shared_ptr<const hal::Topology>> topologies;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> plans; // node -> (contract, plan bytes)
  std::map<std::string, std::string> decisions, events;                           // contract -> value
  std::set<std::string> submitted;
  std::map<std::pair<std::string, std::string>, std::string> statuses; // (contract, node) -> value
  std::map<std::string, Cordon> cordons;
  std::map<std::string, etcd::KeyValue> drains;
  std::map<std::string, etcd::KeyValue> lending;
};

std::string after(llvm::StringRef key, const char *prefix) { return key.drop_front(llvm::StringRef(prefix).size()).str(); }

void readNode(Read &r, const etcd::KeyValue &kv) {
  RegisteredNode reg = registeredNodeOf(kv);
  NodeView &n = r.nodes[reg.name];
  n.name = reg.name;
  if (!reg.topology) {
    n.notReady = "its registration does not read: " + reg.unreadable;
    return;
  }
  n.ready = true;
  n.agentVersion = reg.agentVersion;
  n.address = reg.address;
  n.http = reg.http;
  if (reg.health) {
    n.health = healthLevelName(reg.health->level);
    n.healthReasons = reg.health->reasons;
  } else if (!reg.healthUnreadable.empty()) {
    n.health = "unreadable";
    n.healthUnreadable = reg.healthUnreadable;
  }
  hal::Summary s = hal::summarize(*reg.topology);
  n.gpus = unsigned(s.gpus), n.cores = unsigned(s.cores), n.rdma = unsigned(s.rdma), n.nvme = unsigned(s.nvme);
  n.numaNodes = unsigned(s.numaNodes);
  r.topologies[reg.name] = std::make_shared<const hal::Topology>(std::move(*reg.topology));
}

// "placed n1,n2 leader-rev 7" or "refused leader-rev 7", then "defaults from ...", then diagnostics.
void readDecision(ContractView &c, const std::string &value) {
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(value).split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty())
    return;
  c.decisionLine = lines.front().str();
  llvm::SmallVector<llvm::StringRef> words;
  lines.front().split(words, ' ', -1, false);
  if (!words.empty())
    c.decision = words.front().str();
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == "leader-rev")
      words[i + 1].getAsInteger(10, c.leaderRevision);
  if (c.decision == "placed" && words.size() > 1)
    for (llvm::StringRef node : llvm::split(words[1], ','))
      c.nodes.push_back(node.str());
  for (size_t i = 1; i < lines.size(); ++i) {
    if (i == 1 && lines[i].starts_with("defaults from "))
      c.defaults = lines[i].str();
    else
      c.diagnostics.push_back(lines[i].str());
  }
}

std::string workerText(const AssignmentStatus &s) {
  std::string out = s.state + (s.code.empty() ? "" : " " + s.code) + ", worker " + s.worker;
  if (s.pid > 0) // between a crash and its restart there is none
    out += " (pid " + std::to_string(s.pid) + ")";
  if (s.worker == "exited")
    out += ", exit status " + std::to_string(s.exitStatus);
  else if (s.worker == "killed")
    out += ", signal " + std::to_string(s.exitStatus);
  return out;
}

} // namespace

ClusterStatusView statusOf(const std::vector<etcd::KeyValue> &kvs) {
  Read r;
  for (const etcd::KeyValue &kv : kvs) {
    llvm::StringRef key(kv.key);
    if (key.starts_with(kNodesPrefix)) {
      readNode(r, kv);
    } else if (key.starts_with(kAssignmentsPrefix)) {
      std::string rest = after(key, kAssignmentsPrefix);
      auto [node, contract] = llvm::StringRef(rest).split('/');
      std::string why;
      std::optional<Assignment> a = decodeAssignment(kv.value, why);
      if (!contract.empty())
        r.plans[node.str()].push_back({contract.str(), a ? a->plan : std::string()});
    } else if (key.starts_with(kStatusPrefix)) {
      std::string rest = after(key, kStatusPrefix);
      auto [node, contract] = llvm::StringRef(rest).split('/');
      r.statuses[{contract.str(), node.str()}] = kv.value;
    } else if (key.starts_with(kContractsPrefix)) {
      r.submitted.insert(after(key, kContractsPrefix));
    } else if (key.starts_with(kContractStatusPrefix)) {
      r.decisions[after(key, kContractStatusPrefix)] = kv.value;
    } else if (key.starts_with(kContractEventsPrefix)) {
      r.events[after(key, kContractEventsPrefix)] = kv.value;
    } else if (key.starts_with(kCordonsPrefix)) {
      std::string why;
      std::optional<Cordon> c = decodeCordon(kv.value, why);
      r.cordons[after(key, kCordonsPrefix)] = c ? *c : Cordon{"unknown", "its cordon does not read (" + why + ")", 0, 0};
    } else if (key.starts_with(kDrainsPrefix)) {
      r.drains[after(key, kDrainsPrefix)] = kv;
    } else if (key.starts_with(kLendingPrefix)) {
      r.lending[after(key, kLendingPrefix)] = kv;
    }
  }

  ClusterStatusView view;
  // Nodes: the registered ones, and those that still hold assignments without a registration.
  NodeRegistry registry;
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  for (const auto &[name, topo] : r.topologies)
    registry.add(name, topo, diags);
  for (auto &[node, list] : r.plans) {
    NodeView &n = r.nodes[node];
    n.name = node;
    if (!n.ready && n.notReady.empty())
      n.notReady = "its registration is gone: the agent stopped or its lease expired";
    for (const auto &[contract, bytes] : list) {
      n.contracts.push_back(contract);
      if (!n.ready)
        continue;
      if (std::optional<plan::Plan> p = plan::decodePlan(bytes, node, diags))
        registry.admit(node, std::move(*p), "an assignment", diags);
    }
  }
  // A cordon of a node that is not registered (its agent stopped for the repair) is shown too: it
  // applies again when the node comes back.
  for (const auto &[node, cordon] : r.cordons) {
    NodeView &n = r.nodes[node];
    n.name = node;
    n.cordon = cordon;
    if (!n.ready && n.notReady.empty())
      n.notReady = "its registration is gone: the agent stopped or its lease expired";
  }
  for (const auto &[node, kv] : r.drains) {
    NodeView &n = r.nodes[node];
    n.name = node;
    n.drainId = kv.modRevision;
    if (std::optional<Drain> d = decodeDrain(kv.value, n.drainUnreadable))
      n.drain = *d;
    if (!n.ready && n.notReady.empty())
      n.notReady = "its registration is gone: the agent stopped or its lease expired";
  }
  // Only a registered node lends: its record goes with its agent's lease.
  for (const auto &[node, kv] : r.lending) {
    auto n = r.nodes.find(node);
    if (n == r.nodes.end() || !n->second.ready)
      continue;
    if (std::optional<LendingRecord> l = decodeLending(kv.value, n->second.lendingUnreadable); l && kv.lease)
      n->second.lending = *l;
    else if (l)
      n->second.lendingUnreadable = "it is under no lease";
  }
  for (auto &[name, n] : r.nodes) {
    if (const NodeState *state = n.ready ? registry.find(name) : nullptr) {
      n.gpusUsed = n.gpus - std::min(n.gpus, state->capacity.freeGpus);
      n.coresUsed = n.cores - std::min(n.cores, state->capacity.freeCores);
    }
    view.nodes.push_back(n);
  }

  std::set<std::string> names = r.submitted;
  for (const auto &[name, value] : r.decisions)
    names.insert(name);
  for (const std::string &name : names) {
    ContractView c;
    c.name = name;
    c.decision = "pending";
    if (auto d = r.decisions.find(name); d != r.decisions.end())
      readDecision(c, d->second);
    if (auto e = r.events.find(name); e != r.events.end())
      c.events = decodeEvents(e->second);
    for (const std::string &node : c.nodes) {
      ContractOnNode on{node, std::nullopt, false};
      if (auto s = r.statuses.find({name, node}); s != r.statuses.end()) {
        on.status = decodeStatus(s->second);
        on.unreadable = !on.status;
      }
      c.onNodes.push_back(std::move(on));
    }
    view.contracts.push_back(std::move(c));
  }
  return view;
}

etcd::Result<ClusterStatusView> readClusterStatus(etcd::EtcdClient &client) {
  etcd::RangeOptions o;
  o.rangeEnd = etcd::prefixEnd(kRootPrefix);
  o.consistency = etcd::Consistency::Serializable;
  auto all = client.range(kRootPrefix, o);
  if (!all)
    return all.status();
  return statusOf(all->kvs);
}

bool printContracts(const ClusterStatusView &view, const std::string &only, llvm::raw_ostream &os) {
  bool found = only.empty();
  for (const ContractView &c : view.contracts) {
    if (!only.empty() && c.name != only)
      continue;
    found = true;
    os << "contract " << c.name << ": "
       << (c.decisionLine.empty() ? std::string("submitted, not decided yet") : c.decisionLine) << "\n";
    if (!c.defaults.empty())
      os << "  " << c.defaults << "\n";
    if (!c.diagnostics.empty()) {
      os << "  why:\n";
      for (const std::string &line : c.diagnostics)
        os << "    " << line << "\n";
    }
    if (!c.events.empty()) {
      os << "  events:\n";
      for (const ContractEvent &e : c.events)
        os << "    " << formatUtcMs(e.unixMs) << "  " << e.text << "\n";
    }
    auto ready = [&](const std::string &node) {
      for (const NodeView &n : view.nodes)
        if (n.name == node)
          return n.ready;
      return false;
    };
    for (const ContractOnNode &on : c.onNodes) {
      os << "  node " << on.node << ": ";
      if (on.status)
        os << workerText(*on.status) << "\n";
      else
        os << (on.unreadable ? "unreadable status" : ready(on.node) ? "no status yet" : "no status: the node is not ready")
           << "\n";
      if (on.status)
        for (const std::string &m : on.status->messages)
          os << "    " << m << "\n";
    }
  }
  return found;
}

llvm::json::Value contractsJson(const ClusterStatusView &view, const std::string &only) {
  llvm::json::Array out;
  for (const ContractView &c : view.contracts) {
    if (!only.empty() && c.name != only)
      continue;
    llvm::json::Array nodes, diagnostics, events, onNodes;
    for (const std::string &n : c.nodes)
      nodes.push_back(n);
    for (const std::string &d : c.diagnostics)
      diagnostics.push_back(d);
    for (const ContractEvent &e : c.events)
      events.push_back(llvm::json::Object{{"unix_ms", e.unixMs}, {"time", formatUtcMs(e.unixMs)}, {"text", e.text}});
    for (const ContractOnNode &on : c.onNodes) {
      llvm::json::Object o{{"node", on.node}};
      if (on.status) {
        llvm::json::Array messages;
        for (const std::string &m : on.status->messages)
          messages.push_back(m);
        o["state"] = on.status->state;
        if (!on.status->code.empty())
          o["code"] = on.status->code;
        o["worker"] = on.status->worker;
        if (on.status->pid > 0)
          o["pid"] = on.status->pid;
        if (on.status->worker == "exited" || on.status->worker == "killed")
          o[on.status->worker == "exited" ? "exit_status" : "signal"] = on.status->exitStatus;
        o["messages"] = std::move(messages);
      } else {
        o["state"] = on.unreadable ? "unreadable" : "unknown";
      }
      onNodes.push_back(std::move(o));
    }
    llvm::json::Object o{{"name", c.name},           {"decision", c.decision},
                         {"nodes", std::move(nodes)}, {"leader_revision", c.leaderRevision},
                         {"diagnostics", std::move(diagnostics)}, {"events", std::move(events)},
                         {"on_nodes", std::move(onNodes)}};
    if (!c.defaults.empty())
      o["defaults"] = c.defaults;
    out.push_back(std::move(o));
  }
  return llvm::json::Object{{"contracts", std::move(out)}};
}

std::optional<RankOutput> rankOutputOf(const ClusterStatusView &view, const std::string &contract, unsigned rank,
                                       std::string &why) {
  auto c = std::find_if(view.contracts.begin(), view.contracts.end(),
                        [&](const ContractView &v) { return v.name == contract; });
  if (c == view.contracts.end()) {
    why = "no such contract is submitted or decided";
    return std::nullopt;
  }
  if (c->decision != "placed") {
    why = "it is not placed (" + c->decision + "; see mscale-cli cluster status " + contract + ")";
    return std::nullopt;
  }
  if (rank >= c->nodes.size()) {
    why = "the job has " + std::to_string(c->nodes.size()) + " rank(s), on " + llvm::join(c->nodes, ",");
    return std::nullopt;
  }
  const std::string &name = c->nodes[rank];
  auto n = std::find_if(view.nodes.begin(), view.nodes.end(), [&](const NodeView &v) { return v.name == name; });
  if (n == view.nodes.end() || !n->ready) {
    why = "its node '" + name + "' is not ready" + (n == view.nodes.end() ? "" : " (" + n->notReady + ")");
    return std::nullopt;
  }
  if (n->http.empty()) {
    why = "its node '" + name + "' serves no HTTP endpoint (its agent runs without --metrics HOST:PORT)";
    return std::nullopt;
  }
  return RankOutput{name, n->http};
}

std::vector<std::string> jobsStillOn(const ClusterStatusView &view, const std::string &node,
                                     const std::vector<std::string> &jobs) {
  std::vector<std::string> left;
  for (const std::string &job : jobs) {
    auto c = std::find_if(view.contracts.begin(), view.contracts.end(),
                          [&](const ContractView &v) { return v.name == job; });
    if (c != view.contracts.end() && c->decision == "placed" && llvm::is_contained(c->nodes, node))
      left.push_back(job);
  }
  return left;
}

namespace {

// ",Draining", ",DrainTimedOut" or ",DrainUnreadable" after the node's status, as kubectl adds
// ",SchedulingDisabled".
std::string drainStatus(const NodeView &n) {
  if (!n.drainUnreadable.empty())
    return ",DrainUnreadable";
  if (!n.drain)
    return "";
  return n.drain->timedOut ? ",DrainTimedOut" : ",Draining";
}

// What a node lends, one word: "2cpu@64%" (its owners lend 2 CPUs at their most, lendable 64% of
// the time), "2cpu@64%+3gpu@40%+2qp@40%" with GPU units on one GPU and queue pairs on one port and
// their shares; "-" when nothing is lent, "unreadable".
std::string lendsText(const NodeView &n) {
  if (!n.lendingUnreadable.empty())
    return "unreadable";
  const std::optional<LendingRecord> &l = n.lending;
  if (!l || (!l->cpus && !l->gpuUnits && !l->rdmaQueuePairs))
    return "-";
  auto part = [](uint32_t units, const char *unit, uint32_t permille) {
    return std::to_string(units) + unit + "@" + std::to_string(permille / 10) + "%";
  };
  std::string text = part(l->cpus, "cpu", l->sharePermille);
  if (l->gpuUnits)
    text += "+" + part(l->gpuUnits, "gpu", l->gpuSharePermille);
  if (l->rdmaQueuePairs)
    text += "+" + part(l->rdmaQueuePairs, "qp", l->rdmaSharePermille);
  return text;
}
} // namespace

void printNodes(const ClusterStatusView &view, llvm::raw_ostream &os) {
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "STATUS", "HEALTH", "GPUS", "USED", "CORES", "USED", "RDMA", "NVME", "NUMA", "AGENT", "ADDRESS",
       "LENDS", "CONTRACTS"}};
  for (const NodeView &n : view.nodes) {
    std::string contracts = n.contracts.empty() ? "-" : llvm::join(n.contracts, ",");
    // kubectl's convention: "Ready,SchedulingDisabled"; the reason follows the contracts.
    std::string cordoned = (n.cordon ? ",Cordoned" : "") + drainStatus(n);
    std::string why = n.cordon ? "  (cordoned by " + n.cordon->by + ": " + n.cordon->reason + ")" : "";
    // The verdict and its reasons' codes: "failed:ERR_HEALTH_001"; the messages are --json's.
    std::string health = n.health;
    for (size_t i = 0; i < n.healthReasons.size(); ++i)
      health += (i ? "," : ":") + n.healthReasons[i].code;
    if (n.ready)
      rows.push_back({n.name, "Ready" + cordoned, health, std::to_string(n.gpus), std::to_string(n.gpusUsed),
                      std::to_string(n.cores), std::to_string(n.coresUsed), std::to_string(n.rdma),
                      std::to_string(n.nvme), std::to_string(n.numaNodes), n.agentVersion,
                      n.address.empty() ? "-" : n.address, lendsText(n), contracts + why});
    else
      rows.push_back({n.name, "NotReady" + cordoned, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                      contracts + "  (" + n.notReady + ")" + why});
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  for (const auto &row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += i + 1 < row.size() ? row[i] + std::string(width[i] - row[i].size() + 2, ' ') : row[i];
    os << line << "\n";
  }
}

llvm::json::Value nodesJson(const ClusterStatusView &view) {
  llvm::json::Array out;
  for (const NodeView &n : view.nodes) {
    llvm::json::Array contracts;
    for (const std::string &c : n.contracts)
      contracts.push_back(c);
    llvm::json::Object o{{"name", n.name}, {"ready", n.ready}, {"contracts", std::move(contracts)}};
    o["cordoned"] = n.cordon.has_value();
    if (n.cordon)
      o["cordon"] = llvm::json::Object{{"by", n.cordon->by},
                                       {"reason", n.cordon->reason},
                                       {"leader_revision", n.cordon->leaderRevision},
                                       {"since_unix_ms", n.cordon->sinceUnixMs}};
    if (n.drain)
      o["drain"] = llvm::json::Object{{"id", n.drainId},
                                      {"state", n.drain->timedOut ? "timed-out" : "draining"},
                                      {"force", n.drain->force},
                                      {"leader_revision", n.drain->leaderRevision},
                                      {"since_unix_ms", n.drain->sinceUnixMs},
                                      {"deadline_unix_ms", n.drain->deadlineUnixMs}};
    else if (!n.drainUnreadable.empty())
      o["drain"] = llvm::json::Object{{"id", n.drainId}, {"state", "unreadable"}, {"why", n.drainUnreadable}};
    if (n.lending)
      o["lending"] = llvm::json::Object{{"owners", int64_t(n.lending->owners)},
                                        {"cpus", int64_t(n.lending->cpus)},
                                        {"gpu_units", int64_t(n.lending->gpuUnits)},
                                        {"share_permille", int64_t(n.lending->sharePermille)},
                                        {"lent_cpus", int64_t(n.lending->lentCpus)},
                                        {"rdma_queue_pairs", int64_t(n.lending->rdmaQueuePairs)},
                                        {"gpu_share_permille", int64_t(n.lending->gpuSharePermille)},
                                        {"lent_gpu_units", int64_t(n.lending->lentGpuUnits)},
                                        {"rdma_share_permille", int64_t(n.lending->rdmaSharePermille)},
                                        {"lent_queue_pairs", int64_t(n.lending->lentQueuePairs)}};
    else if (!n.lendingUnreadable.empty())
      o["lending"] = llvm::json::Object{{"state", "unreadable"}, {"why", n.lendingUnreadable}};
    if (n.ready) {
      o["agent_version"] = n.agentVersion;
      if (!n.address.empty())
        o["address"] = n.address;
      if (!n.http.empty())
        o["http"] = n.http;
      o["gpus"] = llvm::json::Object{{"total", int64_t(n.gpus)}, {"used", int64_t(n.gpusUsed)}, {"free", int64_t(n.gpus - n.gpusUsed)}};
      o["cores"] = llvm::json::Object{{"total", int64_t(n.cores)}, {"used", int64_t(n.coresUsed)}, {"free", int64_t(n.cores - n.coresUsed)}};
      o["rdma"] = int64_t(n.rdma);
      o["nvme"] = int64_t(n.nvme);
      o["numa_nodes"] = int64_t(n.numaNodes);
      llvm::json::Array reasons;
      for (const HealthReason &reason : n.healthReasons)
        reasons.push_back(llvm::json::Object{{"code", reason.code}, {"message", reason.message}});
      llvm::json::Object health{{"verdict", n.health}, {"reasons", std::move(reasons)}};
      if (!n.healthUnreadable.empty())
        health["unreadable"] = n.healthUnreadable;
      o["health"] = std::move(health);
    } else {
      o["not_ready"] = n.notReady;
    }
    out.push_back(std::move(o));
  }
  return llvm::json::Object{{"nodes", std::move(out)}};
}

} // namespace msc::cluster

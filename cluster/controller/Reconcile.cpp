#include "cluster/controller/Reconcile.h"

#include "cluster/keys/Keys.h"
#include "cluster/placement/Placer.h"
#include "driver/Compile.h"
#include "hal/TopologyYaml.h"
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <map>
#include <set>

namespace msc::cluster {
namespace {

// Diagnostics of one decision, printed as the tools print them, kept as text for the status key.
struct Captured {
  std::string text;
  llvm::raw_string_ostream os{text};
  llvm::SourceMgr sm;
  std::unique_ptr<DiagnosticConsumer> printer = makeDiagnosticPrinter(DiagnosticsFormat::Text, os, "mscale-controller", "");
  DiagnosticEngine diags{&sm, *printer};
  // Call once the decision is made: the printer writes what it buffered.
  void done() {
    diags.finish();
    os.flush();
  }
  std::string firstLine() const {
    size_t at = text.find("error[");
    std::string line = at == std::string::npos ? text : text.substr(at);
    return line.substr(0, line.find('\n'));
  }
};

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

// The contract's IR from its source text; the frontend reads files, so the text goes to a scratch
// file named after the contract (its diagnostics then name "<contract>.msc").
std::optional<ir::Module> frontend(const std::string &name, const std::string &source,
                                   const ReconcileOptions &options, Captured &out) {
  llvm::SmallString<256> path(options.scratchDir);
  llvm::sys::path::append(path, name + ".msc");
  std::error_code ec;
  {
    llvm::raw_fd_ostream file(path, ec);
    if (ec) {
      out.diags.report(DiagCode::ERR_DRV_004) << path.str() << ec.message();
      return std::nullopt;
    }
    file << source;
  }
  driver::CompileOptions co;
  co.inputs = {std::string(path)};
  co.stdlibDir = options.stdlibDir;
  co.onlyContract = name;
  return driver::loadContracts(co, out.sm, out.diags);
}

} // namespace

etcd::Result<ReconcileReport> reconcile(etcd::EtcdClient &client, etcd::Fencing &fencing,
                                        const ReconcileOptions &options, ReconcileMemory &memory) {
  // One linearizable read of the whole cluster, so nodes, assignments and contracts agree.
  auto all = client.range(kRootPrefix, under(kRootPrefix));
  if (!all)
    return all.status();
  ReconcileReport report;
  report.revision = all->revision;

  Captured setup;
  NodeRegistry registry;
  std::map<std::string, std::string> contracts;           // name -> source
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
        // A malformed registration places nothing (its agent reports its own errors).
        std::optional<hal::Topology> topo =
            r ? hal::readTopologyYaml(r->topologyYaml, kv.key, setup.diags) : std::optional<hal::Topology>{};
        if (topo) {
          topo->setName(node);
          parsed.topology = std::make_shared<const hal::Topology>(std::move(*topo));
        }
      }
      live.insert(node);
      if (parsed.topology)
        registry.add(node, parsed.topology, setup.diags);
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

  // What stays: a contract whose every assignment is on a live node holds those nodes' resources.
  std::set<std::string> toPlace, lost;
  auto now = std::chrono::steady_clock::now();
  for (const auto &[name, source] : contracts) {
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
  for (const std::string &name : toPlace) {
    Captured decision;
    std::vector<etcd::TxnOp> ops;
    bool replacing = assigned.count(name) != 0;
    std::optional<ir::Module> module = frontend(name, contracts[name], options, decision);
    const ir::Contract *contract = nullptr;
    if (module)
      for (const ir::Contract &c : module->contracts)
        if (c.name == name)
          contract = &c;
    PlacementResult placed;
    if (contract) {
      Placer placer(registry, options.compilerVersion);
      placed = placer.place(*contract, decision.diags);
    } else if (module) {
      decision.os << "error: the source under '" << kContractsPrefix << name << "' has no contract '" << name << "'\n";
    }
    decision.done();
    std::string status;
    if (placed.placed()) {
      std::string nodes;
      for (const NodePlacement &p : placed.nodes) {
        Assignment a;
        a.leaderRevision = fencing.leader().rev;
        a.plan = plan::encodePlan(p.plan);
        ops.push_back(etcd::TxnOp::put(assignmentKey(p.node->name, name), encodeAssignment(a)));
        nodes += (nodes.empty() ? "" : ",") + p.node->name;
      }
      status = "placed " + nodes + " leader-rev " + rev + "\n";
      // The old set goes, live nodes included (placed whole); a node chosen again gets its new
      // assignment by the put above (etcd refuses a key twice in one transaction).
      for (const Assigned &a : assigned[name])
        if (std::find_if(ops.begin(), ops.end(), [&](const etcd::TxnOp &op) { return op.key == a.key; }) == ops.end())
          ops.push_back(etcd::TxnOp::remove(a.key));
      (replacing ? report.replaced : report.placed).push_back(name + " -> " + nodes);
    } else {
      std::string first = decision.firstLine();
      status = "refused leader-rev " + rev + "\n" + decision.text;
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

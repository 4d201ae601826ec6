// mscale-cli cluster nodes [--json] | show NODE [--matrix] | topology [NODE] | status [CONTRACT] [--json]
//                   logs CONTRACT [--rank R] [--attempt N] [-f]
//                   submit FILE.msc [--contract NAME] [--class CLASS] [--env K=V]... [-- WORKER COMMAND...]
//                   withdraw CONTRACT
//                   cordon NODE --reason TEXT | uncordon NODE
//                   drain NODE [--deadline D] [--force] [--no-wait]
// Reads are serializable: any etcd member answers from its own copy without asking the raft
// leader, so reads go on while the leader is busy or being elected, and never touch the
// controllers. Writes go through the leading controller's service (cluster/controller), found
// through etcd's election, which checks them and writes them fenced by its leader key.
#include "tools/mscale-cli/CommandGroup.h"
#include "tools/mscale-cli/DrainView.h"
#include "tools/mscale-cli/LogsView.h"

#include "cluster/config/ClusterConfig.h"
#include "cluster/controller/client/ControllerClient.h"
#include "cluster/deploy/ClusterView.h"
#include "cluster/deploy/RegisteredNodes.h"
#include "cluster/etcd/EtcdClient.h"
#include "cluster/keys/Keys.h"
#include "cluster/status/ClusterStatus.h"
#include "hal/LinkMatrix.h"
#include "hal/Render.h"
#include "driver/Compile.h"
#include "hal/TopologyYaml.h"
#include "support/Quantity.h"

#include <llvm/Support/Path.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>

#include <cstdlib>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand ClusterCmd("cluster", "The cluster: read its state from etcd (nodes, show NODE, topology [NODE], "
                                     "status [CONTRACT]); a job's output from its nodes (logs CONTRACT); submit "
                                     "FILE.msc [-- COMMAND], withdraw CONTRACT, cordon NODE --reason TEXT, uncordon "
                                     "NODE, drain NODE through the leader");
cl::list<std::string> Args(cl::Positional,
                           cl::desc("<nodes | show NODE | topology [NODE] | status [CONTRACT] | logs CONTRACT | "
                                    "submit FILE.msc [-- COMMAND...] | withdraw CONTRACT | cordon NODE --reason TEXT | "
                                    "uncordon NODE | drain NODE>"),
                           cl::OneOrMore, cl::sub(ClusterCmd));
cl::opt<std::string> ContractName("contract", cl::desc("submit: the contract of the file (default: its only one)"),
                                  cl::sub(ClusterCmd));
cl::opt<std::string> Class("class", cl::desc("submit: the contract's class when it says none: guaranteed or "
                                             "opportunistic (a borrower, placed where other contracts lend)"),
                           cl::value_desc("CLASS"), cl::sub(ClusterCmd));
cl::list<std::string> Env("env", cl::desc("submit: an environment variable of the worker"), cl::value_desc("NAME=VALUE"),
                          cl::sub(ClusterCmd));
cl::opt<std::string> Reason("reason", cl::desc("cordon: why the node takes no new placement (one line)"),
                            cl::value_desc("text"), cl::sub(ClusterCmd));
cl::opt<std::string> Deadline("deadline", cl::desc("drain: by when the node's jobs must have moved (default 10min)"),
                              cl::value_desc("duration"), cl::init("10min"), cl::sub(ClusterCmd));
cl::opt<bool> Force("force", cl::desc("drain: move a job that cannot be placed whole elsewhere, or has not stopped "
                                      "by the deadline, anyway (from its newest snapshot, as a lost node's)"),
                    cl::sub(ClusterCmd));
cl::opt<bool> NoWait("no-wait", cl::desc("drain: return once the leader accepted the drain"), cl::sub(ClusterCmd));
cl::opt<unsigned> TimeoutMs("timeout-ms", cl::desc("submit, withdraw, cordon, uncordon, drain: how long to look for a "
                                                   "leading controller"),
                            cl::init(15000), cl::sub(ClusterCmd));
cl::opt<std::string> Controller("controller", cl::desc("submit, withdraw, cordon, uncordon, drain: call this controller "
                                                       "only, without following the leadership"),
                                cl::value_desc("host:port"), cl::sub(ClusterCmd));

cl::opt<unsigned> Rank("rank", cl::desc("logs: the job's rank whose output to show (default 0)"), cl::init(0),
                       cl::sub(ClusterCmd));
cl::opt<int> Attempt("attempt", cl::desc("logs: the attempt on the rank's node (0 its first run there; default the "
                                         "newest)"),
                     cl::init(-1), cl::sub(ClusterCmd));
cl::opt<bool> Follow("follow", cl::desc("logs: follow the output as it is written, like tail -f"), cl::sub(ClusterCmd));
cl::alias FollowShort("f", cl::desc("Alias for --follow"), cl::aliasopt(Follow));

cluster::WriteOptions writeOptions() { return {std::chrono::milliseconds(TimeoutMs), Controller}; }
cl::opt<std::string> Endpoints("endpoints", cl::desc("etcd members (default: $ETCD_ENDPOINTS)"),
                               cl::value_desc("host:port,..."), cl::sub(ClusterCmd));
cl::opt<bool> Json("json", cl::desc("nodes, status: write JSON for scripts"), cl::sub(ClusterCmd));
cl::opt<bool> ShowMatrix("matrix", cl::desc("show: GPU/NIC/NVMe link classes (like nvidia-smi topo -m)"),
                         cl::sub(ClusterCmd));

int fail(const etcd::Status &s) {
  llvm::errs() << "mscale-cli: " << s.str() << "\n";
  return 1;
}

int usage(DiagnosticEngine &diags, const std::string &what) {
  diags.report(DiagCode::ERR_DRV_005) << what;
  return 2;
}

// Every node: ready (registered) with its capacity and what is assigned there, or not ready (its
// registration gone or unreadable while assignments remain): ClusterStatus.h.
int nodes(etcd::EtcdClient &client) {
  auto view = cluster::readClusterStatus(client);
  if (!view)
    return fail(view.status());
  if (Json)
    llvm::outs() << llvm::formatv("{0:2}", cluster::nodesJson(*view)) << "\n";
  else
    cluster::printNodes(*view, llvm::outs());
  return 0;
}

// One registered node's topology: its tree, or its link matrix.
int show(etcd::EtcdClient &client, DiagnosticEngine &diags, const std::string &only) {
  auto r = client.range(cluster::nodeKey(only));
  if (!r)
    return fail(r.status());
  if (r->kvs.empty()) {
    diags.report(DiagCode::ERR_DRV_005) << ("no node '" + only + "' is registered");
    return 1;
  }
  for (const etcd::KeyValue &kv : r->kvs) {
    std::string node = kv.key.substr(std::string(cluster::kNodesPrefix).size()), why;
    std::optional<cluster::Registration> reg = cluster::decodeRegistration(kv.value, why);
    std::optional<hal::Topology> topo =
        reg ? hal::readTopologyYaml(reg->topologyYaml, kv.key, diags) : std::optional<hal::Topology>{};
    if (!topo) {
      llvm::outs() << node << ": unreadable registration" << (why.empty() ? "" : ": " + why) << "\n";
      continue;
    }
    if (ShowMatrix) {
      hal::printLinkMatrix(hal::computeLinkMatrix(*topo), llvm::outs());
    } else {
      hal::printTree(*topo, llvm::outs());
    }
  }
  return 0;
}

// The published cluster config, then per registered node its PCIe domains and devices, the ones the
// config reserves marked: what placement may use (docs/deploy.md).
int topology(etcd::EtcdClient &client, DiagnosticEngine &diags, const std::string &only) {
  auto nodes = cluster::readRegisteredNodes(client, etcd::Consistency::Serializable);
  if (!nodes)
    return fail(nodes.status());
  auto stored = cluster::readStoredConfig(client, etcd::Consistency::Serializable);
  std::optional<cluster::ClusterConfig> config;
  if (!stored) {
    llvm::outs() << "cluster config: unreadable: " << stored.status().str() << "\n";
  } else if (!*stored) {
    llvm::outs() << "cluster config: none published (mscale-deploy publishes one)\n";
  } else {
    cluster::ConfigSource source(cluster::kConfigKey, (*stored)->published.yaml);
    config = cluster::parseClusterConfig(source);
    if (config) {
      cluster::printConfigSummary(*config, llvm::outs());
      llvm::outs() << "  published at revision " << (*stored)->modRevision << " by " << (*stored)->published.writtenBy
                   << "\n";
    } else {
      llvm::outs() << "cluster config: unreadable (the leader places nothing until it reads):\n" << source.printed();
    }
  }
  bool found = only.empty();
  for (const cluster::RegisteredNode &node : *nodes) {
    if (!only.empty() && node.name != only)
      continue;
    found = true;
    cluster::printNodeDomains(node, config ? &*config : nullptr, llvm::outs());
  }
  if (!found) {
    diags.report(DiagCode::ERR_DRV_005) << ("no node '" + only + "' is registered");
    return 1;
  }
  return 0;
}

// Per contract the leader's decision, why, the scaling defaults it took, its events, and what each
// node made of its assignment (ClusterStatus.h).
int status(etcd::EtcdClient &client, DiagnosticEngine &diags, const std::string &only) {
  auto view = cluster::readClusterStatus(client);
  if (!view)
    return fail(view.status());
  if (Json) {
    llvm::outs() << llvm::formatv("{0:2}", cluster::contractsJson(*view, only)) << "\n";
    return 0;
  }
  if (!cluster::printContracts(*view, only, llvm::outs())) {
    diags.report(DiagCode::ERR_DRV_005) << ("no contract '" + only + "' is submitted or decided");
    return 1;
  }
  return 0;
}

// What rank R printed, read from the node that runs it: the R-th node of the placement (one worker
// a node, rank 0 there), at the HTTP endpoint its registration advertises.
int logs(etcd::EtcdClient &client, DiagnosticEngine &diags, const std::string &contract) {
  if (Attempt < -1)
    return usage(diags, "--attempt " + std::to_string(Attempt) + ": an attempt is 0 or more");
  auto view = cluster::readClusterStatus(client);
  if (!view)
    return fail(view.status());
  std::string why;
  std::optional<cluster::RankOutput> where = cluster::rankOutputOf(*view, contract, Rank, why);
  if (!where) {
    diags.report(DiagCode::ERR_CLUSTER_015) << contract << std::to_string(Rank) << why;
    return 1;
  }
  cli::LogsViewOptions o;
  o.contract = contract;
  o.rank = 0;
  o.http = where->http;
  o.node = where->node;
  o.jobRank = Rank;
  o.follow = Follow;
  if (Attempt >= 0)
    o.attempt = uint32_t(Attempt);
  return cli::showLogs(o, diags);
}

int printWrite(const etcd::Result<cluster::WriteOutcome> &done, const std::string &what,
               const std::string &unchanged = "unchanged") {
  if (!done)
    return fail(done.status());
  llvm::outs() << what << (done->unchanged ? " (" + unchanged + ")" : "") << " at revision " << done->revision
               << " by " << done->leader << ", leader-rev " << done->leaderRevision << "\n";
  return 0;
}

// The file's contract compiled here first: a mistake is reported at once, with carets, and the name
// of a file's only contract is known. The leader compiles it again before it accepts it.
int submit(etcd::EtcdClient &client, cli::Diagnostics &diagnostics, const std::string &file,
           std::vector<std::string> command) {
  DiagnosticEngine &diags = diagnostics.engine();
  auto buffer = llvm::MemoryBuffer::getFile(file);
  if (!buffer) {
    diags.report(DiagCode::ERR_DRV_001) << file << buffer.getError().message();
    return 2;
  }
  driver::CompileOptions co;
  co.inputs = {file};
  co.onlyContract = ContractName;
  co.defaultClass = Class;
  // Before the file is compiled: a class that is none would make the check below say the wrong thing.
  if (std::string problem = cluster::submittedClassProblem(Class); !problem.empty()) {
    diags.report(DiagCode::ERR_CLUSTER_023)
        << (ContractName.empty() ? llvm::sys::path::stem(file).str() : ContractName.getValue()) << Class.getValue()
        << problem;
    return 2;
  }
  std::optional<ir::Module> module = driver::loadContracts(co, diagnostics.sourceMgr(), diags);
  if (!module)
    return 1;
  std::string contract = ContractName;
  if (contract.empty()) {
    if (module->contracts.size() != 1)
      return usage(diags, "'" + file + "' defines " + std::to_string(module->contracts.size()) +
                              " contracts; name the one to submit with --contract");
    contract = module->contracts.front().name;
  }
  for (const ir::Contract &c : module->contracts)
    if (std::string problem = cluster::submittedClassProblem(Class, c.body.compute.class_ ? c.body.compute.class_->value : "");
        c.name == contract && !problem.empty()) {
      diags.report(DiagCode::ERR_CLUSTER_023) << contract << Class.getValue() << problem;
      return 1;
    }
  cluster::Submission s{contract, (*buffer)->getBuffer().str(), std::move(command), {}, Class};
  for (const std::string &kv : Env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return usage(diags, "--env '" + kv + "': expected NAME=VALUE");
    s.environment[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return printWrite(cluster::submitContract(client, s, writeOptions()),
                    "submitted contract '" + contract + "'");
}

// The leader cordons the node and moves each job there at a snapshot boundary (docs/cluster.md);
// then this waits for the moves unless --no-wait. A little past the deadline it stops waiting: by
// then the leader has moved the jobs (--force) or timed the drain out.
int drain(etcd::EtcdClient &client, const std::string &node) {
  std::optional<uint64_t> ns = parseDurationNs(Deadline, "s");
  if (!ns || *ns < 1000000)
    return fail(etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_020,
                                   {node, "the deadline '" + Deadline + "' is not a duration of at least 1ms "
                                          "(e.g. 90s, 10min, 2h)"}));
  std::chrono::milliseconds deadline(std::min<uint64_t>(*ns / 1000000, uint64_t(INT64_MAX)));
  auto done = cluster::drainNode(client, node, deadline, Force, writeOptions());
  if (!done)
    return fail(done.status());
  llvm::outs() << "draining node '" << node << "'" << (done->write.unchanged ? " (drained already)" : "") << ": drain "
               << done->write.revision << " by " << done->write.leader << ", leader-rev " << done->write.leaderRevision
               << "; jobs to move: " << (done->jobs.empty() ? "none" : llvm::join(done->jobs, ", ")) << "\n";
  llvm::outs().flush();
  if (NoWait)
    return 0;
  return cli::waitForDrain(client, node, *done, deadline + std::chrono::seconds(30), llvm::outs());
}

int run() {
  cli::Diagnostics diagnostics;
  DiagnosticEngine &diags = diagnostics.engine();
  std::string list = Endpoints;
  if (list.empty() && std::getenv("ETCD_ENDPOINTS"))
    list = std::getenv("ETCD_ENDPOINTS");
  auto endpoints = etcd::parseEndpoints(list);
  if (!endpoints)
    return usage(diags, "--endpoints: " + endpoints.status().str());
  auto client = etcd::EtcdClient::connect({*endpoints});
  if (!client)
    return fail(client.status());
  const std::string &what = Args.front();
  if (what == "nodes" && Args.size() == 1)
    return nodes(**client);
  if (what == "show" && Args.size() == 2)
    return show(**client, diags, Args[1]);
  if (what == "topology" && Args.size() <= 2)
    return topology(**client, diags, Args.size() == 2 ? Args[1] : "");
  if (what == "status" && Args.size() <= 2)
    return status(**client, diags, Args.size() == 2 ? Args[1] : "");
  if (what == "logs" && Args.size() == 2)
    return logs(**client, diags, Args[1]);
  if (what == "submit" && Args.size() >= 2) {
    std::vector<std::string> command(Args.begin() + 2, Args.end());
    if (!command.empty() && command.front() == "--")
      command.erase(command.begin());
    return submit(**client, diagnostics, Args[1], std::move(command));
  }
  if (what == "withdraw" && Args.size() == 2)
    return printWrite(cluster::withdrawContract(**client, Args[1], writeOptions()),
                      "withdrew contract '" + Args[1] + "'");
  // What runs on a cordoned node stays; the leader places nothing new there (docs/cluster.md).
  if (what == "cordon" && Args.size() == 2)
    return printWrite(cluster::cordonNode(**client, Args[1], Reason, writeOptions()),
                      "cordoned node '" + Args[1] + "'", "already cordoned for this reason");
  if (what == "uncordon" && Args.size() == 2)
    return printWrite(cluster::uncordonNode(**client, Args[1], writeOptions()), "uncordoned node '" + Args[1] + "'",
                      "was not cordoned");
  if (what == "drain" && Args.size() == 2)
    return drain(**client, Args[1]);
  return usage(diags, "cluster: expected 'nodes', 'show NODE', 'topology [NODE]', 'status [CONTRACT]', "
                      "'logs CONTRACT', 'submit FILE.msc [-- COMMAND...]', 'withdraw CONTRACT', "
                      "'cordon NODE --reason TEXT', 'uncordon NODE' or 'drain NODE'");
}

cli::Registration registration(ClusterCmd, run);

} // namespace

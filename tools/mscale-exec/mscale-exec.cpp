// mscale-exec: the node side of a plan. Thin: parses options, the work is in executor/.
//   mscale-exec run plan.msp [--log FILE] [--config node.yaml] [--nproc-per-node N] -- CMD ARGS
//   mscale-exec serve --socket PATH [--config node.yaml] [--metrics PORT|HOST:PORT|unix:PATH] [--log FILE]
//                     [--endpoints H:P,... --node NAME [--lease-ttl 5s] [--advertise-address ADDR]
//                      [--health-root DIR] [--health-interval 10s]]
#include "cluster/agent/ClusterAgent.h"
#include "cluster/keys/Keys.h"
#include "executor/Run.h"
#include "executor/WorkerGroup.h"
#include "executor/agent/Agent.h"
#include "support/Version.h"
#include "tools/common/OptionSpelling.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/InitLLVM.h>
#include <llvm/Support/raw_ostream.h>

#include <csignal>
#include <memory>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand RunCmd("run", "Apply a plan, run the worker in it, release everything when it exits");
cl::SubCommand ServeCmd("serve", "Serve as the node agent on a Unix socket");

cl::opt<std::string> PlanPath(cl::Positional, cl::desc("<plan.msp>"), cl::Required, cl::sub(RunCmd));
cl::list<std::string> Command(cl::ConsumeAfter, cl::desc("-- <worker command and arguments>"), cl::sub(RunCmd));
cl::opt<std::string> Topology("topology", cl::desc("Re-check against this topology instead of the live node "
                                                    "(tests; the appliers still act on this node); with --cluster, "
                                                    "also the topology registered"),
                              cl::init("live"), cl::sub(RunCmd), cl::sub(ServeCmd));
cl::opt<std::string> Inject("inject-failure", cl::desc("Test hook: make this applier fail (cpu, io, memory, gpu, rdma)"),
                            cl::sub(RunCmd));
cl::opt<bool> Strict("strict-fingerprint", cl::desc("Refuse a plan whose topology fingerprint differs at all"),
                     cl::sub(RunCmd));
cl::opt<std::string> CudaCounters("cuda-counters",
                                  cl::desc("Preload the CUDA interposer into the workers and count their CUDA calls "
                                           "into this directory (read with mscale-trace --via interposer "
                                           "--counters-dir)"),
                                  cl::value_desc("dir"), cl::sub(RunCmd));
cl::opt<std::string> CudaInterposer("cuda-interposer",
                                    cl::desc("The interposer to preload (default: lib/libmscale_cuda_interposer.so "
                                             "beside this tool's bin/)"),
                                    cl::value_desc("path"), cl::sub(RunCmd));
cl::opt<bool> DryRun("check-only", cl::desc("Re-check the plan against the node and stop"), cl::sub(RunCmd));
cl::opt<unsigned> MaxRestarts("max-restarts", cl::desc("Worker restarts after faults before giving up (default 10)"),
                              cl::init(10), cl::sub(RunCmd));
cl::opt<unsigned> CrashLoopAfter("crash-loop-after",
                                 cl::desc("Stop when this many attempts in a row crash or hang at the same step "
                                          "(ERR_EXEC_029; default 3, 0: never)"),
                                 cl::init(3), cl::sub(RunCmd));
// A string, not cl::opt<unsigned>: "0", "two" and "1000" get the tool's coded error, not LLVM's.
cl::opt<std::string> NprocPerNode("nproc-per-node",
                                  cl::desc("Run the worker command as N ranks of one job, like torchrun (RANK, "
                                           "WORLD_SIZE, MASTER_ADDR/PORT; 1 to 256); supervised as one"),
                                  cl::value_desc("N"), cl::sub(RunCmd));
cl::opt<bool> Resume("resume", cl::desc("This job's previous executor was lost: the first worker resumes from the "
                                        "newest snapshot (the disk tier)"),
                     cl::sub(RunCmd));

cl::opt<std::string> Socket("socket", cl::desc("Unix socket to listen on"), cl::sub(ServeCmd));
cl::opt<std::string> Metrics("metrics", cl::desc("The agent's HTTP endpoint (/metrics for Prometheus, /logs/CONTRACT for "
                                      "worker output): a local TCP port, HOST:PORT (port 0: any) or unix:PATH"),
                             cl::sub(ServeCmd));
cl::opt<std::string> ClusterEndpoints("endpoints",
                                      cl::desc("Join the cluster: register this node in etcd at these members "
                                               "and run the plans assigned to it"),
                                      cl::value_desc("host:port,..."), cl::sub(ServeCmd));
cl::opt<std::string> ClusterEndpointsOld("cluster", cl::desc("The older spelling of --endpoints"), cl::Hidden,
                                         cl::sub(ServeCmd));
cl::opt<std::string> NodeName("node", cl::desc("The node's name in the cluster (with --cluster)"), cl::value_desc("name"),
                              cl::sub(ServeCmd));
// A duration ("5s"; a bare "5" is the older spelling, noted); anything else gets the tool's coded error.
cl::opt<std::string> LeaseTtl("lease-ttl",
                              cl::desc("TTL of the node's registration lease (with --cluster; default 5s)"),
                              cl::value_desc("duration"), cl::init("5s"), cl::sub(ServeCmd));

cl::opt<std::string> AdvertiseAddress("advertise-address",
                                      cl::desc("Where other nodes reach this node's workers: the MASTER_ADDR of "
                                               "cluster jobs whose rank 0 runs here (with --endpoints; default: "
                                               "the host name)"),
                                      cl::value_desc("host"), cl::sub(ServeCmd));

cl::opt<std::string> HealthRoot("health-root",
                                cl::desc("Where the node's health is read (with --endpoints; default: the "
                                         "topology's root, '/' for live, the directory of a recorded sysfs tree)"),
                                cl::value_desc("dir"), cl::sub(ServeCmd));
cl::opt<std::string> HealthInterval("health-interval",
                                    cl::desc("How often the node's health is judged (with --endpoints; default 10s)"),
                                    cl::value_desc("duration"), cl::init("10s"), cl::sub(ServeCmd));

cl::opt<std::string> Config("config", cl::desc("Node config (YAML)"), cl::value_desc("node.yaml"), cl::sub(RunCmd),
                            cl::sub(ServeCmd));
cl::opt<std::string> LogFile("log", cl::desc("Also write the log to this file"), cl::value_desc("file"),
                             cl::sub(RunCmd), cl::sub(ServeCmd));

exec::Agent *theAgent = nullptr;
void onSignal(int) {
  if (theAgent)
    theAgent->stop();
}

// --endpoints, --node, --lease-ttl: checked here, acted on by cluster/agent. Null without --endpoints.
std::unique_ptr<cluster::ClusterAgent> clusterAgent(exec::Logger &log, DiagnosticEngine &diags, bool &bad) {
  bad = false;
  tools::takeOldSpelling(ClusterEndpoints, ClusterEndpointsOld, diags);
  if (ClusterEndpoints.empty()) {
    if (!NodeName.empty() || LeaseTtl.getNumOccurrences() || AdvertiseAddress.getNumOccurrences() ||
        HealthRoot.getNumOccurrences() || HealthInterval.getNumOccurrences()) {
      diags.report(DiagCode::ERR_DRV_005)
          << "--node, --lease-ttl, --advertise-address, --health-root and --health-interval go with --endpoints H:P,...";
      bad = true;
    }
    return nullptr;
  }
  if (NodeName.empty()) {
    diags.report(DiagCode::ERR_DRV_005) << "--endpoints needs --node NAME (the node's name in the cluster)";
    bad = true;
    return nullptr;
  }
  if (AdvertiseAddress.getNumOccurrences() && !cluster::validNodeAddress(AdvertiseAddress)) {
    diags.report(DiagCode::ERR_DRV_005) << "--advertise-address '" + AdvertiseAddress +
                                               "': a host name or an IP address, without blanks";
    bad = true;
    return nullptr;
  }
  // etcd grants leases in whole seconds.
  std::optional<uint64_t> ttlNs = tools::durationOption("lease-ttl", LeaseTtl, diags);
  if (!ttlNs) {
    bad = true;
    return nullptr;
  }
  if (*ttlNs % 1'000'000'000 || *ttlNs < 1'000'000'000 || *ttlNs > 3600'000'000'000) {
    diags.report(DiagCode::ERR_DRV_005) << "--lease-ttl '" + LeaseTtl + "': whole seconds from 1s to 3600s, e.g. 5s";
    bad = true;
    return nullptr;
  }
  std::optional<uint64_t> healthNs = tools::durationOption("health-interval", HealthInterval, diags);
  if (!healthNs) {
    bad = true;
    return nullptr;
  }
  if (*healthNs < 100'000'000) {
    diags.report(DiagCode::ERR_DRV_005) << "--health-interval '" + HealthInterval + "': at least 100ms";
    bad = true;
    return nullptr;
  }
  cluster::ClusterAgentOptions options{ClusterEndpoints, NodeName, Topology,
                                       static_cast<int64_t>(*ttlNs / 1'000'000'000), AdvertiseAddress};
  options.healthRoot = HealthRoot;
  options.healthInterval = std::chrono::nanoseconds(*healthNs);
  return std::make_unique<cluster::ClusterAgent>(options, log);
}

int serve(exec::Logger &log) {
  exec::LogDiagnosticPrinter printer(log);
  DiagnosticEngine diags(nullptr, printer);
  if (Socket.empty()) {
    diags.report(DiagCode::ERR_DRV_005) << "serve needs --socket PATH";
    return 2;
  }
  bool bad = false;
  // Declared before the agent, so destroyed after it: the agent releases its contracts (kills the
  // workers) first, then the lease is revoked; the node never leaves the cluster with a worker running.
  std::unique_ptr<cluster::ClusterAgent> cluster = clusterAgent(log, diags, bad);
  if (bad)
    return 2;
  exec::AgentOptions options;
  options.socketPath = Socket;
  options.http = Metrics;
  options.topology = Topology;
  if (cluster)
    options.nodeName = NodeName;
  if (!Config.empty()) {
    std::optional<exec::NodeConfig> c = exec::readNodeConfig(Config, diags);
    if (!c)
      return 1;
    options.config = *c;
  }
  std::string error;
  if (LogFile.empty() && !options.config.logFile.empty() && !log.openFile(options.config.logFile, error)) {
    diags.report(DiagCode::ERR_DRV_004) << options.config.logFile << error;
    return 2;
  }
  options.appliers.cgroups = exec::CgroupLayout::discover();
  options.appliers.nvmeScheduler = options.config.nvmeScheduler;
  options.appliers.hugepageAutoAllocate = options.config.hugepageAutoAllocate;
  exec::Agent agent(options, log);
  if (!agent.start(diags))
    return 1;
  // Signals are handled before the node joins the cluster: a SIGTERM right after the registration
  // must still stop the workers and revoke the lease, not kill the agent with both left behind.
  theAgent = &agent;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  if (cluster) {
    cluster->setWake([&agent] { agent.wake(); });
    cluster->setHttpEndpoint(agent.httpAddress());
    if (!cluster->start(agent.ledger()))
      return 1;
    agent.setTick([&] { cluster->tick(agent.ledger()); });
    agent.setContractLookup([&](const std::string &contract, agent::ClusterContract &found, agent::Diagnostic &error) {
      return cluster->answerLookup(contract, found, error);
    });
  }
  int rc = agent.serve();
  theAgent = nullptr;
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "mscale-exec " << msc::kVersion << "\n"; });
  cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni node executor\n");
  exec::Logger log("mscale-exec");
  if (!LogFile.empty()) {
    std::string error;
    if (!log.openFile(LogFile, error)) {
      llvm::errs() << "mscale-exec: error[ERR_DRV_004]: cannot write '" << LogFile << "': " << error << "\n";
      return 2;
    }
  }
  if (RunCmd) {
    if ((Command.empty() || (Command.size() == 1 && Command[0] == "--")) && !DryRun) {
      llvm::errs() << "mscale-exec: error[ERR_DRV_005]: invalid option value: run needs a worker command after '--'\n";
      return 2;
    }
    exec::RunOptions o;
    if (NprocPerNode.getNumOccurrences()) {
      unsigned n = 0;
      if (llvm::StringRef(NprocPerNode).getAsInteger(10, n) || n < 1 || n > exec::kMaxRanksPerNode) {
        llvm::errs() << "mscale-exec: error[ERR_DRV_005]: invalid option value: --nproc-per-node '" << NprocPerNode
                     << "': the number of ranks must be a whole number from 1 to " << exec::kMaxRanksPerNode << "\n";
        return 2;
      }
      o.nprocPerNode = n;
    }
    o.planPath = PlanPath;
    o.command.assign(Command.begin(), Command.end());
    if (!o.command.empty() && o.command.front() == "--")
      o.command.erase(o.command.begin());
    o.topology = Topology;
    o.configPath = Config;
    o.injectFailure = Inject;
    o.strictFingerprint = Strict;
    o.dryRun = DryRun;
    o.maxRestarts = MaxRestarts;
    o.crashLoopAfter = CrashLoopAfter;
    o.resume = Resume;
    if (!CudaCounters.empty()) {
      if (!llvm::sys::fs::is_directory(CudaCounters)) {
        llvm::errs() << "mscale-exec: error[ERR_DRV_005]: invalid option value: --cuda-counters '" << CudaCounters
                     << "' is not a directory\n";
        return 2;
      }
      llvm::SmallString<256> dir(CudaCounters);
      llvm::sys::fs::make_absolute(dir); // the worker may change directory before its first CUDA call
      o.cudaCountersDir = std::string(dir);
      if (!CudaInterposer.empty()) {
        o.cudaInterposerPath = CudaInterposer;
      } else {
        std::string exe = llvm::sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&serve));
        llvm::SmallString<256> lib(llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
        llvm::sys::path::append(lib, "lib", "libmscale_cuda_interposer.so");
        o.cudaInterposerPath = std::string(lib);
      }
    }
    return exec::runPlan(o, log);
  }
  if (ServeCmd)
    return serve(log);
  llvm::errs() << "mscale-exec: no command given; see 'mscale-exec --help'\n";
  return 2;
}

// mscale-controller: one controller of the cluster (docs/cluster.md). Run several; one leads.
//   mscale-controller run --endpoints H:P,... --name NAME [--listen HOST:PORT] [--lease-ttl 2s] [--stdlib DIR]
//   mscale-controller leader --endpoints H:P,...      prints "NAME LEADER-REVISION ADDRESS"
// The endpoints default to $ETCD_ENDPOINTS. Contracts are submitted with `mscale-cli cluster submit`,
// which calls the leader's service (the address it proclaims in the election).
#include "cluster/controller/Controller.h"
#include "cluster/controller/ControllerService.h"
#include "cluster/etcd/Election.h"
#include "driver/Compile.h"
#include "support/DiagnosticPrinters.h"
#include "support/Version.h"
#include "tools/common/OptionSpelling.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>

using namespace llvm;

namespace {

cl::SubCommand runCmd("run", "Campaign, and lead the cluster while elected");
cl::SubCommand leaderCmd("leader", "Print the leading controller");

cl::opt<std::string> endpoints("endpoints", cl::desc("etcd members (default: $ETCD_ENDPOINTS)"),
                               cl::value_desc("host:port,..."), cl::sub(runCmd), cl::sub(leaderCmd));
cl::opt<std::string> name("name", cl::desc("This controller's name"), cl::sub(runCmd));
cl::opt<std::string> listen("listen", cl::desc("Where this controller serves the cluster's writes (port 0: any free port)"),
                            cl::value_desc("host:port"), cl::init("127.0.0.1:0"), cl::sub(runCmd));
cl::opt<std::string> leaseTtl("lease-ttl", cl::desc("The leader's lease, whole seconds (etcd's minimum is 2s)"),
                              cl::value_desc("duration"), cl::init("2s"), cl::sub(runCmd));
cl::opt<std::string> stdlibDir("stdlib", cl::desc("Standard library directory (default: the installed one)"),
                               cl::sub(runCmd));

std::atomic<bool> stopRequested{false};

int usage(const std::string &what) {
  errs() << "mscale-controller: error[ERR_DRV_005]: " << what << "\n";
  return 2;
}

std::unique_ptr<msc::etcd::EtcdClient> connect(int &status) {
  std::string list = endpoints;
  if (list.empty() && getenv("ETCD_ENDPOINTS"))
    list = getenv("ETCD_ENDPOINTS");
  auto parsed = msc::etcd::parseEndpoints(list);
  if (!parsed) {
    status = usage("--endpoints: " + parsed.status().str());
    return nullptr;
  }
  auto client = msc::etcd::EtcdClient::connect({*parsed});
  if (!client) {
    errs() << "mscale-controller: " << client.status().str() << "\n";
    status = 1;
    return nullptr;
  }
  return std::move(*client);
}

void logLine(const std::string &line) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%FT%TZ", std::gmtime(&now));
  errs() << stamp << " mscale-controller[" << name << "] " << line << "\n";
}

int run() {
  if (name.empty())
    return usage("run needs --name");
  msc::TextDiagnosticPrinter printer(errs());
  msc::DiagnosticEngine diags(nullptr, printer);
  std::optional<uint64_t> ttlNs = msc::tools::durationOption("lease-ttl", leaseTtl, diags);
  if (!ttlNs)
    return 2;
  if (*ttlNs % 1'000'000'000 || *ttlNs < 2'000'000'000 || *ttlNs > 3600'000'000'000)
    return usage("--lease-ttl '" + leaseTtl + "': whole seconds from 2s (etcd's minimum) to 3600s, e.g. 2s");
  int status = 0;
  auto client = connect(status);
  if (!client)
    return status;
  msc::cluster::ControllerOptions o;
  o.name = name;
  o.leaseTtlSeconds = static_cast<int64_t>(*ttlNs / 1'000'000'000);
  o.reconcile.stdlibDir = stdlibDir.empty() ? msc::driver::defaultStdlibDir() : std::string(stdlibDir);
  o.reconcile.compilerVersion = msc::kVersion;
  o.log = logLine;
  std::signal(SIGINT, [](int) { stopRequested = true; });
  std::signal(SIGTERM, [](int) { stopRequested = true; });
  msc::cluster::Controller controller(*client, o);
  std::string error;
  auto server = msc::cluster::ControllerServer::start(controller, *client, listen,
                                                      {o.reconcile.stdlibDir}, error);
  if (!server)
    return usage("--listen: " + error);
  controller.setServiceAddress(server->address());
  logLine("serving the cluster's writes at " + server->address());
  msc::etcd::Status s = controller.run(stopRequested);
  server.reset();
  if (!s.ok()) {
    logLine("exiting: " + s.str());
    return 1;
  }
  return 0;
}

int leader() {
  int status = 0;
  auto client = connect(status);
  if (!client)
    return status;
  auto l = client->election(msc::cluster::kControllerElection).leader();
  if (!l) {
    errs() << "mscale-controller: " << l.status().str() << "\n";
    return 1;
  }
  std::string leaderName, address;
  msc::cluster::parseElectionValue(l->value, leaderName, address);
  outs() << leaderName << " " << l->createRevision << " " << address << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscale-controller " << msc::kVersion << "\n"; });
  cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni cluster controller\n");
  if (runCmd)
    return run();
  if (leaderCmd)
    return leader();
  return usage("give a command: run or leader (--help)");
}

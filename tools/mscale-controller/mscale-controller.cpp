// mscale-controller: one controller of the cluster (docs/cluster.md). Run several; one leads.
//   mscale-controller run --endpoints H:P,... --name NAME [--lease-ttl 2] [--stdlib DIR]
//   mscale-controller submit --endpoints H:P,... contract.msc [--name CONTRACT]
//   mscale-controller leader --endpoints H:P,...
// The endpoints default to $ETCD_ENDPOINTS.
#include "cluster/controller/Controller.h"
#include "cluster/etcd/Election.h"
#include "driver/Compile.h"
#include "support/Version.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <regex>

using namespace llvm;

namespace {

cl::SubCommand runCmd("run", "Campaign, and lead the cluster while elected");
cl::SubCommand submitCmd("submit", "Submit a contract for the leader to place");
cl::SubCommand leaderCmd("leader", "Print the leading controller");

cl::opt<std::string> endpoints("endpoints", cl::desc("etcd members (default: $ETCD_ENDPOINTS)"),
                               cl::value_desc("host:port,..."), cl::sub(runCmd), cl::sub(submitCmd), cl::sub(leaderCmd));
cl::opt<std::string> name("name", cl::desc("run: this controller's name; submit: the contract (default: the file's only contract)"),
                          cl::sub(runCmd), cl::sub(submitCmd));
cl::opt<unsigned> leaseTtl("lease-ttl", cl::desc("Seconds of the leader's lease (etcd's minimum is 2)"), cl::init(2),
                           cl::sub(runCmd));
cl::opt<std::string> stdlibDir("stdlib", cl::desc("Standard library directory (default: the installed one)"),
                               cl::sub(runCmd));
cl::opt<std::string> contractFile(cl::Positional, cl::desc("<contract.msc>"), cl::sub(submitCmd));

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
  int status = 0;
  auto client = connect(status);
  if (!client)
    return status;
  SmallString<128> scratch;
  if (std::error_code ec = sys::fs::createUniqueDirectory("mscale-controller", scratch))
    return usage("cannot create a scratch directory: " + ec.message());
  msc::cluster::ControllerOptions o;
  o.name = name;
  o.leaseTtlSeconds = leaseTtl;
  o.reconcile = {stdlibDir.empty() ? msc::driver::defaultStdlibDir() : std::string(stdlibDir), msc::kVersion,
                 std::string(scratch)};
  o.log = logLine;
  std::signal(SIGINT, [](int) { stopRequested = true; });
  std::signal(SIGTERM, [](int) { stopRequested = true; });
  msc::cluster::Controller controller(*client, o);
  msc::etcd::Status s = controller.run(stopRequested);
  sys::fs::remove_directories(scratch);
  if (!s.ok()) {
    logLine("exiting: " + s.str());
    return 1;
  }
  return 0;
}

int submit() {
  auto buffer = MemoryBuffer::getFile(contractFile);
  if (!buffer) {
    errs() << "mscale-controller: error[ERR_DRV_001]: cannot read '" << contractFile << "': "
           << buffer.getError().message() << "\n";
    return 2;
  }
  std::string source = (*buffer)->getBuffer().str();
  std::string contract = name;
  if (contract.empty()) { // the file's one contract: the leader compiles it; here only its name is needed
    static const std::regex decl(R"((^|\n)\s*contract\s+([A-Za-z_][A-Za-z0-9_]*))");
    auto first = std::sregex_iterator(source.begin(), source.end(), decl);
    if (first == std::sregex_iterator() || std::next(first) != std::sregex_iterator())
      return usage("'" + contractFile + "' must hold exactly one contract, or name it with --name");
    contract = (*first)[2];
  }
  int status = 0;
  auto client = connect(status);
  if (!client)
    return status;
  auto put = client->put(std::string(msc::cluster::kContractsPrefix) + contract, source);
  if (!put) {
    errs() << "mscale-controller: " << put.status().str() << "\n";
    return 1;
  }
  outs() << "submitted contract '" << contract << "' at revision " << *put << "\n";
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
  outs() << l->value << " " << l->createRevision << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscale-controller " << msc::kVersion << "\n"; });
  cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni cluster controller\n");
  if (runCmd)
    return run();
  if (submitCmd)
    return submit();
  if (leaderCmd)
    return leader();
  return usage("give a command: run, submit or leader (--help)");
}

// mscale-deploy: publish the cluster config (docs/deploy.md).
//   mscale-deploy --config cluster-config.yaml --nodes node1,node2 [--endpoints H:P,...]
//                 [--timeout-ms 15000] [--controller HOST:PORT]
// Checks the config and the nodes, publishes it through the leading controller, and prints each
// node's PCIe domains with the reserved ones marked (cluster/deploy/Deploy.h). The endpoints default
// to $ETCD_ENDPOINTS. Exit status: 0 published, 1 the config or the nodes have errors (or the leader
// refused), 2 usage or I/O.
#include "cluster/deploy/Deploy.h"
#include "support/Version.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

using namespace llvm;

namespace {

cl::opt<std::string> configFile("config", cl::desc("The cluster config (YAML)"), cl::value_desc("file"));
cl::opt<std::string> nodeList("nodes", cl::desc("The nodes deployed to; each must be registered"),
                              cl::value_desc("node,..."));
cl::opt<std::string> endpoints("endpoints", cl::desc("etcd members (default: $ETCD_ENDPOINTS)"),
                               cl::value_desc("host:port,..."));
cl::opt<unsigned> timeoutMs("timeout-ms", cl::desc("How long to look for a leading controller"), cl::init(15000));
cl::opt<std::string> controller("controller", cl::desc("Call this controller only, without following the leadership"),
                                cl::value_desc("host:port"));

int usage(const std::string &what) {
  errs() << "mscale-deploy: error[ERR_DRV_005]: invalid option value: " << what << "\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscale-deploy " << msc::kVersion << "\n"; });
  cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni: publish the cluster config\n");
  if (configFile.empty())
    return usage("--config FILE is required");
  msc::cluster::DeployRequest request;
  SmallVector<StringRef, 16> names;
  StringRef(nodeList).split(names, ',', -1, /*KeepEmpty=*/false);
  for (StringRef n : names) {
    if (std::find(request.nodes.begin(), request.nodes.end(), n.trim()) != request.nodes.end())
      return usage("--nodes lists '" + n.trim().str() + "' twice");
    request.nodes.push_back(n.trim().str());
  }
  if (request.nodes.empty())
    return usage("--nodes node,... is required (the nodes the config is deployed to)");
  auto buffer = MemoryBuffer::getFile(configFile, /*IsText=*/true);
  if (!buffer) {
    errs() << "mscale-deploy: error[ERR_DRV_001]: cannot read '" << configFile << "': " << buffer.getError().message()
           << "\n";
    return 2;
  }
  request.file = configFile;
  request.text = (*buffer)->getBuffer().str();
  request.write = {std::chrono::milliseconds(timeoutMs), controller};

  std::string list = endpoints;
  if (list.empty() && std::getenv("ETCD_ENDPOINTS"))
    list = std::getenv("ETCD_ENDPOINTS");
  auto parsed = msc::etcd::parseEndpoints(list);
  if (!parsed)
    return usage("--endpoints: " + parsed.status().str());
  auto client = msc::etcd::EtcdClient::connect({*parsed});
  if (!client) {
    errs() << "mscale-deploy: " << client.status().str() << "\n";
    return 1;
  }
  return msc::cluster::deployConfig(**client, request, outs(), errs());
}

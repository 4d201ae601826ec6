// mscale-deploy (docs/deploy.md): a cluster config checked against the nodes it is deployed to,
// then published through the leading controller, then the nodes shown as the config now sees them.
#pragma once

#include "cluster/controller/client/ControllerClient.h"
#include "cluster/etcd/EtcdClient.h"

#include <llvm/Support/raw_ostream.h>

#include <string>
#include <vector>

namespace msc::cluster {

struct DeployRequest {
  std::string file;               // the config's file name, as errors print it
  std::string text;               // its contents
  std::vector<std::string> nodes; // the nodes deployed to (at least one, each once)
  WriteOptions write;
};

// Checks, in this order, and stops before publishing at the first step that finds errors (every
// error of that step is printed to `err`): the config reads (ERR_CLUSTER_010); every node of the
// request and every node a reservation names is registered (ERR_CLUSTER_011) with a registration
// that reads (ERR_CLUSTER_012); every reserved domain exists on the nodes it applies to, the nodes
// of the request for "*" (ERR_CLUSTER_013, at the entry in the file). Then publishes (a refusal or no
// leader: the client's code) and prints to `out` what was published and each node's domains.
// Returns the exit status: 0 published, 1 refused.
int deployConfig(etcd::EtcdClient &client, const DeployRequest &request, llvm::raw_ostream &out,
                 llvm::raw_ostream &err);

} // namespace msc::cluster

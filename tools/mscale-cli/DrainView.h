// `mscale-cli cluster drain NODE`: after the leader accepted the drain, waits like `kubectl drain`
// until every job it moves has left the node, printing each move as the cluster's state shows it
// (a serializable read of /mscale/ every quarter second: the controllers are not asked).
#pragma once

#include "cluster/controller/client/ControllerClient.h"
#include "cluster/etcd/EtcdClient.h"

#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <string>

namespace msc::cli {

// 0 once the jobs of `drain` are placed elsewhere (or withdrawn); 1 when the drain timed out, was
// ended (the node uncordoned) or `wait` passed first, said as ERR_CLUSTER_024 with what is still there.
int waitForDrain(etcd::EtcdClient &client, const std::string &node, const cluster::DrainOutcome &drain,
                 std::chrono::milliseconds wait, llvm::raw_ostream &os);

} // namespace msc::cli

// The client side of the cluster's writes (ControllerService.h): finds the leading controller
// through etcd's election (its value carries the leader's address), calls it, and follows the
// leadership when it moves: a standby's ERR_CLUSTER_008, a deposed leader's ERR_CLUSTER_001, an
// unreachable address or no leader at all are retried, at the leader found anew, until the deadline
// (then ERR_CLUSTER_009 with the last reason). Any other refusal is final and returned as is.
#pragma once

#include "cluster/etcd/EtcdClient.h"
#include "cluster/keys/Keys.h"

#include <cstdint>
#include <string>
#include <vector>

namespace msc::cluster {

struct WriteOutcome {
  int64_t revision = 0;       // the store's revision with the write in it
  int64_t leaderRevision = 0; // the fencing token of the leader that wrote it
  std::string leader;         // the controller that did, "NAME at ADDRESS"
  bool unchanged = false;     // Submit: the same submission was already in place; Cordon: the same
                              // cordon was; Uncordon: the node was not cordoned; Drain: the node
                              // was being drained already
};

struct WriteOptions {
  etcd::Milliseconds deadline{15000};
  // Call this controller ("host:port") once, without looking for the leader or following it: its own
  // answer, ERR_CLUSTER_008 included (for operators and tests).
  std::string controller;
};

// `Status::message` of a final refusal is the leader's whole text (the coded error, then the
// compiler's diagnostics when the contract did not compile).
etcd::Result<WriteOutcome> submitContract(etcd::EtcdClient &etcd, const Submission &submission,
                                          const WriteOptions &options);
etcd::Result<WriteOutcome> withdrawContract(etcd::EtcdClient &etcd, const std::string &contract,
                                            const WriteOptions &options);
// Publishes the cluster config `yaml` (read from `file`, named in errors) to /mscale/config. The
// leader checks it again: a config it cannot read is ERR_CLUSTER_010 with the errors as printed.
// WriteOutcome::unchanged: the same config was already published.
// Cordons `node` (it takes no new placement; what runs there stays) for `reason`: ERR_CLUSTER_017
// for a node that is not registered, a name that cannot be one or an empty reason.
etcd::Result<WriteOutcome> cordonNode(etcd::EtcdClient &etcd, const std::string &node, const std::string &reason,
                                      const WriteOptions &options);
// Lifts the cordon of `node`: ERR_CLUSTER_018 for a node neither registered nor cordoned.
etcd::Result<WriteOutcome> uncordonNode(etcd::EtcdClient &etcd, const std::string &node, const WriteOptions &options);
// Drains `node`: cordons it and has the leader move every job there to other nodes at a snapshot
// boundary, replaying no step, by `deadline` from now (Drain.h). ERR_CLUSTER_020 for a node that is
// not registered, a deadline not from 1 ms to 7 days, or (without `force`) a job there that cannot
// be placed whole elsewhere. WriteOutcome::revision is the drain's id; unchanged: drained already.
struct DrainOutcome {
  WriteOutcome write;
  std::vector<std::string> jobs; // the jobs it moves
};
etcd::Result<DrainOutcome> drainNode(etcd::EtcdClient &etcd, const std::string &node, etcd::Milliseconds deadline,
                                     bool force, const WriteOptions &options);
etcd::Result<WriteOutcome> configureCluster(etcd::EtcdClient &etcd, const std::string &yaml, const std::string &file,
                                            const WriteOptions &options);

} // namespace msc::cluster

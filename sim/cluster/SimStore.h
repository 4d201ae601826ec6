// The store a cluster in virtual time runs on: etcd's data model (keys with create and mod
// revisions and versions, leases, transactions with compares) held in memory, so that the leading
// controller's own read, decide and fenced-commit code (cluster/controller/Reconcile.h) runs against
// it unchanged. One writer at a time and no watches: the harness calls the controller itself when
// something changed. It is the `sim` store beside the real one, not a model of etcd's timing.
#pragma once

#include "cluster/etcd/EtcdClient.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace msc::sim {

class SimStore {
public:
  int64_t revision() const { return revision_; }

  void put(const std::string &key, std::string value, int64_t lease = 0);
  void erase(const std::string &key);
  const etcd::KeyValue *get(const std::string &key) const;
  // Every key under `prefix`, in key order, as a linearizable range read returns them.
  std::vector<etcd::KeyValue> range(const std::string &prefix) const;

  // A lease and the keys attached to it; revoking it (its TTL ran out) deletes them in one revision.
  int64_t grantLease();
  void revokeLease(int64_t lease);

  // etcd's transaction: every compare holds, then `success` is applied at one new revision; else
  // `failure`. A compare on a key that is absent sees revisions and version 0 and no value.
  etcd::Result<etcd::TxnResult> txn(const etcd::Txn &txn);

private:
  bool holds(const etcd::Compare &c) const;
  void apply(const etcd::TxnOp &op);

  std::map<std::string, etcd::KeyValue> keys_;
  std::map<int64_t, std::set<std::string>> leases_;
  int64_t revision_ = 1;
  int64_t nextLease_ = 0x1000;
};

} // namespace msc::sim

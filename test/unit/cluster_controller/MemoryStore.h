// The keys under /mscale/ as an etcd store holds them, each with the revision it was last written
// at (a drain's id is its record's mod revision, so it must not move when other keys are written),
// read into a ClusterState as the leader reads it. The keys an agent writes (its registration, its
// lending record) are under its lease unless the test writes them by hand (`unleased`).
#pragma once

#include "cluster/controller/ClusterState.h"
#include "cluster/keys/Keys.h"

#include <llvm/ADT/StringRef.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace msc::test {

using cluster::ClusterState;
using cluster::ReconcileMemory;

struct MemoryStore {
  struct Value {
    std::string value;
    int64_t modRevision = 0;
  };
  std::map<std::string, Value> keys;
  std::set<std::string> unleased;
  int64_t revision = 40;
  int64_t put(const std::string &key, const std::string &value) {
    keys[key] = {value, ++revision};
    return revision;
  }
  void remove(const std::string &key) {
    if (keys.erase(key))
      ++revision;
  }
  ClusterState read(ReconcileMemory &memory) const {
    std::vector<etcd::KeyValue> kvs;
    for (const auto &[k, v] : keys) {
      etcd::KeyValue kv;
      kv.key = k;
      kv.value = v.value;
      kv.modRevision = v.modRevision;
      bool agents = llvm::StringRef(k).starts_with(cluster::kNodesPrefix) || llvm::StringRef(k).starts_with(cluster::kLendingPrefix);
      kv.lease = agents && !unleased.count(k) ? 0x51 : 0;
      kvs.push_back(kv);
    }
    return cluster::clusterStateFrom(kvs, revision, memory);
  }
};

} // namespace msc::test

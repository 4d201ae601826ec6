#include "sim/cluster/SimStore.h"

#include <llvm/ADT/StringRef.h>

namespace msc::sim {

void SimStore::put(const std::string &key, std::string value, int64_t lease) {
  ++revision_;
  apply(etcd::TxnOp::put(key, std::move(value), lease));
}

void SimStore::erase(const std::string &key) {
  ++revision_;
  apply(etcd::TxnOp::remove(key));
}

const etcd::KeyValue *SimStore::get(const std::string &key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

std::vector<etcd::KeyValue> SimStore::range(const std::string &prefix) const {
  std::vector<etcd::KeyValue> out;
  for (auto it = keys_.lower_bound(prefix); it != keys_.end() && llvm::StringRef(it->first).starts_with(prefix); ++it)
    out.push_back(it->second);
  return out;
}

int64_t SimStore::grantLease() {
  int64_t id = nextLease_++;
  leases_[id];
  return id;
}

void SimStore::revokeLease(int64_t lease) {
  auto it = leases_.find(lease);
  if (it == leases_.end())
    return;
  ++revision_;
  for (const std::string &key : it->second)
    keys_.erase(key);
  leases_.erase(it);
}

bool SimStore::holds(const etcd::Compare &c) const {
  const etcd::KeyValue *kv = get(c.key);
  auto compare = [&](auto have, auto want) {
    switch (c.op) {
    case etcd::Compare::Op::Equal: return have == want;
    case etcd::Compare::Op::NotEqual: return have != want;
    case etcd::Compare::Op::Greater: return have > want;
    case etcd::Compare::Op::Less: return have < want;
    }
    return false;
  };
  switch (c.target) {
  case etcd::Compare::Target::CreateRevision: return compare(kv ? kv->createRevision : 0, c.number);
  case etcd::Compare::Target::ModRevision: return compare(kv ? kv->modRevision : 0, c.number);
  case etcd::Compare::Target::Version: return compare(kv ? kv->version : 0, c.number);
  case etcd::Compare::Target::Value: return kv && compare(kv->value, c.value); // etcd: an absent key fails it
  }
  return false;
}

etcd::Result<etcd::TxnResult> SimStore::txn(const etcd::Txn &txn) {
  bool succeeded = true;
  for (const etcd::Compare &c : txn.compares)
    succeeded = succeeded && holds(c);
  const std::vector<etcd::TxnOp> &ops = succeeded ? txn.success : txn.failure;
  if (!ops.empty())
    ++revision_;
  for (const etcd::TxnOp &op : ops)
    apply(op);
  return etcd::TxnResult{succeeded, revision_};
}

void SimStore::apply(const etcd::TxnOp &op) {
  if (op.kind == etcd::TxnOp::Kind::Delete) {
    auto first = keys_.lower_bound(op.key);
    auto last = op.rangeEnd.empty()                  ? (first != keys_.end() && first->first == op.key ? std::next(first) : first)
                : op.rangeEnd == std::string(1, '\0') ? keys_.end() // etcd: "\0" ends at the last key
                                                       : keys_.lower_bound(op.rangeEnd);
    for (auto it = first; it != last; ++it)
      if (it->second.lease)
        leases_[it->second.lease].erase(it->first);
    keys_.erase(first, last);
    return;
  }
  etcd::KeyValue &kv = keys_[op.key];
  if (kv.lease && kv.lease != op.lease)
    leases_[kv.lease].erase(op.key);
  if (kv.createRevision == 0)
    kv.createRevision = revision_, kv.key = op.key;
  kv.modRevision = revision_;
  ++kv.version;
  kv.value = op.value;
  kv.lease = op.lease;
  if (op.lease)
    leases_[op.lease].insert(op.key);
}

} // namespace msc::sim

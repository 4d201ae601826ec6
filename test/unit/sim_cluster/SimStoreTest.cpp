// The simulated store keeps etcd's data model: revisions move once per write or transaction, a
// transaction's compares see absent keys as revision 0, leases take their keys with them.
#include "sim/cluster/SimStore.h"

#include <gtest/gtest.h>

namespace msc::sim {
namespace {

TEST(SimStoreTest, RevisionsMoveOncePerWriteAndKeysKeepTheirCreateRevision) {
  SimStore store;
  int64_t r0 = store.revision();
  store.put("/a", "1");
  store.put("/a", "2");
  const etcd::KeyValue *a = store.get("/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->createRevision, r0 + 1);
  EXPECT_EQ(a->modRevision, r0 + 2);
  EXPECT_EQ(a->version, 2);
  EXPECT_EQ(a->value, "2");
  store.erase("/a");
  EXPECT_EQ(store.get("/a"), nullptr);
  EXPECT_EQ(store.revision(), r0 + 3);
}

TEST(SimStoreTest, ATransactionAppliesItsBranchAtOneRevision) {
  SimStore store;
  store.put("/k", "v");
  int64_t modRev = store.get("/k")->modRevision;
  etcd::Txn txn;
  txn.compares.push_back(etcd::Compare::onModRevision("/k", etcd::Compare::Op::Equal, modRev));
  txn.compares.push_back(etcd::Compare::absent("/new"));
  txn.success = {etcd::TxnOp::put("/new", "x"), etcd::TxnOp::remove("/k")};
  txn.failure = {etcd::TxnOp::put("/lost", "y")};
  auto done = store.txn(txn);
  ASSERT_TRUE(done);
  EXPECT_TRUE(done->succeeded);
  EXPECT_EQ(store.get("/new")->modRevision, done->revision);
  EXPECT_EQ(store.get("/k"), nullptr);
  // The same compares fail now: /k is gone (revision 0) and /new exists.
  auto again = store.txn(txn);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->succeeded);
  EXPECT_NE(store.get("/lost"), nullptr);

  etcd::Txn onValue;
  onValue.compares.push_back(etcd::Compare::onValue("/absent", etcd::Compare::Op::NotEqual, "x"));
  onValue.success = {etcd::TxnOp::put("/never", "1")};
  EXPECT_FALSE(store.txn(onValue)->succeeded); // etcd: a value compare on an absent key fails
}

TEST(SimStoreTest, ARangeReadsAPrefixInKeyOrderAndARangeDeleteTakesIt) {
  SimStore store;
  for (const char *k : {"/p/b", "/p/a", "/q", "/p/c"})
    store.put(k, k);
  std::vector<etcd::KeyValue> p = store.range("/p/");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].key, "/p/a");
  EXPECT_EQ(p[2].key, "/p/c");
  etcd::Txn txn;
  txn.success = {etcd::TxnOp::remove("/p/", etcd::prefixEnd("/p/"))};
  ASSERT_TRUE(store.txn(txn)->succeeded);
  EXPECT_TRUE(store.range("/p/").empty());
  EXPECT_NE(store.get("/q"), nullptr);
}

TEST(SimStoreTest, ARevokedLeaseTakesItsKeysInOneRevision) {
  SimStore store;
  int64_t lease = store.grantLease();
  store.put("/nodes/a", "reg", lease);
  store.put("/status/a/job", "s", lease);
  store.put("/faults/a", "history");
  int64_t before = store.revision();
  store.revokeLease(lease);
  EXPECT_EQ(store.revision(), before + 1);
  EXPECT_EQ(store.get("/nodes/a"), nullptr);
  EXPECT_EQ(store.get("/status/a/job"), nullptr);
  EXPECT_NE(store.get("/faults/a"), nullptr);
  // A key moved to no lease stays when the lease it had goes.
  int64_t second = store.grantLease();
  store.put("/x", "1", second);
  store.put("/x", "2");
  store.revokeLease(second);
  EXPECT_NE(store.get("/x"), nullptr);
}

} // namespace
} // namespace msc::sim

// The etcd client against a real 3-member etcd: key-value calls, transactions, serializable reads
// from a follower, leases and their keep-alive, watches; and the coded errors of each.
#include "EtcdTestSupport.h"

#include "cluster/etcd/Lease.h"
#include "cluster/etcd/Watch.h"

#include <thread>

namespace msc::etcd {
namespace {
using namespace std::chrono_literals;
using testing::clusterEndpoints;
using testing::connectTo;
using testing::testPrefix;

TEST(EtcdEndpoints, AnUnusableListIsCoded) {
  auto parsed = parseEndpoints("127.0.0.1");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().str(), "error[ERR_ETCD_001]: invalid etcd endpoint list '127.0.0.1': "
                                   "'127.0.0.1' is not host:port");
  EXPECT_EQ(EtcdClient::connect(ClientOptions{}).status().code, ErrorCode::ERR_ETCD_001);
  auto good = parseEndpoints("http://127.0.0.1:2379, 127.0.0.1:2380");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, (std::vector<std::string>{"127.0.0.1:2379", "127.0.0.1:2380"}));
}

TEST(EtcdEndpoints, NoMemberReachableIsCodedAndFast) {
  // Ports 1 and 2 on loopback refuse connections: the client tries both, then gives up at once.
  auto client = connectTo({"127.0.0.1:1", "127.0.0.1:2"}, 3000ms);
  auto start = std::chrono::steady_clock::now();
  auto put = client->put("k", "v");
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code, ErrorCode::ERR_ETCD_002) << put.status().str();
  EXPECT_NE(put.status().str().find("error[ERR_ETCD_002]: etcd unavailable: no endpoint of "
                                    "127.0.0.1:1,127.0.0.1:2 answered Put"),
            std::string::npos)
      << put.status().str();
  EXPECT_LT(testing::secondsSince(start), 2.5);
}

TEST(EtcdClient, PutRangeDelete) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  const std::string prefix = testPrefix();
  auto rev = client->put(prefix + "a", "1");
  ASSERT_TRUE(rev.ok()) << rev.status().str();
  ASSERT_TRUE(client->put(prefix + "b", "2").ok());
  auto one = client->range(prefix + "a");
  ASSERT_TRUE(one.ok()) << one.status().str();
  ASSERT_EQ(one->kvs.size(), 1u);
  EXPECT_EQ(one->kvs[0].value, "1");
  EXPECT_EQ(one->kvs[0].createRevision, *rev);
  auto all = client->range(prefix, RangeOptions{prefixEnd(prefix)});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->kvs.size(), 2u);
  EXPECT_EQ(all->kvs[1].key, prefix + "b");
  auto deleted = client->remove(prefix, prefixEnd(prefix));
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2);
  EXPECT_TRUE(client->range(prefix + "a")->kvs.empty());
}

TEST(EtcdClient, TxnComparesRevisionsAndValues) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  const std::string key = testPrefix() + "k";
  // Create only if absent: the first succeeds, the second runs the else branch.
  Txn create{{Compare::absent(key)}, {TxnOp::put(key, "first")}, {TxnOp::put(key + ".lost", "x")}};
  auto created = client->txn(create);
  ASSERT_TRUE(created.ok()) << created.status().str();
  EXPECT_TRUE(created->succeeded);
  auto again = client->txn(create);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->succeeded);
  EXPECT_EQ(client->range(key)->kvs[0].value, "first");
  EXPECT_EQ(client->range(key + ".lost")->kvs.size(), 1u);
  // Compare-and-swap on the mod revision: a stale revision loses.
  const int64_t modRevision = client->range(key)->kvs[0].modRevision;
  auto swapped = client->txn(
      Txn{{Compare::onModRevision(key, Compare::Op::Equal, modRevision)}, {TxnOp::put(key, "second")}, {}});
  ASSERT_TRUE(swapped.ok());
  EXPECT_TRUE(swapped->succeeded);
  auto stale = client->txn(
      Txn{{Compare::onModRevision(key, Compare::Op::Equal, modRevision)}, {TxnOp::put(key, "third")}, {}});
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->succeeded);
  auto byValue = client->txn(
      Txn{{Compare::onValue(key, Compare::Op::Equal, "second")}, {TxnOp::remove(key)}, {}});
  ASSERT_TRUE(byValue.ok());
  EXPECT_TRUE(byValue->succeeded);
  EXPECT_TRUE(client->range(key)->kvs.empty());
}

TEST(EtcdClient, ARejectedRequestIsCoded) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  auto put = client->put(testPrefix() + "k", "v", /*lease=*/0x7fff0000dead);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().str(), "error[ERR_ETCD_005]: etcd rejected Put: etcdserver: requested lease not found");
}

TEST(EtcdClient, SerializableReadFromAFollower) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  const int leader = testing::raftLeader(*client);
  ASSERT_GE(leader, 0);
  const std::string follower = testing::memberEndpoint((leader + 1) % 3);
  auto followerOnly = connectTo({follower});
  auto status = followerOnly->memberStatus(follower);
  ASSERT_TRUE(status.ok()) << status.status().str();
  EXPECT_FALSE(status->isLeader());

  const std::string key = testPrefix() + "k";
  auto rev = client->put(key, "v");
  ASSERT_TRUE(rev.ok());
  // A serializable read is the follower's own copy: it may trail by a moment, never by much.
  RangeOptions serializable;
  serializable.consistency = Consistency::Serializable;
  Result<RangeResult> read = RangeResult{};
  for (int i = 0; i < 50; ++i) {
    read = followerOnly->range(key, serializable);
    ASSERT_TRUE(read.ok()) << read.status().str();
    if (read->revision >= *rev)
      break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(read->kvs.size(), 1u);
  EXPECT_EQ(read->kvs[0].value, "v");
}

TEST(EtcdLease, KeysGoWhenTheKeepAliveStops) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  auto lease = client->grantLease(2);
  ASSERT_TRUE(lease.ok()) << lease.status().str();
  EXPECT_EQ(lease->ttlSeconds, 2);
  auto keepAlive = client->keepAlive(*lease);
  ASSERT_TRUE(keepAlive->waitRenewed(3000ms));
  const std::string key = testPrefix() + "registration";
  ASSERT_TRUE(client->put(key, "node-1", lease->id).ok());
  // Kept alive past its TTL: the key stays.
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(client->range(key)->kvs.size(), 1u);
  EXPECT_FALSE(keepAlive->lost());

  keepAlive->stop();
  auto stopped = std::chrono::steady_clock::now();
  while (!client->range(key)->kvs.empty() && testing::secondsSince(stopped) < 6)
    std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(client->range(key)->kvs.empty()) << "the key outlived its lease";
  EXPECT_LT(testing::secondsSince(stopped), 4.0);
  auto ttl = client->leaseTimeToLive(lease->id);
  ASSERT_FALSE(ttl.ok());
  EXPECT_EQ(ttl.status().code, ErrorCode::ERR_ETCD_006) << ttl.status().str();
}

TEST(EtcdLease, TheKeepAliveReportsARevokedLease) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  auto lease = client->grantLease(5);
  ASSERT_TRUE(lease.ok());
  auto keepAlive = client->keepAlive(*lease);
  ASSERT_TRUE(keepAlive->waitRenewed(3000ms));
  Status reported;
  std::mutex reportedMutex;
  keepAlive->onLost([&](const Status &status) {
    std::lock_guard lock(reportedMutex);
    reported = status;
  });
  ASSERT_TRUE(client->revokeLease(lease->id).ok());
  ASSERT_TRUE(keepAlive->waitLost(4000ms));
  EXPECT_EQ(keepAlive->lostStatus().str(),
            "error[ERR_ETCD_006]: etcd lease " + std::to_string(lease->id) +
                " lost: etcd says it expired or was revoked");
  std::lock_guard lock(reportedMutex);
  EXPECT_EQ(reported.code, ErrorCode::ERR_ETCD_006);
}

TEST(EtcdWatch, SeesPutsAndDeletesInOrder) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  const std::string prefix = testPrefix();
  WatchOptions withPrevious;
  withPrevious.rangeEnd = prefixEnd(prefix);
  withPrevious.prevKv = true;
  auto watch = client->watch(prefix, withPrevious);
  ASSERT_TRUE(watch.ok()) << watch.status().str();
  ASSERT_TRUE(client->put(prefix + "job", "queued").ok());
  ASSERT_TRUE(client->put(prefix + "job", "running").ok());
  ASSERT_TRUE(client->remove(prefix + "job").ok());
  std::vector<WatchEvent> events;
  auto start = std::chrono::steady_clock::now();
  while (events.size() < 3 && testing::secondsSince(start) < 5) {
    auto batch = (*watch)->next(1000ms);
    ASSERT_TRUE(batch.ok()) << batch.status().str();
    events.insert(events.end(), batch->begin(), batch->end());
  }
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::Put);
  EXPECT_EQ(events[0].kv.value, "queued");
  EXPECT_EQ(events[1].kv.value, "running");
  EXPECT_EQ(events[1].prevKv.value, "queued");
  EXPECT_EQ(events[2].type, WatchEvent::Type::Delete);
  EXPECT_EQ(events[2].kv.key, prefix + "job");
  (*watch)->cancel();
  auto after = (*watch)->next(100ms);
  EXPECT_FALSE(after.ok());
}

TEST(EtcdWatch, OnChangeIsCalledWhenEventsAreQueued) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  const std::string prefix = testPrefix();
  std::mutex mutex;
  std::condition_variable called;
  int calls = 0;
  WatchOptions notify;
  notify.rangeEnd = prefixEnd(prefix);
  notify.onChange = [&] {
    std::lock_guard lock(mutex);
    ++calls;
    called.notify_all();
  };
  auto watch = client->watch(prefix, notify);
  ASSERT_TRUE(watch.ok()) << watch.status().str();
  ASSERT_TRUE(client->put(prefix + "a", "1").ok());
  {
    std::unique_lock lock(mutex);
    // Told before anybody asked: a loop sleeping in poll() is woken, not left to its next timeout.
    ASSERT_TRUE(called.wait_for(lock, 5s, [&] { return calls > 0; }));
  }
  auto batch = (*watch)->next(0ms);
  ASSERT_TRUE(batch.ok()) << batch.status().str();
  ASSERT_EQ(batch->size(), 1u);
  EXPECT_EQ(batch->front().kv.key, prefix + "a");
}

TEST(EtcdWatch, FromACompactedRevisionIsCoded) {
  MSC_REQUIRE_ETCD();
  auto client = connectTo(clusterEndpoints());
  const std::string key = testPrefix() + "k";
  auto first = client->put(key, "1");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(client->put(key, "2").ok());
  auto last = client->put(key, "3");
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(client->compact(*last).ok());
  WatchOptions fromFirst;
  fromFirst.startRevision = *first;
  auto watch = client->watch(key, fromFirst);
  Status ended = watch.ok() ? (*watch)->next(3000ms).status() : watch.status();
  EXPECT_EQ(ended.str(), "error[ERR_ETCD_007]: cannot watch '" + key + "' from revision " +
                             std::to_string(*first) + ": history up to revision " + std::to_string(*last) +
                             " was compacted");
}

} // namespace
} // namespace msc::etcd

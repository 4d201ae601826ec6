// The client while etcd members die (issue 14: "an etcd member killed, then the etcd leader"). Runs
// in a cluster of its own (ctest entry cluster.etcd_failover): it SIGKILLs members.
//  1. the raft leader is killed: the two members left elect a new leader and the client, which was
//     talking to the dead one first, keeps serving reads and writes; its watch and its lease
//     keep-alive move to a live member;
//  2. one more member is killed: the last one has no quorum. With hasleader every call fails fast
//     with ERR_ETCD_004 (not at its deadline), while serializable reads are still answered.
#include "EtcdTestSupport.h"

#include "cluster/etcd/Lease.h"
#include "cluster/etcd/Watch.h"

#include <thread>

namespace msc::etcd {
namespace {
using namespace std::chrono_literals;
using testing::connectTo;

TEST(EtcdFailover, MemberThenLeaderKilled) {
  MSC_REQUIRE_ETCD();
  auto probe = connectTo(testing::clusterEndpoints());
  const int leader = testing::raftLeader(*probe);
  ASSERT_GE(leader, 0);
  // The client prefers the leader (first in its list), so losing it exercises the client's failover.
  std::vector<std::string> endpoints;
  for (int i = 0; i < 3; ++i)
    endpoints.push_back(testing::memberEndpoint(static_cast<size_t>((leader + i) % 3)));
  // A write sent while the leader dies is lost with it and waits for its deadline (etcd does not
  // answer a proposal dropped in a leader change), so a controller retries with a short deadline:
  // 1 s, the election timeout.
  auto client = connectTo(endpoints, 1000ms);
  ASSERT_TRUE(client->put("failover/before", "1").ok());
  // A watch and a lease keep-alive, both streaming from the leader, must move to another member.
  WatchOptions underPrefix;
  underPrefix.rangeEnd = prefixEnd("failover/");
  auto watch = client->watch("failover/", underPrefix);
  ASSERT_TRUE(watch.ok()) << watch.status().str();
  auto lease = client->grantLease(5);
  ASSERT_TRUE(lease.ok()) << lease.status().str();
  auto keepAlive = client->keepAlive(*lease);
  ASSERT_TRUE(keepAlive->waitRenewed(3000ms));

  testing::killMember(static_cast<size_t>(leader));
  auto killed = std::chrono::steady_clock::now();
  // Until the two left elect a leader, a put either times out (sent to the dead leader through a
  // follower) or is refused at once (ERR_ETCD_004): retry for a bounded time, not a number of times.
  Result<int64_t> put = Status{};
  while (testing::secondsSince(killed) < 10) {
    put = client->put("failover/after-leader", "2");
    if (put.ok())
      break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(put.ok()) << put.status().str();
  std::printf("writes resumed %.2f s after the etcd leader was SIGKILLed\n", testing::secondsSince(killed));
  EXPECT_LT(testing::secondsSince(killed), 6.0);
  auto read = client->range("failover/before");
  ASSERT_TRUE(read.ok()) << read.status().str();
  EXPECT_EQ(read->kvs.size(), 1u);
  // The watch resumed on a live member after the last revision it delivered: the write made
  // after the failover arrives, once.
  std::vector<WatchEvent> events;
  auto watching = std::chrono::steady_clock::now();
  while (events.empty() && testing::secondsSince(watching) < 5) {
    auto batch = (*watch)->next(500ms);
    ASSERT_TRUE(batch.ok()) << batch.status().str();
    events.insert(events.end(), batch->begin(), batch->end());
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kv.key, "failover/after-leader");
  EXPECT_EQ(events[0].kv.modRevision, *put);
  // The keep-alive renewed through another member in time: the lease (TTL 5 s) is alive.
  EXPECT_FALSE(keepAlive->lost()) << keepAlive->lostStatus().str();
  auto ttl = client->leaseTimeToLive(lease->id);
  EXPECT_TRUE(ttl.ok()) << ttl.status().str();

  // Two of three serve; now kill the new leader: the survivor is alone.
  const int newLeader = testing::raftLeader(*client);
  ASSERT_GE(newLeader, 0);
  ASSERT_NE(newLeader, leader);
  const int survivor = 3 - leader - newLeader;
  testing::killMember(static_cast<size_t>(newLeader));
  // The survivor notices after an election timeout (1 s) that it has no leader.
  const std::string survivorEndpoint = testing::memberEndpoint(static_cast<size_t>(survivor));
  auto lostAt = std::chrono::steady_clock::now();
  while (testing::secondsSince(lostAt) < 10) {
    auto status = client->memberStatus(survivorEndpoint);
    if (status && status->leaderId == 0)
      break;
    std::this_thread::sleep_for(100ms);
  }
  // A client with a long deadline: without hasleader this put would hang for all of it.
  auto patient = connectTo(endpoints, 5000ms);
  auto start = std::chrono::steady_clock::now();
  auto refused = patient->put("failover/no-quorum", "3");
  const double refusedAfter = testing::secondsSince(start);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().str(), "error[ERR_ETCD_004]: etcd member '" + survivorEndpoint +
                                        "' has no leader (quorum lost): Put refused");
  std::printf("without quorum a put was refused after %.3f s (deadline 5 s)\n", refusedAfter);
  // Well before the deadline (measured here: 0.001 to 0.8 s, most of it gRPC connecting fresh
  // channels to the two dead members first); without hasleader it would be the full 5 s.
  EXPECT_LT(refusedAfter, 2.0) << "hasleader should make the member refuse at once";

  RangeOptions serializable;
  serializable.consistency = Consistency::Serializable;
  auto stale = client->range("failover/after-leader", serializable);
  ASSERT_TRUE(stale.ok()) << stale.status().str();
  ASSERT_EQ(stale->kvs.size(), 1u);
  EXPECT_EQ(stale->kvs[0].value, "2");
}

} // namespace
} // namespace msc::etcd

// etcd's server-side election through our client, and fencing: the second campaigner takes over
// about a lease TTL (2 s) after the first one's keep-alive stops, and the deposed leader's guarded
// writes are refused (ERR_CLUSTER_001).
#include "EtcdTestSupport.h"

#include "cluster/etcd/Election.h"
#include "cluster/etcd/Fencing.h"
#include "cluster/etcd/Lease.h"

#include <chrono>
#include <future>
#include <thread>

namespace msc::etcd {
namespace {
using namespace std::chrono_literals;
using testing::clusterEndpoints;
using testing::connectTo;
using testing::testPrefix;

// A candidate as a controller would be: its own client, a 2 s lease kept alive from before the
// campaign on (the order etcd requires, see Election.h).
struct Candidate {
  std::unique_ptr<EtcdClient> client = connectTo(clusterEndpoints());
  LeaseGrant lease;
  std::unique_ptr<LeaseKeepAlive> keepAlive;

  Candidate() {
    auto granted = client->grantLease(2);
    EXPECT_TRUE(granted.ok()) << granted.status().str();
    lease = *granted;
    keepAlive = client->keepAlive(lease);
    EXPECT_TRUE(keepAlive->waitRenewed(3000ms));
  }
  Result<LeaderKey> campaign(const std::string &election, const std::string &value, Milliseconds timeout) {
    return client->election(election).campaign(*keepAlive, value, timeout);
  }
};

TEST(EtcdElection, TheSecondCampaignerWinsWhenTheFirstStopsKeepingAlive) {
  MSC_REQUIRE_ETCD();
  const std::string name = testPrefix() + "controllers";
  Candidate first, second;
  auto firstLeads = first.campaign(name, "controller-a", 5000ms);
  ASSERT_TRUE(firstLeads.ok()) << firstLeads.status().str();
  EXPECT_EQ(firstLeads->name, name);
  EXPECT_GT(firstLeads->rev, 0);
  auto observer = first.client->election(name).observe();

  auto secondCampaign = std::async(std::launch::async, [&] { return second.campaign(name, "controller-b", 15000ms); });
  EXPECT_EQ(secondCampaign.wait_for(500ms), std::future_status::timeout) << "two leaders at once";
  auto leader = second.client->election(name).leader();
  ASSERT_TRUE(leader.ok()) << leader.status().str();
  EXPECT_EQ(leader->value, "controller-a");

  // The first controller "hangs": its keep-alive stops, its lease runs out, the second takes over.
  first.keepAlive->stop();
  auto stopped = std::chrono::steady_clock::now();
  ASSERT_EQ(secondCampaign.wait_for(8s), std::future_status::ready);
  const double takeover = testing::secondsSince(stopped);
  auto secondLeads = secondCampaign.get();
  ASSERT_TRUE(secondLeads.ok()) << secondLeads.status().str();
  std::printf("takeover %.2f s after the leader's keep-alive stopped (lease TTL 2 s)\n", takeover);
  EXPECT_GT(takeover, 1.0);
  EXPECT_LT(takeover, 5.0);
  EXPECT_GT(secondLeads->rev, firstLeads->rev);
  EXPECT_EQ(second.client->election(name).leader()->value, "controller-b");

  // The observer saw both leaders, in order.
  std::vector<std::string> seen;
  for (int i = 0; i < 10 && seen.size() < 2; ++i) {
    auto next = observer->next(1000ms);
    ASSERT_TRUE(next.ok()) << next.status().str();
    if (*next)
      seen.push_back((*next)->value);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"controller-a", "controller-b"}));

  // The deposed leader can no longer speak for the election.
  Status proclaimed = first.client->election(name).proclaim(*firstLeads, "still me");
  EXPECT_EQ(proclaimed.str(), "error[ERR_ETCD_008]: not the leader of election '" + name + "': Proclaim refused");
  ASSERT_TRUE(second.client->election(name).proclaim(*secondLeads, "controller-b v2").ok());
  EXPECT_EQ(first.client->election(name).leader()->value, "controller-b v2");
}

TEST(EtcdElection, ACampaignThatWaitsPastItsDeadlineIsCodedAndWithdrawn) {
  MSC_REQUIRE_ETCD();
  const std::string name = testPrefix() + "controllers";
  Candidate first, second;
  auto firstLeads = first.campaign(name, "a", 5000ms);
  ASSERT_TRUE(firstLeads.ok()) << firstLeads.status().str();
  auto waited = second.campaign(name, "b", 500ms);
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.status().code, ErrorCode::ERR_ETCD_003) << waited.status().str();
  EXPECT_NE(waited.status().str().find("error[ERR_ETCD_003]: etcd Campaign of election '" + name +
                                       "' timed out after 500 ms"),
            std::string::npos)
      << waited.status().str();

  // After the leader resigns nobody leads: the timed-out candidacy was withdrawn. etcd withdraws it
  // on its own time (the server resigns the key when it notices the cancel, Election.h), so the
  // withdrawal is awaited, within a bound: a candidacy left standing would lead here for good.
  ASSERT_TRUE(first.client->election(name).resign(*firstLeads).ok());
  auto nobody = first.client->election(name).leader();
  for (auto until = std::chrono::steady_clock::now() + 5s; nobody.ok() && std::chrono::steady_clock::now() < until;
       nobody = first.client->election(name).leader())
    std::this_thread::sleep_for(50ms);
  ASSERT_FALSE(nobody.ok()) << "'" << nobody->value << "' leads: the timed-out candidacy was not withdrawn in 5 s";
  EXPECT_EQ(nobody.status().str(), "error[ERR_ETCD_009]: election '" + name + "' has no leader");
}

TEST(EtcdElection, NoCampaignUnderALostLease) {
  MSC_REQUIRE_ETCD();
  Candidate candidate;
  ASSERT_TRUE(candidate.client->revokeLease(candidate.lease.id).ok());
  ASSERT_TRUE(candidate.keepAlive->waitLost(4000ms));
  auto won = candidate.campaign(testPrefix() + "controllers", "a", 2000ms);
  ASSERT_FALSE(won.ok());
  EXPECT_EQ(won.status().code, ErrorCode::ERR_ETCD_006) << won.status().str();
}

TEST(EtcdFencing, ADeposedLeadersWritesAreRefused) {
  MSC_REQUIRE_ETCD();
  const std::string name = testPrefix() + "controllers";
  const std::string key = testPrefix() + "placement/job-1";
  Candidate first, second;
  auto firstLeads = first.campaign(name, "a", 5000ms);
  ASSERT_TRUE(firstLeads.ok()) << firstLeads.status().str();
  Fencing firstFence(*first.client, *firstLeads);
  auto written = firstFence.write({TxnOp::put(key, "node-1")});
  ASSERT_TRUE(written.ok()) << written.status().str();
  EXPECT_TRUE(*firstFence.stillLeader());

  // The first leader is paused past its lease (keep-alive stopped); the second is elected.
  auto secondCampaign = std::async(std::launch::async, [&] { return second.campaign(name, "b", 15000ms); });
  first.keepAlive->stop();
  auto secondLeads = secondCampaign.get();
  ASSERT_TRUE(secondLeads.ok()) << secondLeads.status().str();

  // The old leader wakes up and writes as if it still led: refused, nothing applied.
  auto stale = firstFence.write({TxnOp::put(key, "node-2")});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().str(), "error[ERR_CLUSTER_001]: write refused: leadership of '" + name +
                                      "' (leader key '" + firstLeads->key + "', create revision " +
                                      std::to_string(firstLeads->rev) + ") is no longer held");
  EXPECT_FALSE(*firstFence.stillLeader());
  // Its failure branch must not run either.
  auto staleElse = firstFence.commit(Txn{{Compare::absent(key)}, {}, {TxnOp::remove(key)}});
  EXPECT_EQ(staleElse.status().code, ErrorCode::ERR_CLUSTER_001);
  EXPECT_EQ(first.client->range(key)->kvs[0].value, "node-1");

  // The new leader's guarded writes go through, and its own compares still decide the branch.
  Fencing secondFence(*second.client, *secondLeads);
  auto moved = secondFence.commit(
      Txn{{Compare::onValue(key, Compare::Op::Equal, "node-1")}, {TxnOp::put(key, "node-3")}, {}});
  ASSERT_TRUE(moved.ok()) << moved.status().str();
  EXPECT_TRUE(moved->succeeded);
  auto unchanged = secondFence.commit(
      Txn{{Compare::onValue(key, Compare::Op::Equal, "node-1")}, {TxnOp::put(key, "node-4")}, {}});
  ASSERT_TRUE(unchanged.ok()) << unchanged.status().str();
  EXPECT_FALSE(unchanged->succeeded);
  EXPECT_EQ(second.client->range(key)->kvs[0].value, "node-3");
}

} // namespace
} // namespace msc::etcd

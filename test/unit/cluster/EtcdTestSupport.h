// What the etcd tests share: the cluster scripts/with-etcd.sh started (ETCD_ENDPOINTS,
// ETCD_CLUSTER_DIR), clients on it, and killing a member by its pid file.
#pragma once

#include "cluster/etcd/EtcdClient.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace msc::etcd::testing {

// The members' endpoints; empty when the tests do not run under scripts/with-etcd.sh.
std::vector<std::string> clusterEndpoints();
// Member N's pid (ETCD_CLUSTER_DIR/mN.pid) and endpoint.
int memberPid(size_t member);
std::string memberEndpoint(size_t member);
// SIGKILLs member N and waits until it is gone.
void killMember(size_t member);
// Index of the member that leads the raft group now (asks each live member), or -1.
int raftLeader(EtcdClient &client);

std::unique_ptr<EtcdClient> connectTo(std::vector<std::string> endpoints,
                                      Milliseconds callTimeout = Milliseconds(5000));

// A key prefix of the running test, so tests sharing a cluster never see each other's keys.
std::string testPrefix();

double secondsSince(std::chrono::steady_clock::time_point start);

// Skips the test when no cluster runs (the binary was started without scripts/with-etcd.sh).
#define MSC_REQUIRE_ETCD()                                                                          \
  do {                                                                                              \
    if (::msc::etcd::testing::clusterEndpoints().empty())                                           \
      GTEST_SKIP() << "no etcd: run through scripts/with-etcd.sh (ctest does)";                     \
  } while (false)

} // namespace msc::etcd::testing

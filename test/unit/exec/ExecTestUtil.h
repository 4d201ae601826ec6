// Shared by the executor's tests: small plans built in memory for the live node.
#pragma once

#include "hal/Loader.h"
#include "plan/plan.pb.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <unistd.h>

namespace msc::exec::test {

// Everything the peer sends until it closes.
inline std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

// `node`: the name the node goes by, when it is not the machine's own (a cluster node is named by its
// registration, and the agent re-checks plans against its topology under that name).
inline plan::Plan livePlan(const std::string &contract, bool pool, unsigned cpu = 0, const std::string &node = {}) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<hal::Topology> live = hal::loadTopology(hal::TopologySource::liveMachine(), diags);
  if (live && !node.empty())
    live->setName(node);
  plan::Plan p;
  p.set_format_major(1);
  p.mutable_provenance()->set_contract(contract);
  if (live) {
    p.mutable_provenance()->set_topology_fingerprint(live->fingerprint());
    p.mutable_provenance()->set_topology_name(live->name());
  }
  plan::IoBinding *b = p.add_io_bindings();
  b->set_role("data");
  b->add_cpus(cpu);
  b->add_physical_cores(cpu);
  b->set_numa_node(0);
  b->set_io_uring_depth(8);
  b->set_io_weight(100);
  if (pool) {
    plan::MemoryPool *m = p.add_memory_pools();
    m->set_role("data");
    m->set_page_size(2 << 20);
    m->set_pages(2);
    m->set_numa_node(0);
    m->set_reserve_pages(2);
  }
  return p;
}

inline uint64_t meminfo(const char *key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0)
      return std::stoull(line.substr(line.find(':') + 1));
  return ~0ull;
}

#define MSC_REQUIRE_ROOT()                                                                                             \
  if (geteuid() != 0)                                                                                                  \
  GTEST_SKIP() << "needs root (cgroups, hugepages)"

} // namespace msc::exec::test

// Keeping a discovered topology current (hal/LiveRefresh.h) on a recorded sysfs tree that the test
// changes the way a running node changes: hugepages reserved, a sensor warming, a CPU offlined.
#include "HalTestUtil.h"

#include "hal/LiveRefresh.h"

#include <fstream>

namespace msc::hal::test {
namespace {

// A private copy of the tree: these tests write into it.
class WritableTree {
public:
  WritableTree() {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("msc-live-refresh", dir));
    dir_ = std::string(dir);
    std::string cmd = "tar -xjf '" + fixture("sysfs/hwloc-2pa-pcidomain32bits.tar.bz2") + "' -C '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    root_ = dir_ + "/2pa-pcidomain32bits";
  }
  ~WritableTree() { llvm::sys::fs::remove_directories(dir_); }
  const std::string &root() const { return root_; }
  void write(const std::string &path, const std::string &text) const {
    std::ofstream out(root_ + path, std::ios::trunc);
    ASSERT_TRUE(out) << path;
    out << text << "\n";
  }

private:
  std::string dir_, root_;
};

const std::string kPool2M = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB";

TEST(LiveRefresh, UnchangedTreeGivesUnchanged) {
  WritableTree tree;
  auto l = loadSysfs(tree.root());
  ASSERT_TRUE(l->topo) << codes(l->consumer.diags);
  std::optional<Topology> updated;
  EXPECT_EQ(refreshLiveFacts(*l->topo, tree.root(), updated), LiveRefresh::Unchanged);
  EXPECT_FALSE(updated);
}

TEST(LiveRefresh, ChangedHugepageCountIsSeen) {
  WritableTree tree;
  auto l = loadSysfs(tree.root());
  ASSERT_TRUE(l->topo) << codes(l->consumer.diags);
  const uint64_t page = 2ull << 20;
  std::optional<uint64_t> before = l->topo->freeHugepages(0, page);
  ASSERT_TRUE(before.has_value()) << "the fixture has no free count for node 0's 2 MiB pool";

  tree.write(kPool2M + "/nr_hugepages", std::to_string(*before + 64));
  tree.write(kPool2M + "/free_hugepages", std::to_string(*before + 40));
  std::optional<Topology> updated;
  ASSERT_EQ(refreshLiveFacts(*l->topo, tree.root(), updated), LiveRefresh::Changed);
  ASSERT_TRUE(updated);
  EXPECT_EQ(updated->freeHugepages(0, page), std::optional<uint64_t>(*before + 40));
  const NumaInfo *numa = updated->numaInfo(0);
  ASSERT_NE(numa, nullptr);
  auto pool = llvm::find_if(numa->hugepages, [&](const HugepagePool &p) { return p.pageSize == page; });
  ASSERT_NE(pool, numa->hugepages.end());
  EXPECT_EQ(pool->total, *before + 64);
  // The topology it was refreshed from is left as it was (agents share it with running sessions).
  EXPECT_EQ(l->topo->freeHugepages(0, page), before);

  // What a whole discovery of the changed tree says is what the refresh says.
  auto rediscovered = loadSysfs(tree.root());
  ASSERT_TRUE(rediscovered->topo);
  EXPECT_EQ(rediscovered->topo->fingerprint(), updated->fingerprint());
  EXPECT_EQ(rediscovered->topo->freeHugepages(0, page), updated->freeHugepages(0, page));

  // And from the refreshed topology, nothing more has changed.
  std::optional<Topology> again;
  EXPECT_EQ(refreshLiveFacts(*updated, tree.root(), again), LiveRefresh::Unchanged);
}

TEST(LiveRefresh, CpuGoingOfflineAsksForADiscovery) {
  WritableTree tree;
  auto l = loadSysfs(tree.root());
  ASSERT_TRUE(l->topo);
  std::vector<unsigned> online;
  for (unsigned pu : l->topo->pus())
    if (l->topo->isPuOnline(pu))
      online.push_back(pu);
  ASSERT_GT(online.size(), 1u);
  online.pop_back();
  std::string list;
  for (unsigned pu : online)
    list += (list.empty() ? "" : ",") + std::to_string(pu);
  tree.write("/sys/devices/system/cpu/online", list);
  std::optional<Topology> updated;
  EXPECT_EQ(refreshLiveFacts(*l->topo, tree.root(), updated), LiveRefresh::Rediscover);
}

TEST(LiveRefresh, VanishedPoolAsksForADiscovery) {
  WritableTree tree;
  auto l = loadSysfs(tree.root());
  ASSERT_TRUE(l->topo);
  ASSERT_FALSE(llvm::sys::fs::remove(tree.root() + kPool2M + "/nr_hugepages"));
  std::optional<Topology> updated;
  EXPECT_EQ(refreshLiveFacts(*l->topo, tree.root(), updated), LiveRefresh::Rediscover);
}

} // namespace
} // namespace msc::hal::test

// A recorded sysfs tree of ../shared/fixtures (the Dell 32em64t: an mlx4_0 port, an NVMe controller,
// 2 MiB hugepages on two NUMA nodes) extracted into a directory of the test's own, to be changed
// at will and removed with the object: what the health tests read as a node.
#pragma once

#include "hal/Loader.h"
#include "support/Diagnostic.h"

#include <gtest/gtest.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace msc::test {

struct RecordedSysfsTree {
  std::string dir, root; // root empty: the tree could not be extracted
  explicit RecordedSysfsTree(const std::string &prefix = "msc-sysfs") {
    llvm::SmallString<128> d;
    if (llvm::sys::fs::createUniqueDirectory(prefix, d))
      return;
    dir = std::string(d);
    std::string cmd = "tar -xjf '" + std::string(MSC_SOURCE_DIR) +
                      "/../shared/fixtures/topologies/sysfs/hwloc-32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2' -C '" +
                      dir + "'";
    if (std::system(cmd.c_str()) == 0)
      root = dir + "/32em64t-2n8c+1mic";
  }
  ~RecordedSysfsTree() {
    if (!dir.empty())
      std::filesystem::remove_all(dir);
  }
  RecordedSysfsTree(const RecordedSysfsTree &) = delete;
  RecordedSysfsTree &operator=(const RecordedSysfsTree &) = delete;

  void write(const std::string &rel, const std::string &content) const {
    std::filesystem::create_directories(std::filesystem::path(root + rel).parent_path());
    std::ofstream(root + rel, std::ios::binary | std::ios::trunc) << content;
  }
  // A thermal zone whose critical trip point is 100 C, at 45 C.
  void addThermalZone() const {
    write("/sys/class/thermal/thermal_zone0/type", "x86_pkg_temp\n");
    write("/sys/class/thermal/thermal_zone0/trip_point_0_type", "critical\n");
    write("/sys/class/thermal/thermal_zone0/trip_point_0_temp", "100000\n");
    write("/sys/class/thermal/thermal_zone0/temp", "45000\n");
  }
  hal::Topology load() const {
    CollectingConsumer consumer;
    DiagnosticEngine diags(nullptr, consumer);
    std::optional<hal::Topology> t = hal::loadTopology(hal::TopologySource::sysfs(root), diags);
    EXPECT_TRUE(t.has_value());
    return t ? *t : hal::Topology{};
  }
};

} // namespace msc::test

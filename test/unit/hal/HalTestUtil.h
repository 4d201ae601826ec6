// Shared helpers for the HAL tests: fixture paths, loading with collected diagnostics, and
// extracting the recorded sysfs tarballs (they hold relative symlinks) into a temporary directory.
#pragma once

#include "hal/Loader.h"
#include "support/Diagnostic.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <cstdlib>
#include <map>
#include <string>

namespace msc::hal::test {

inline std::string fixture(const std::string &rel) {
  return std::string(MSC_SOURCE_DIR) + "/../shared/fixtures/topologies/" + rel;
}

struct Loaded {
  CollectingConsumer consumer;
  DiagnosticEngine diags{nullptr, consumer};
  std::optional<Topology> topo;
};

inline std::unique_ptr<Loaded> loadFile(const std::string &path) {
  auto l = std::make_unique<Loaded>();
  l->topo = loadTopology(TopologySource::file(path), l->diags);
  return l;
}

// Extracts sysfs/<name>.tar.bz2 once per process; returns the tree's top directory.
inline std::string extractSysfs(const std::string &tarball, const std::string &topDir) {
  static std::map<std::string, std::string> done;
  if (auto it = done.find(tarball); it != done.end())
    return it->second;
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("msc-hal-sysfs", dir))
    return "";
  std::string cmd = "tar -xjf '" + fixture("sysfs/" + tarball) + "' -C '" + std::string(dir) + "'";
  if (std::system(cmd.c_str()) != 0)
    return "";
  std::string root = std::string(dir) + "/" + topDir;
  done[tarball] = root;
  return root;
}

inline std::unique_ptr<Loaded> loadSysfs(const std::string &root) {
  auto l = std::make_unique<Loaded>();
  l->topo = loadTopology(TopologySource::sysfs(root), l->diags);
  return l;
}

inline std::string codes(const std::vector<Diagnostic> &diags) {
  std::string out;
  for (const Diagnostic &d : diags)
    out += diagInfo(d.code).name.str() + ": " + d.message + "\n";
  return out;
}

} // namespace msc::hal::test

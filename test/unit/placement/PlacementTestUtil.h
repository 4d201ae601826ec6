// Shared helpers for the placement tests: contracts from text through the driver's frontend, the
// recorded 4xA100 machines loaded once.
#pragma once

#include "cluster/placement/Placer.h"
#include "driver/Compile.h"
#include "hal/Loader.h"
#include "support/Diagnostic.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <memory>
#include <string>

namespace msc::cluster::test {

struct Diags {
  llvm::SourceMgr sm;
  CollectingConsumer consumer;
  DiagnosticEngine engine{&sm, consumer};
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : consumer.diags)
      out.push_back(diagInfo(d.code).name.str());
    return out;
  }
};

// The contract `text` (with the stdlib's profiles) as the frontend checks it; fails the test on errors.
inline ir::Contract contractOf(const std::string &text, Diags &diags) {
  static llvm::SmallString<128> dir;
  if (dir.empty()) {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("msc-placement-test", dir));
  }
  static unsigned n = 0;
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "c" + std::to_string(n++) + ".msc");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    EXPECT_FALSE(ec);
    os << text;
  }
  driver::CompileOptions options;
  options.inputs = {path.str().str()};
  options.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  std::optional<ir::Module> module = driver::loadContracts(options, diags.sm, diags.engine);
  if (!module || module->contracts.empty()) {
    ADD_FAILURE() << "contract did not compile";
    return {};
  }
  return module->contracts.front();
}

// A recorded machine, loaded once per process and shared by every node registered with it.
inline std::shared_ptr<const hal::Topology> machine(const std::string &file) {
  static std::map<std::string, std::shared_ptr<const hal::Topology>> loaded;
  auto &slot = loaded[file];
  if (!slot) {
    Diags d;
    auto topo = hal::loadTopology(
        hal::TopologySource::file(std::string(MSC_SOURCE_DIR) + "/../shared/fixtures/topologies/hwloc-xml/" + file),
        d.engine);
    if (!topo) {
      ADD_FAILURE() << "cannot load " << file;
      return nullptr;
    }
    slot = std::make_shared<const hal::Topology>(std::move(*topo));
  }
  return slot;
}

inline const char *kJwb = "psmgmt-jwb0004-juwelsbooster-4xA100.xml";
inline const char *kJrc = "psmgmt-jrc0323-jurecadc-gpu-4xA100.xml";
inline const char *kJrc0386 = "psmgmt-jrc0386-jurecadc-gpu-4xA100.v1-format.xml";

// `roles` roles of `gpu = any; rdma_port = nearest;`, a job of `nodes` nodes; `policy` is the body
// of a policy block, empty for none.
// The names of the nodes a placement chose, in its order.
inline std::vector<std::string> names(const PlacementResult &r) {
  std::vector<std::string> out;
  for (const NodePlacement &p : r.nodes)
    out.push_back(p.node->name);
  return out;
}

// `nodes` as written: "4", or "2..4" and further fields ("2..4; global_batch = 256 samples").
inline std::string jobText(const std::string &nodes, unsigned roles, const std::string &policy = "") {
  std::string text =
      "import \"profiles/mlvm.msc\";\ncontract job uses profile mlvm_light {\n  nodes = " + nodes + ";\n  io_topology {\n";
  for (unsigned r = 0; r < roles; ++r)
    text += "    r" + std::to_string(r) + " { gpu = any; rdma_port = nearest; }\n";
  text += "  }\n";
  if (!policy.empty())
    text += "  policy { " + policy + " }\n";
  return text + "}\n";
}
inline std::string jobText(unsigned nodes, unsigned roles, const std::string &policy = "") {
  return jobText(std::to_string(nodes), roles, policy);
}

} // namespace msc::cluster::test

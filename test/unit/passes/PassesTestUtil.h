// Shared helpers for the pass and lowering tests: compile a contract from memory (with the stdlib
// profiles), load a recorded fixture, run a pipeline with collected diagnostics.
#pragma once

#include "compiler/Frontend.h"
#include "hal/Loader.h"
#include "passes/PassManager.h"
#include "passes/Resolve.h"
#include "support/Diagnostic.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <string>

namespace msc::passes::test {

inline std::string fixture(const std::string &rel) {
  return std::string(MSC_SOURCE_DIR) + "/../shared/fixtures/topologies/" + rel;
}

struct Compiled {
  llvm::SourceMgr sm;
  CollectingConsumer consumer;
  DiagnosticEngine diags{&sm, consumer};
  std::optional<ir::Module> module;
  std::optional<hal::Topology> topology;

  const ir::Contract &contract() const { return module->contracts.front(); }
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : consumer.diags)
      out.push_back(diagInfo(d.code).name.str());
    return out;
  }
};

// Writes `text` to a temporary .msc and compiles it; `topologyFile` empty means no topology.
inline std::unique_ptr<Compiled> compile(const std::string &text, const std::string &topologyFile) {
  auto c = std::make_unique<Compiled>();
  // One directory per process and one file name, so that the same text compiles to the same
  // provenance (the plan records the source path) and plans can be compared byte for byte.
  static llvm::SmallString<128> dir;
  if (dir.empty() && llvm::sys::fs::createUniqueDirectory("msc-passes-test", dir))
    return c;
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "contract.msc");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return c;
    os << text;
  }
  FrontendOptions options;
  options.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  c->module = compileContractFile(path, options, c->sm, c->diags);
  llvm::sys::fs::remove(path);
  if (!topologyFile.empty())
    c->topology = hal::loadTopology(hal::TopologySource::file(topologyFile), c->diags);
  return c;
}

} // namespace msc::passes::test

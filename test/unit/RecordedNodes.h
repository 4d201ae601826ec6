// What the cluster's unit tests register as a node: a recorded machine of ../shared/fixtures as an
// agent exports it (hal::writeTopologyYaml), read once per fixture and process.
#pragma once

#include "hal/Loader.h"
#include "hal/TopologyYaml.h"
#include "support/Diagnostic.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace msc::test {

// `fixture`: a path under ../shared/fixtures/topologies/ ("hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml").
inline const std::string &recordedNodeYaml(const std::string &fixture = "hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml") {
  static std::map<std::string, std::string> yamls;
  auto [it, fresh] = yamls.try_emplace(fixture);
  if (fresh) {
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    std::optional<hal::Topology> topo = hal::loadTopology(
        hal::TopologySource::file(std::string(MSC_SOURCE_DIR) + "/../shared/fixtures/topologies/" + fixture), diags);
    EXPECT_TRUE(topo) << (sink.diags.empty() ? "" : sink.diags.front().message);
    it->second = topo ? hal::writeTopologyYaml(*topo) : std::string();
  }
  return it->second;
}

} // namespace msc::test

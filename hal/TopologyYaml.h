// The project's YAML topology format (docs/hal.md): a node description, or a cluster description
// that lists nodes. What `mscale-cli topology export --format=yaml` writes, what a person edits.
// Reading a file that the writer produced and writing it again gives the same bytes.
#pragma once

#include "hal/Topology.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>
#include <vector>

namespace msc::hal {

struct Cluster {
  std::string name;
  std::vector<Topology> nodes;
};

// A node description. A cluster description is accepted too when `node` names one of its nodes,
// or when it holds exactly one node. Errors: ERR_HAL_TOPO_004/005/006/008/010/011/012 with lines.
std::optional<Topology> readTopologyYaml(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags,
                                         llvm::StringRef node = "");
// Every node of a cluster description (a node description gives a cluster of one).
std::optional<Cluster> readClusterYaml(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags);

std::string writeTopologyYaml(const Topology &topology);
std::string writeClusterYaml(const Cluster &cluster);

} // namespace msc::hal

// The two ways readClusterYaml reads a cluster description, apart so that the tests and the fuzzer
// can check that they agree. Internal to hal/.
#pragma once

#include "hal/TopologyYaml.h"

namespace msc::hal::detail {

// Node by node (detail/NodeSequence.h): each distinct node is parsed and built once, and nodes that
// differ from it only in name share its graph. Nothing when the text is not cut or a piece does not
// read; it reports nothing, so that the whole reading says what is wrong, in its order.
std::optional<Cluster> readClusterByNode(llvm::StringRef text, llvm::StringRef fileName);

// The whole document through one YAML I/O pass, with every diagnostic.
std::optional<Cluster> readClusterWhole(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags);

} // namespace msc::hal::detail

// A Topology as bytes, exactly: every vertex with its data, every edge in the order it was added,
// the name, kernel command line, notes and NUMA distances. Unlike the YAML export (which keeps what
// a person edits and drops, e.g., PCI bridges without devices below them), decoding gives back a
// topology equal to the one encoded. What the content cache (support/ContentCache.h) stores for
// an hwloc XML, so a second run skips hwloc's XML import; the bytes are a private, versioned
// format of one build, not an interchange format.
#pragma once

#include "hal/Topology.h"

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace msc::hal {

std::string encodeTopologyBinary(const Topology &topology);
// nullopt for anything that is not a whole, well-formed encoding (wrong version, truncated, an
// edge to a vertex that does not exist, an unknown kind): the caller rebuilds from the source.
std::optional<Topology> decodeTopologyBinary(llvm::StringRef bytes);

} // namespace msc::hal

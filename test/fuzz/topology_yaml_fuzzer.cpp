// libFuzzer target for the YAML topology reader: any input gives a topology or coded diagnostics,
// never a crash; whatever reads back must write and read again to the same bytes, and reading node
// by node must never accept what the whole document's reading refuses, nor read it differently.
#include "hal/TopologyYaml.h"
#include "hal/detail/ClusterYamlReading.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  msc::CollectingConsumer consumer;
  msc::DiagnosticEngine diags(nullptr, consumer);
  auto cluster = msc::hal::readClusterYaml(text, "fuzz.yaml", diags);
  if (auto byNode = msc::hal::detail::readClusterByNode(text, "fuzz.yaml")) {
    auto whole = msc::hal::detail::readClusterWhole(text, "fuzz.yaml", diags);
    if (!whole || msc::hal::writeClusterYaml(*whole) != msc::hal::writeClusterYaml(*byNode))
      std::abort(); // the cut changed what the description means
  }
  if (!cluster)
    return 0;
  for (const msc::hal::Topology &t : cluster->nodes) {
    (void)t.linkClass(0, t.vertexCount() ? t.vertexCount() - 1 : 0);
    for (unsigned pu : t.pus())
      (void)t.smtSiblings(pu);
  }
  std::string once = msc::hal::writeClusterYaml(*cluster);
  auto again = msc::hal::readClusterYaml(once, "fuzz-again.yaml", diags);
  if (!again || msc::hal::writeClusterYaml(*again) != once)
    std::abort(); // the writer produced something the reader does not take back
  return 0;
}

// Fuzzes the cluster config's reader on any text: the leading controller reads /mscale/config at
// every reconciliation, and any etcd client can write it. Nothing may crash or hang; a config that
// reads keeps every reserved entry's place in the text (its errors found later point there), and
// the domains reserved on a node are each listed once.
#include "cluster/config/ClusterConfig.h"

#include <llvm/ADT/STLExtras.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace msc::cluster;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  ConfigSource source("/mscale/config", text);
  std::optional<ClusterConfig> config = parseClusterConfig(source);
  if (config.has_value() == source.failed())
    std::abort();
  if (!config)
    return 0;
  for (const ReservedDomain &r : config->reserved) {
    if (r.domainAt.line && !source.rangeOf(r.domainAt).isValid())
      std::abort();
    std::vector<msc::PciBus> on = config->reservedOn(r.node);
    if (!llvm::is_contained(on, r.domain))
      std::abort();
    for (size_t i = 0; i < on.size(); ++i)
      if (llvm::is_contained(llvm::ArrayRef(on).drop_front(i + 1), on[i]))
        std::abort();
  }
  return 0;
}

// Where a contract's processes live in a cgroup hierarchy: <mount>/mscale/<ID>, in every hierarchy
// the executor uses (cgroup2 always; v1 cpuset or blkio where the controller is not on v2). The
// executor creates these directories; the tracer and the PSI readers find them by the same rule.
// Header only: it knows no hierarchy, it only spells the path (contract ids are valid directory
// names: ERR_EXEC_021).
#pragma once

#include <string>
#include <string_view>

namespace msc {

// `<mount>/mscale`: the parent of every contract's cgroup in that hierarchy.
inline std::string contractCgroupParent(std::string_view mount) { return std::string(mount) + "/mscale"; }

// `<mount>/mscale/<contract>`.
inline std::string contractCgroupDir(std::string_view mount, std::string_view contract) {
  return contractCgroupParent(mount) + "/" + std::string(contract);
}

} // namespace msc

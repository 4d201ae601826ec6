// Where a contract's processes live in a cgroup hierarchy: <mount>/mscale/<ID>. The executor creates
// these directories (cgroup2 always; v1 cpuset or blkio where needed); the tracer and the PSI
// readers find them by the same rule.
#pragma once

#include <string>
#include <string_view>

namespace msc {

// Only the spelling: no hierarchy is looked at (contract ids are valid directory names: ERR_EXEC_021).

// `<mount>/mscale`: the parent of every contract's cgroup in that hierarchy.
inline std::string contractCgroupParent(std::string_view mount) { return std::string(mount) + "/mscale"; }

// `<mount>/mscale/<contract>`.
inline std::string contractCgroupDir(std::string_view mount, std::string_view contract) {
  return contractCgroupParent(mount) + "/" + std::string(contract);
}

} // namespace msc

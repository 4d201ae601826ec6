// The plugin's coded messages, formatted from the one table (support/DiagnosticsSlurm.def) without
// linking msc_support: the plugin is loaded into slurmstepd and srun and carries only the C++
// runtime (see docs/slurm.md). "ERR_SLURM_003: contract file 'x' cannot be read: ...".
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace msc::slurm {

enum class SlurmDiag {
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) CODE,
#include "support/DiagnosticsSlurm.def"
#undef DIAG
};

// "CODE: message" with %0..%9 replaced by `args` (a missing argument stays as written).
std::string formatSlurmDiag(SlurmDiag code, std::initializer_list<std::string_view> args);

} // namespace msc::slurm

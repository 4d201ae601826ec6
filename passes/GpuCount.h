// `gpus = N`: a role that needs N GPUs on each node is checked as N roles of one GPU each, so that
// binding (passes/Binding.h) gives every copy its own free GPU, its own nearest HCA and its own
// local cores exactly as it does for N roles written out, and lowering writes those N roles: the
// plan format knows nothing of the count.
//
// The copies take the role's place in declaration order and are named NAME_g0 .. NAME_g<N-1>
// (role names, so also usable in the worker's MSCALE_ROLE_<ROLE>_* variables). Every other field
// is copied as written: a per-role quantity (threads, io_depth, memory_pool, queue_pairs,
// sm_slices, gpu_memory, io_weight, io_limit) is per copy, that is per GPU. `gpus = 1` is
// `gpu = any` and keeps the role's name.
#pragma once

#include "ir/IR.h"
#include "support/Diagnostic.h"

#include <string>
#include <vector>

namespace msc::passes {

// The names `role` is checked and lowered under: its copies' for `gpus = N` with N > 1, else its own.
std::vector<std::string> checkedRoleNames(const ir::Role &role);

// Whether any role of `contract` sets `gpus`.
bool hasGpuCounts(const ir::Contract &contract);

// `contract` with every role that sets `gpus` replaced by its copies, each with `gpu = any`. `gpus`
// next to a named `gpu` is ERR_SEM_005 and a copy named like another role ERR_SEM_016; such a role
// stays one role (with its named GPU, else `gpu = any`), so that later checks do not report it again.
ir::Contract expandGpuCounts(const ir::Contract &contract, DiagnosticEngine &diags);

} // namespace msc::passes

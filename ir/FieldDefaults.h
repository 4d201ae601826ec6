// Each field's default (ir/Fields.def's DEFAULT column) as a constant, in the IR's normalised unit:
// ir::defaults::fault_tolerance::heartbeat is the heartbeat interval in ns. Header-only and free of
// the IR's types, so that the node side (which never sees a contract) falls back to the very value
// lowering writes into plans, and nothing restates it.
#pragma once

#include <cstdint>
#include <limits>

namespace msc::ir {

// A field without a default: unset means absent (Fields.def rows say kNoDefault).
inline constexpr int64_t kNoDefault = std::numeric_limits<int64_t>::min();

// The most phases a contract may declare: the node's wake-up mask on the control page has one bit a
// phase (worker/WorkerApi.h kMaxPhases; the executor checks that they agree).
inline constexpr unsigned kMaxPhases = 32;

namespace defaults {
#define MSC_FIELD_DEFAULT(NAME, KIND, MIN, MAX, CHOICES, DEFAULT, DOC) inline constexpr int64_t NAME = DEFAULT;
namespace compute {
#define COMPUTE_FIELD MSC_FIELD_DEFAULT
#include "ir/Fields.def"
} // namespace compute
namespace role {
#define ROLE_FIELD MSC_FIELD_DEFAULT
#include "ir/Fields.def"
} // namespace role
namespace fault_tolerance {
#define FAULT_TOLERANCE_FIELD MSC_FIELD_DEFAULT
#include "ir/Fields.def"
} // namespace fault_tolerance
namespace scaling {
#define SCALING_FIELD MSC_FIELD_DEFAULT
#include "ir/Fields.def"
} // namespace scaling
namespace policy {
#define POLICY_FIELD MSC_FIELD_DEFAULT
#include "ir/Fields.def"
} // namespace policy
namespace lending {
#define LENDING_FIELD MSC_FIELD_DEFAULT
#include "ir/Fields.def"
} // namespace lending
#undef MSC_FIELD_DEFAULT
} // namespace defaults

} // namespace msc::ir

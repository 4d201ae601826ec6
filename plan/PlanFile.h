// Execution plan files: a fixed header (magic, format version, payload size, checksum) followed
// by the protobuf Plan. Encoding is deterministic: the same plan gives the same bytes.
#pragma once

#include "plan/plan.pb.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>
#include <vector>

namespace msc::plan {

inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 2; // 1.1: IoBinding.numa_node_declared; 1.2: lending, borrow
inline constexpr size_t kHeaderSize = 32;
inline constexpr uint64_t kMaxPayload = 64ull << 20;

// Header, little endian: "MSCPLAN\0" | major u16 | minor u16 | reserved u32 | payload size u64 |
// FNV-1a 64 of the payload u64.
std::string encodePlan(const Plan &plan);
// Decodes and verifies; every problem is a coded diagnostic naming `name`.
std::optional<Plan> decodePlan(llvm::StringRef bytes, llvm::StringRef name, DiagnosticEngine &diags);
std::optional<Plan> readPlanFile(llvm::StringRef path, DiagnosticEngine &diags);
// Writes to a temporary file in the same directory, then renames: never a half-written plan.
bool writePlanFile(const Plan &plan, llvm::StringRef path, DiagnosticEngine &diags);

// The plan's invariants; empty when it is consistent.
std::vector<std::string> verifyPlan(const Plan &plan);

// `mscale-plan dump`: readable text; `--json`: the protobuf JSON mapping.
void dumpPlan(const Plan &plan, llvm::raw_ostream &os);
std::string planToJson(const Plan &plan);

// `mscale-plan diff`: what would change from `before` to `after`, one line per setting
// ("~ io_bindings[image_loader].cpus: 2,3 -> 2,3,4"). Returns false when the plans are equal.
bool diffPlans(const Plan &before, const Plan &after, llvm::raw_ostream &os);

} // namespace msc::plan

// The world sizes a job runs at, and how each splits the job's global batch. `nodes = 2..4` lets a
// job run at any size in the range; `global_batch` fixes what a step consumes whatever the size, so a
// size is allowed only when its ranks split the global batch evenly (and, with `micro_batch`, each
// rank's share into whole micro-batches: the canonical decomposition of a step into
// global_batch / micro_batch micro-batches is then the same at every size). One home for the rule:
// the frontend refuses a contract no size of which is allowed (ERR_SEM_025), placement gives the
// largest allowed size it can place whole, and the controller tells each rank its share.
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::ir {

struct WorldSizes {
  unsigned min = 1, max = 1;     // the contract's `nodes` (1..1 when it does not say)
  uint64_t globalBatch = 0;      // samples a step consumes across all ranks; 0: the contract does not say
  uint64_t microBatch = 0;       // most samples a rank passes forward at once; 0: its whole share
  bool deterministicReduction = false; // gradients summed in the micro-batches' canonical order
  bool elastic() const { return min < max; }
};

// How one world size splits the global batch.
struct BatchSplit {
  unsigned worldSize = 1;
  uint64_t rankBatch = 0;     // samples per rank per step: globalBatch / worldSize
  uint64_t microBatch = 0;    // samples per forward pass
  uint64_t accumulation = 1;  // micro-batches per rank per step (gradient-accumulation steps)
};

WorldSizes worldSizesOf(const ComputeFields &compute);

// Why `size` is not allowed ("256 samples over 3 ranks leave 1"), empty when it is; a size outside
// min..max is not allowed either.
std::string whyNotAllowed(const WorldSizes &sizes, unsigned size);
bool allowed(const WorldSizes &sizes, unsigned size);
// The allowed sizes, largest first.
std::vector<unsigned> allowedSizes(const WorldSizes &sizes);
// The split at an allowed `size`; nullopt when the contract sets no global batch or the size is
// not allowed.
std::optional<BatchSplit> splitAt(const WorldSizes &sizes, unsigned size);

} // namespace msc::ir

#include "ir/WorldSize.h"

namespace msc::ir {

WorldSizes worldSizesOf(const ComputeFields &compute) {
  WorldSizes s;
  if (compute.nodes) {
    s.min = static_cast<unsigned>(compute.nodes->value.min);
    s.max = static_cast<unsigned>(compute.nodes->value.max);
  }
  if (compute.global_batch)
    s.globalBatch = static_cast<uint64_t>(compute.global_batch->value);
  if (compute.micro_batch)
    s.microBatch = static_cast<uint64_t>(compute.micro_batch->value);
  s.deterministicReduction = compute.deterministic_reduction && compute.deterministic_reduction->value;
  return s;
}

std::string whyNotAllowed(const WorldSizes &sizes, unsigned size) {
  if (size < sizes.min || size > sizes.max || size == 0)
    return std::to_string(size) + " is outside nodes = " + std::to_string(sizes.min) + ".." + std::to_string(sizes.max);
  if (sizes.globalBatch == 0)
    return {};
  const std::string global = std::to_string(sizes.globalBatch) + " samples";
  if (sizes.globalBatch % size)
    return global + " over " + std::to_string(size) + " ranks leave " + std::to_string(sizes.globalBatch % size);
  const uint64_t share = sizes.globalBatch / size;
  if (sizes.microBatch && share % sizes.microBatch)
    return std::to_string(share) + " samples per rank at " + std::to_string(size) + (size == 1 ? " rank" : " ranks") +
           " are no whole number of " +
           std::to_string(sizes.microBatch) + "-sample micro-batches";
  return {};
}

bool allowed(const WorldSizes &sizes, unsigned size) { return whyNotAllowed(sizes, size).empty(); }

std::vector<unsigned> allowedSizes(const WorldSizes &sizes) {
  std::vector<unsigned> out;
  for (unsigned size = sizes.max; size >= sizes.min && size > 0; --size)
    if (allowed(sizes, size))
      out.push_back(size);
  return out;
}

std::optional<BatchSplit> splitAt(const WorldSizes &sizes, unsigned size) {
  if (sizes.globalBatch == 0 || !allowed(sizes, size))
    return std::nullopt;
  BatchSplit split;
  split.worldSize = size;
  split.rankBatch = sizes.globalBatch / size;
  split.microBatch = sizes.microBatch ? sizes.microBatch : split.rankBatch;
  split.accumulation = split.rankBatch / split.microBatch;
  return split;
}

} // namespace msc::ir

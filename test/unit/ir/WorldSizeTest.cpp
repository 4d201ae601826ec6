// The sizes a job may run at and each size's share of the global batch (ir/WorldSize.h).
#include "ir/WorldSize.h"

#include <gtest/gtest.h>

namespace msc::ir {
namespace {

WorldSizes sizes(unsigned min, unsigned max, uint64_t global = 0, uint64_t micro = 0) {
  WorldSizes s;
  s.min = min;
  s.max = max;
  s.globalBatch = global;
  s.microBatch = micro;
  return s;
}

TEST(WorldSize, WithoutAGlobalBatchEverySizeOfTheRangeIsAllowed) {
  EXPECT_EQ(allowedSizes(sizes(2, 4)), (std::vector<unsigned>{4, 3, 2}));
  EXPECT_EQ(allowedSizes(sizes(1, 1)), (std::vector<unsigned>{1}));
  EXPECT_FALSE(splitAt(sizes(2, 4), 3)); // nothing to split
}

TEST(WorldSize, ASizeMustSplitTheGlobalBatchEvenly) {
  WorldSizes s = sizes(2, 4, 256);
  EXPECT_EQ(allowedSizes(s), (std::vector<unsigned>{4, 2}));
  EXPECT_EQ(whyNotAllowed(s, 3), "256 samples over 3 ranks leave 1");
  EXPECT_EQ(whyNotAllowed(s, 5), "5 is outside nodes = 2..4");
  std::optional<BatchSplit> at4 = splitAt(s, 4);
  ASSERT_TRUE(at4);
  EXPECT_EQ(at4->rankBatch, 64u);
  EXPECT_EQ(at4->microBatch, 64u); // no micro_batch: a rank's whole share at once
  EXPECT_EQ(at4->accumulation, 1u);
  EXPECT_FALSE(splitAt(s, 3));
}

TEST(WorldSize, MicroBatchesAreWholeAtEverySizeAllowed) {
  WorldSizes s = sizes(1, 4, 96, 16); // 6 micro-batches a step, at any size
  EXPECT_EQ(allowedSizes(s), (std::vector<unsigned>{3, 2, 1}));
  EXPECT_EQ(whyNotAllowed(s, 4), "24 samples per rank at 4 ranks are no whole number of 16-sample micro-batches");
  std::optional<BatchSplit> at2 = splitAt(s, 2);
  ASSERT_TRUE(at2);
  EXPECT_EQ(at2->rankBatch, 48u);
  EXPECT_EQ(at2->microBatch, 16u);
  EXPECT_EQ(at2->accumulation, 3u);
  // Every size decomposes a step into the same 6 micro-batches.
  for (unsigned n : allowedSizes(s))
    EXPECT_EQ(splitAt(s, n)->accumulation * n, 6u) << n;
}

TEST(WorldSize, NoSizeAllowed) {
  EXPECT_TRUE(allowedSizes(sizes(3, 3, 256)).empty());
  EXPECT_TRUE(allowedSizes(sizes(1, 2, 100, 30)).empty()); // 100 is no whole number of 30s at any size
}

TEST(WorldSize, ReadFromTheContractsFields) {
  ComputeFields f;
  EXPECT_EQ(worldSizesOf(f).min, 1u);
  EXPECT_EQ(worldSizesOf(f).max, 1u);
  f.nodes = Field<CountRange>{CountRange{2, 8}, {}};
  f.global_batch = Field<int64_t>{512, {}};
  f.micro_batch = Field<int64_t>{32, {}};
  WorldSizes s = worldSizesOf(f);
  EXPECT_EQ(s.min, 2u);
  EXPECT_EQ(s.max, 8u);
  EXPECT_TRUE(s.elastic());
  EXPECT_EQ(s.globalBatch, 512u);
  EXPECT_EQ(s.microBatch, 32u);
}

} // namespace
} // namespace msc::ir

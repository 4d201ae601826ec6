#include "sim/Estimate.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace msc::sim;

TEST(Estimate, MeanAndStudentsInterval) {
  // s = sqrt(2.5), t(0.975, 4) = 2.776445: 2.776445 * 1.581139 / sqrt(5) = 1.963243.
  Estimate e = estimate({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(e.mean, 3);
  EXPECT_NEAR(e.halfWidth, 1.963243, 1e-6);
  EXPECT_EQ(e.runs, 5u);
  EXPECT_NEAR(e.low(), 3 - 1.963243, 1e-6);
  EXPECT_EQ(formatEstimate(e), "3.000 +- 1.963 (95%, 5 runs)");
}

TEST(Estimate, ThirtyRunsUseTwentyNineDegreesOfFreedom) {
  std::vector<double> runs;
  for (int i = 0; i < 30; ++i)
    runs.push_back(i % 2 ? 1.0 : 0.0); // mean 0.5, s = sqrt(30 * 0.25 / 29)
  Estimate e = estimate(runs);
  EXPECT_DOUBLE_EQ(e.mean, 0.5);
  EXPECT_NEAR(e.halfWidth, 2.045230 * std::sqrt(30 * 0.25 / 29) / std::sqrt(30.0), 1e-6);
}

TEST(Estimate, FewerThanTwoRunsHaveNoInterval) {
  EXPECT_TRUE(std::isinf(estimate({0.9}).halfWidth));
  EXPECT_EQ(estimate({}).runs, 0u);
  EXPECT_TRUE(std::isinf(estimate({0.9}).high()));
}

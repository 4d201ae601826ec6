// A quantity measured over independent runs (one per seed) as a mean with its 95% confidence
// interval: mean +- t(0.975, n-1) * s / sqrt(n), Student's t because 30-odd seeds are few. What the
// harness reports ETTR and its parts as (issue 30: "ETTR with a 95% confidence interval over >= 30
// seeds").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace msc::sim {

struct Estimate {
  double mean = 0;
  double halfWidth = 0; // of the 95% interval; infinite for fewer than two runs
  size_t runs = 0;
  double low() const { return mean - halfWidth; }
  double high() const { return mean + halfWidth; }
};

Estimate estimate(const std::vector<double> &runs);
// "0.912 +- 0.004 (95%, 30 runs)" with `digits` after the point.
std::string formatEstimate(const Estimate &e, int digits = 3);

} // namespace msc::sim

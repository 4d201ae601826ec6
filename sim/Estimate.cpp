#include "sim/Estimate.h"

#include <boost/math/distributions/students_t.hpp>

#include <cmath>
#include <cstdio>
#include <limits>

namespace msc::sim {

Estimate estimate(const std::vector<double> &runs) {
  Estimate e;
  e.runs = runs.size();
  if (runs.empty())
    return e;
  double sum = 0;
  for (double v : runs)
    sum += v;
  e.mean = sum / double(runs.size());
  if (runs.size() < 2) {
    e.halfWidth = std::numeric_limits<double>::infinity();
    return e;
  }
  double squares = 0;
  for (double v : runs)
    squares += (v - e.mean) * (v - e.mean);
  double sd = std::sqrt(squares / double(runs.size() - 1));
  double t = boost::math::quantile(boost::math::students_t(double(runs.size() - 1)), 0.975);
  e.halfWidth = t * sd / std::sqrt(double(runs.size()));
  return e;
}

std::string formatEstimate(const Estimate &e, int digits) {
  char text[128];
  std::snprintf(text, sizeof text, "%.*f +- %.*f (95%%, %zu runs)", digits, e.mean, digits, e.halfWidth, e.runs);
  return text;
}

} // namespace msc::sim

// Judging the node on the agent's clock and handing on what changed (see HealthReporter.h).
#include "cluster/agent/HealthReporter.h"

#include "health/Sampler.h"

namespace msc::cluster {

NodeHealth publishedHealth(const health::Verdict &verdict) {
  NodeHealth out;
  out.level = verdict.level == health::Level::Failed     ? HealthLevel::Failed
              : verdict.level == health::Level::Degraded ? HealthLevel::Degraded
                                                         : HealthLevel::Healthy;
  for (const health::Reason &r : verdict.reasons)
    out.reasons.push_back({diagInfo(r.code).name.str(), r.message});
  return out;
}

HealthReporter::HealthReporter(hal::Topology advertised, HealthReporterOptions options, const Clock &clock)
    : advertised_(std::move(advertised)), options_(std::move(options)), clock_(clock) {}

std::optional<NodeHealth> HealthReporter::poll() {
  const uint64_t now = clock_.monotonicNs();
  if (judgedAtNs_ && now - *judgedAtNs_ < uint64_t(options_.interval.count()))
    return std::nullopt;
  judgedAtNs_ = now;
  health::SamplerOptions sampler;
  sampler.root = options_.root;
  last_ = monitor_.observe(health::takeSample(advertised_, sampler, clock_));
  NodeHealth judged = publishedHealth(last_);
  if (current_ && *current_ == judged)
    return std::nullopt;
  current_ = judged;
  return judged;
}

} // namespace msc::cluster

// The node's health as its agent publishes it with its registration (Keys.h: NodeHealth): the
// health library's judgement (health/Judge.h) run on the agent's loop every `interval` of the
// injected clock, over the sysfs/procfs root the node is served from ("/" live; a recorded or
// mutated tree in tests, as `mscale-cli hardware health --sysfs-root` reads). The monitor keeps the
// first and previous samples, so growth (RDMA error counters, EDAC, shrinking pools) is judged as
// the hardware command judges it. Only a change of the verdict or its reasons is handed on: a
// registration rewritten every interval would wake every controller's watch for nothing.
#pragma once

#include "cluster/keys/Keys.h"
#include "hal/Topology.h"
#include "health/Judge.h"
#include "support/Clock.h"

#include <chrono>
#include <optional>
#include <string>

namespace msc::cluster {

struct HealthReporterOptions {
  std::string root = "/";
  std::chrono::nanoseconds interval = std::chrono::seconds(10);
};

// The verdict as the registration carries it: its level, each reason's code and message.
NodeHealth publishedHealth(const health::Verdict &verdict);

class HealthReporter {
public:
  // `advertised`: the topology the node registers (its sensors' limits are the thresholds).
  HealthReporter(hal::Topology advertised, HealthReporterOptions options, const Clock &clock);

  // Judges the node when `interval` has passed since the last judgement (the first call judges at
  // once). The verdict when it differs from the one returned last; nullopt when nothing is due or
  // nothing changed.
  std::optional<NodeHealth> poll();
  // The last verdict judged; nullopt before the first.
  const std::optional<NodeHealth> &current() const { return current_; }
  // The full verdict (with evidence) of the last judgement, for the agent's log.
  const health::Verdict &lastVerdict() const { return last_; }

private:
  hal::Topology advertised_;
  HealthReporterOptions options_;
  const Clock &clock_;
  health::Monitor monitor_;
  std::optional<uint64_t> judgedAtNs_;
  std::optional<NodeHealth> current_;
  health::Verdict last_;
};

} // namespace msc::cluster

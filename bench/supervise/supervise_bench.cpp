// The whole Supervisor (its rooms composed, as `mscale-exec run` runs them) in virtual time over the
// SimWorkerHost: a job that beats every 50 ms and steps every 100 ms for 1,000 simulated seconds,
// driven in 1 ms steps as a node's event loop would wake, with a worker crash every 100 s that the
// supervisor detects and restarts. Reported: wall time per 1,000 simulated seconds, and the speed-up
// over real time (the aim: a simulator runs these rooms thousands of times faster than real time).
#include "executor/Session.h"
#include "executor/Supervisor.h"
#include "executor/core/Logger.h"
#include "executor/supervise/SimWorkerHost.h"
#include "support/Clock.h"

#include <benchmark/benchmark.h>

#include <unistd.h>

using namespace msc;
using namespace msc::exec;

namespace {

constexpr uint64_t kMs = 1'000'000;

// One simulated job, `seconds` long; returns the events of the supervisor's history (faults, restarts).
size_t superviseFor(uint64_t seconds, bool standby) {
  ManualClock clock{0};
  SimWorkerHost host;
  Logger log("bench", /*toStderr=*/false);
  plan::Plan plan;
  plan.mutable_provenance()->set_contract("bench");
  plan.mutable_fault_tolerance()->set_snapshot_every_steps(10);
  plan.mutable_fault_tolerance()->set_heartbeat_ns(200 * kMs);
  plan.mutable_fault_tolerance()->set_heartbeat_misses(3);
  plan.mutable_fault_tolerance()->set_standby_worker(standby);
  Session session(plan, "bench", "bench.msp", log, SessionOptions{});
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  SupervisorOptions o;
  o.clock = &clock;
  o.host = &host;
  o.command = {"train"};
  o.maxRestarts = 1000;
  Supervisor supervisor(session, log, std::move(o));
  if (!supervisor.start(diags))
    return 0;
  size_t events = 0;
  for (uint64_t now = kMs; now <= seconds * 1000 * kMs; now += kMs) {
    clock.advance(kMs);
    for (pid_t pid : host.running()) {
      if (now % (100'000 * kMs) == 0) { // a crash every 100 s
        host.exit(pid, 1);
        continue;
      }
      if (now % (50 * kMs) == 0)
        host.beat(pid, now / (100 * kMs));
    }
    for (auto [pid, status] : host.takeEnds())
      if (supervisor.onWorkerExit(pid, status, diags))
        return events;
    if (now >= supervisor.nextWakeNs(now))
      supervisor.tick(now);
    events = supervisor.history().size();
  }
  return events;
}

void BM_ThousandSimulatedSeconds(benchmark::State &state) {
  bool standby = state.range(0) != 0;
  size_t events = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(events = superviseFor(1000, standby));
  state.counters["history_events"] = static_cast<double>(events);
  state.counters["x_real_time"] =
      benchmark::Counter(1000.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ThousandSimulatedSeconds)->Arg(0)->Arg(1)->ArgName("standby")->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();

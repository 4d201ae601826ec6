// Lending for real, measured from the owner's side (docs/PERFORMANCE.md): an owner process on CPUs
// 0 and 1 alternates two phases through the worker's C ABI — compute keeps CPU 1, io keeps CPU 0 —
// while a borrower of four spinning threads runs in its cgroup on whatever the node lends, and the
// node (LendingLoop over CgroupLoans, in this process) lends and takes back. At every entry the
// owner itself reads from /proc whether a borrower thread could still run on the CPU it now keeps,
// and how long until none can: the guarantee as the owner sees it, not as the node reports it. The
// same rhythm runs with lead = auto and with lead = 0ms (reclaim on entry), and without lending (the
// static reservation: nothing harvested) as the baseline, in one run. Root; 2 CPUs or more.
//
//   build/bench/lending_bench [--transitions N] [--rounds R] [--compute-ms M] [--io-ms M] [--bound-us U]
//                             [--borrower spin|forks]
#include "executor/lending/CgroupLoans.h"
#include "executor/lending/LendingLoop.h"
#include "executor/lending/ThreadPlacement.h"
#include "support/Clock.h"
#include "worker/ControlPage.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace msc;
using namespace msc::exec;
using namespace msc::exec::lending;

namespace {

struct Options {
  unsigned transitions = 10'000; // per case, over all rounds
  unsigned rounds = 5;           // the cases alternate, round after round (this machine is noisy)
  uint64_t computeNs = 6'000'000, ioNs = 3'000'000, boundNs = 2'000'000;
  // spin: four spinning threads; forks: two spinning threads and a burst of short-lived spinning
  // children (one every 2 ms, each for 10 ms), so that the tree changes under every reclaim.
  std::string borrower = "spin";
};

// What the owner saw, in memory it shares with the bench: per entry, whether a borrower thread
// could run on the kept CPU at the entry, and the time from the entry until none could.
struct Observed {
  static constexpr unsigned kMax = 1u << 20;
  uint32_t count;
  uint8_t foundLent[kMax];
  uint32_t latencyNs[kMax];
  uint32_t phaseNs[kMax]; // entry to the end of the phase's work
};

uint64_t nowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1'000'000'000u + uint64_t(t.tv_nsec);
}

void pinTo(unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

[[noreturn]] void spin() {
  static std::atomic<uint64_t> sink{0};
  for (;;)
    sink.fetch_add(1, std::memory_order_relaxed);
}

// The borrower (Options::borrower), once a byte arrives on `goFd` (written once it is in its cgroup).
pid_t startBorrower(int &goFd, const std::string &kind) {
  int go[2];
  if (::pipe(go) != 0)
    return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    char byte;
    if (::read(go[0], &byte, 1) != 1)
      ::_exit(1);
    if (kind == "forks") {
      std::thread(spin).detach();
      std::thread(spin).detach();
      for (;;) { // children that spin for 10 ms each, one every 2 ms; reaped as they end
        if (::fork() == 0) {
          uint64_t until = nowNs() + 10'000'000;
          while (nowNs() < until) {
          }
          ::_exit(0);
        }
        ::usleep(2000);
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {
        }
      }
    }
    for (int i = 0; i < 3; ++i)
      std::thread(spin).detach();
    spin();
  }
  ::close(go[0]);
  goFd = go[1];
  return pid;
}

// A fixed amount of work, so that an owner slowed by a borrower takes longer (a wall-clock spin
// would not).
uint64_t work(uint64_t iterations) {
  static std::atomic<uint64_t> sink{0};
  for (uint64_t i = 0; i < iterations; ++i)
    sink.fetch_add(i, std::memory_order_relaxed);
  return sink.load(std::memory_order_relaxed);
}

// Iterations of work() per millisecond on this CPU, alone (the borrower is frozen until the first
// phase lends it something).
uint64_t iterationsPerMs() {
  uint64_t best = UINT64_MAX;
  for (int round = 0; round < 5; ++round) {
    uint64_t start = nowNs();
    work(1'000'000);
    best = std::min(best, nowNs() - start);
  }
  return 1'000'000'000'000ull / std::max<uint64_t>(best, 1);
}

// The owner's worker: it enters a phase (from the CPU it leaves, as a job's next stage is started
// by its last), moves to the CPU the phase keeps, reads the borrower's threads until none can run
// there, and does the phase's work.
[[noreturn]] void ownerWorker(int controlFd, pid_t borrower, const Options &o, Observed *observed) {
  ::setenv("MSCALE_CONTROL_FD", std::to_string(controlFd).c_str(), 1);
  bool forks = o.borrower == "forks";
  pinTo(1);
  uint64_t perMs = iterationsPerMs();
  observed->count = 0;
  for (unsigned i = 0; i < o.transitions && i < Observed::kMax; ++i) {
    bool compute = i % 2 == 0;
    unsigned kept = compute ? 1 : 0;
    uint64_t entered = nowNs();
    mscale::worker::enterPhase(compute ? 1 : 2);
    pinTo(kept);
    // The borrower's tree as it is now: a forking one changes under every entry.
    auto threads = [&] { return threadsOf(forks ? processTree(borrower) : std::vector<pid_t>{borrower}); };
    bool lent = !runnableOn(threads(), {kept}).empty();
    uint64_t freed = entered;
    if (lent) {
      while (!runnableOn(threads(), {kept}).empty() && nowNs() - entered < 1'000'000'000u) {
      }
      freed = nowNs();
    }
    work(perMs * (compute ? o.computeNs : o.ioNs) / 1'000'000);
    observed->foundLent[i] = lent;
    observed->latencyNs[i] = uint32_t(std::min<uint64_t>(freed - entered, UINT32_MAX));
    observed->phaseNs[i] = uint32_t(std::min<uint64_t>(nowNs() - entered, UINT32_MAX));
    observed->count = i + 1;
  }
  mscale::worker::enterPhase(0);
  ::_exit(0);
}

// The time the hypervisor took from this VM's CPUs so far (/proc/stat's steal, all CPUs), in ns.
uint64_t stolenNs() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t fields[8] = {};
  in >> cpu;
  for (uint64_t &f : fields)
    in >> f;
  return fields[7] * 1'000'000'000u / uint64_t(sysconf(_SC_CLK_TCK));
}

// The borrower's CPU time so far (utime + stime of its threads and of the children it reaped), from /proc.
uint64_t cpuNsOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos)
    return 0;
  std::vector<std::string> fields;
  size_t at = close + 2;
  while (at < text.size() && fields.size() < 15) {
    size_t space = text.find(' ', at);
    fields.push_back(text.substr(at, space - at));
    at = space == std::string::npos ? text.size() : space + 1;
  }
  if (fields.size() < 15)
    return 0;
  // stat fields 14 and 15, its own; 16 and 17, its children it waited for (a forking borrower's).
  uint64_t ticks = std::stoull(fields[11]) + std::stoull(fields[12]) + std::stoull(fields[13]) + std::stoull(fields[14]);
  return ticks * 1'000'000'000u / uint64_t(sysconf(_SC_CLK_TCK));
}

struct Result {
  std::string name;
  unsigned entries = 0, foundLent = 0, missed = 0;
  std::vector<uint64_t> waitsNs; // entries that found the CPU lent: entry to free
  std::vector<uint64_t> cyclesNs; // the owner's compute + io, each
  std::vector<double> cycleRatios; // per round: its cycle P50 over the static case's, same round
  std::vector<uint64_t> movesNs, freezeAsksNs; // each cpuset write, each freeze asked (the mechanism's calls)
  double wallS = 0, borrowerCpuS = 0, nodeLentCoreS = 0, stolenS = 0;
  ReclaimStats node;
  bool realtime = false;
  std::vector<std::pair<uint64_t, uint64_t>> rhythm; // per phase: the interval learnt, the lead
  std::vector<std::string> errors;
};

enum class Lead { Auto, Zero, NoLending };

// The cgroups, with the time each change takes in the kernel: where a slow reclaim's time went.
class TimedLoans final : public LoanMechanism {
public:
  explicit TimedLoans(CgroupLoans &loans) : loans_(loans) {}
  bool setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) override {
    uint64_t start = nowNs();
    bool ok = loans_.setCpus(borrower, cpus, error);
    (cpus.empty() ? freezeAsksNs : movesNs).push_back(nowNs() - start);
    return ok;
  }
  Settle settle(const std::string &borrower, std::string &error) override { return loans_.settle(borrower, error); }
  bool throttleIo(const std::string &borrower, const std::vector<std::string> &devices, std::string &error) override {
    return loans_.throttleIo(borrower, devices, error);
  }
  void end(const std::string &borrower) override { loans_.end(borrower); }
  std::vector<uint64_t> movesNs, freezeAsksNs;

private:
  CgroupLoans &loans_;
};

Result runOnce(const CgroupLayout &layout, const Options &o, Lead lead, Observed *observed) {
  Result r;
  r.name = lead == Lead::Auto ? "lead = auto" : lead == Lead::Zero ? "lead = 0ms" : "no lending (static)";
  std::string error;
  std::unique_ptr<msc::worker::ControlPageHost> host = msc::worker::ControlPageHost::create(error);
  CgroupLoans loans(layout);
  if (!host || !loans.add("bench-borrower", {}, error)) {
    r.errors.push_back(error);
    return r;
  }
  int go = -1;
  pid_t borrower = startBorrower(go, o.borrower);
  bool joined = loans.join("bench-borrower", borrower, error);
  if (!joined || ::write(go, "g", 1) != 1) {
    r.errors.push_back(joined ? std::string("the borrower did not start") : error);
    ::kill(borrower, SIGKILL);
    ::waitpid(borrower, nullptr, 0);
    return r;
  }
  ::close(go);

  Owner owner;
  owner.contract = "bench-owner";
  owner.cpus = {0, 1};
  owner.phases = {{"compute", {1}}, {"io", {0}}};
  owner.reclaimWithinNs = o.boundNs;
  owner.leadAuto = lead == Lead::Auto;
  SystemClock clock;
  TimedLoans timed(loans);
  LendingNode node(clock, timed);
  LendingLoop loop(node, [&](const std::vector<std::string> &e) { r.errors.insert(r.errors.end(), e.begin(), e.end()); });
  mscale::worker::ControlPage *page = host->page();
  loop.withNode([&](LendingNode &n) {
    n.addOwner(owner, page);
    if (lead != Lead::NoLending)
      n.addBorrower("bench-borrower", 2);
  });
  loop.watch({&page->phase});
  loop.start();

  uint64_t cpuBefore = cpuNsOf(borrower), start = nowNs(), stolenBefore = stolenNs();
  pid_t ownerPid = ::fork();
  if (ownerPid == 0)
    ownerWorker(host->fd(), borrower, o, observed);
  ::waitpid(ownerPid, nullptr, 0);
  r.wallS = double(nowNs() - start) / 1e9;
  r.stolenS = double(stolenNs() - stolenBefore) / 1e9;
  r.borrowerCpuS = double(cpuNsOf(borrower) - cpuBefore) / 1e9;
  loop.withNode([&](LendingNode &n) {
    r.node = n.ledger().stats("bench-owner");
    r.nodeLentCoreS = double(n.lentCoreNs()) / 1e9;
    if (const PhaseRhythm *rhythm = n.rhythmOf("bench-owner"))
      for (unsigned phase : {1u, 2u})
        r.rhythm.push_back({rhythm->interval(phase), rhythm->lead(phase, n.reclaimCostNs())});
    n.removeOwner("bench-owner");
  });
  r.realtime = loop.realtime();
  r.movesNs = timed.movesNs;
  r.freezeAsksNs = timed.freezeAsksNs;
  loop.stop();
  loans.remove("bench-borrower");
  ::waitpid(borrower, nullptr, 0);

  r.entries = observed->count;
  for (unsigned i = 0; i + 1 < observed->count; i += 2)
    r.cyclesNs.push_back(uint64_t(observed->phaseNs[i]) + observed->phaseNs[i + 1]);
  for (unsigned i = 0; i < observed->count; ++i)
    if (observed->foundLent[i]) {
      ++r.foundLent;
      r.waitsNs.push_back(observed->latencyNs[i]);
      r.missed += observed->latencyNs[i] > o.boundNs;
    }
  return r;
}

std::string us(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f us", double(ns) / 1e3);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--transitions")
      o.transitions = unsigned(std::atoi(argv[i + 1]));
    else if (a == "--compute-ms")
      o.computeNs = uint64_t(std::atof(argv[i + 1]) * 1e6);
    else if (a == "--io-ms")
      o.ioNs = uint64_t(std::atof(argv[i + 1]) * 1e6);
    else if (a == "--rounds")
      o.rounds = unsigned(std::atoi(argv[i + 1]));
    else if (a == "--bound-us")
      o.boundNs = uint64_t(std::atof(argv[i + 1]) * 1e3);
    else if (a == "--borrower" && (std::string(argv[i + 1]) == "spin" || std::string(argv[i + 1]) == "forks"))
      o.borrower = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: lending_bench [--transitions N] [--rounds R] [--compute-ms M] [--io-ms M] [--bound-us U] "
                           "[--borrower spin|forks]\n");
      return 2;
    }
  }
  if (::geteuid() != 0 || std::thread::hardware_concurrency() < 2) {
    std::fprintf(stderr, "lending_bench: needs root (cgroups) and two CPUs\n");
    return 1;
  }
  CgroupLayout layout = CgroupLayout::discover();
  if (reclaimMechanism(layout) == ReclaimMechanism::None) {
    std::fprintf(stderr, "lending_bench: this kernel has %s\n", mechanismName(ReclaimMechanism::None));
    return 1;
  }
  void *shared = mmap(nullptr, sizeof(Observed), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    return 1;
  auto *observed = static_cast<Observed *>(shared);

  std::printf("%u phase entries a case in %u alternating rounds (compute %.1f ms keeps CPU 1, io %.1f ms keeps CPU 0), bound %s, mechanism %s, borrower %s\n\n",
              o.transitions, o.rounds, double(o.computeNs) / 1e6, double(o.ioNs) / 1e6, us(o.boundNs).c_str(),
              mechanismName(reclaimMechanism(layout)), o.borrower.c_str());
  // Round after round, each case for transitions / rounds entries; a case's numbers are over all
  // its rounds, the owner's slowdown the median of the rounds' ratios to the static case.
  const Lead cases[] = {Lead::NoLending, Lead::Zero, Lead::Auto};
  std::vector<Result> results(3);
  Options round = o;
  round.transitions = std::max(2u, o.transitions / std::max(1u, o.rounds)) & ~1u;
  int status = 0;
  for (unsigned k = 0; k < std::max(1u, o.rounds); ++k) {
    uint64_t staticCycle = 0;
    for (size_t c = 0; c < 3; ++c) {
      Result r = runOnce(layout, round, cases[c], observed);
      for (const std::string &e : r.errors)
        std::fprintf(stderr, "  %s: %s\n", r.name.c_str(), e.c_str());
      if (!r.realtime)
        std::fprintf(stderr, "  %s: the lending loop could not run SCHED_FIFO\n", r.name.c_str());
      status |= r.entries == 0;
      uint64_t cycle = quantile(r.cyclesNs, 0.5);
      if (c == 0)
        staticCycle = cycle;
      Result &all = results[c];
      all.name = r.name;
      all.entries += r.entries;
      all.foundLent += r.foundLent;
      all.missed += r.missed;
      all.waitsNs.insert(all.waitsNs.end(), r.waitsNs.begin(), r.waitsNs.end());
      all.cyclesNs.insert(all.cyclesNs.end(), r.cyclesNs.begin(), r.cyclesNs.end());
      all.cycleRatios.push_back(staticCycle ? double(cycle) / double(staticCycle) : 0.0);
      all.wallS += r.wallS;
      all.stolenS += r.stolenS;
      all.borrowerCpuS += r.borrowerCpuS;
      all.node.entries += r.node.entries;
      all.node.reclaims += r.node.reclaims;
      all.node.missed += r.node.missed;
      all.node.latenciesNs.insert(all.node.latenciesNs.end(), r.node.latenciesNs.begin(), r.node.latenciesNs.end());
      all.rhythm = r.rhythm;
      all.movesNs.insert(all.movesNs.end(), r.movesNs.begin(), r.movesNs.end());
      all.freezeAsksNs.insert(all.freezeAsksNs.end(), r.freezeAsksNs.begin(), r.freezeAsksNs.end());
    }
  }
  auto q = [](const std::vector<uint64_t> &v, double p) { return v.empty() ? std::string("-") : us(quantile(v, p)); };

  std::printf("Seen by the owner (/proc, at each entry):\n\n"
              "| case | entries | found a borrower on its CPU | wait P50 | P99 | P99.99 | max | over the bound | "
              "owner cycle P50 | ÷ static (median of rounds) | harvest |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Result &r : results) {
    std::vector<double> ratios = r.cycleRatios;
    std::sort(ratios.begin(), ratios.end());
    double ratio = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
    std::printf("| %s | %u | %u (%.2f%%) | %s | %s | %s | %s | %u | %s | %.3f | %.3f |\n", r.name.c_str(), r.entries,
                r.foundLent, r.entries ? 100.0 * r.foundLent / r.entries : 0.0, q(r.waitsNs, 0.5).c_str(),
                q(r.waitsNs, 0.99).c_str(), q(r.waitsNs, 0.9999).c_str(), q(r.waitsNs, 1.0).c_str(), r.missed,
                us(quantile(r.cyclesNs, 0.5)).c_str(), ratio,
                r.wallS > 0 ? r.borrowerCpuS / r.wallS : 0.0);
  }
  std::printf("\nThe kernel's part (each cpuset write and each freeze asked, timed around the call), and the time the "
              "hypervisor stole from this VM's CPUs meanwhile (/proc/stat):\n\n"
              "| case | cpuset writes | P50 | P99 | P99.99 | max | freezes asked | max | stolen |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Result &r : results)
    std::printf("| %s | %zu | %s | %s | %s | %s | %zu | %s | %.0f ms of %.0f s |\n", r.name.c_str(), r.movesNs.size(),
                q(r.movesNs, 0.5).c_str(), q(r.movesNs, 0.99).c_str(), q(r.movesNs, 0.9999).c_str(),
                q(r.movesNs, 1.0).c_str(), r.freezeAsksNs.size(), q(r.freezeAsksNs, 1.0).c_str(), r.stolenS * 1e3, r.wallS);
  std::printf("\nThe node's own account (ReclaimLedger: entry to reclaim done, entries that found CPUs lent):\n\n"
              "| case | entries | found lent | P50 | P99 | P99.99 | missed | lead learnt (compute, io) |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Result &r : results) {
    std::vector<uint64_t> waits;
    for (uint64_t ns : r.node.latenciesNs)
      if (ns)
        waits.push_back(ns);
    std::string leads = "-";
    if (r.rhythm.size() == 2 && r.name == "lead = auto")
      leads = us(r.rhythm[0].second) + ", " + us(r.rhythm[1].second);
    std::printf("| %s | %llu | %llu | %s | %s | %s | %llu | %s |\n", r.name.c_str(), (unsigned long long)r.node.entries,
                (unsigned long long)r.node.reclaims, q(waits, 0.5).c_str(), q(waits, 0.99).c_str(),
                q(waits, 0.9999).c_str(), (unsigned long long)r.node.missed, leads.c_str());
  }
  return status;
}

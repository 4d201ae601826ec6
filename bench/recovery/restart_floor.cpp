// The floor under a recovery of a worker with N MiB of state on this machine: the kernel's share of a
// crash-and-restart that no executor can avoid, measured with nothing of ours in the way, so that the
// recovery benchmark (recovery_bench.py) can say how much of its total is the executor and how far the
// 0.5 s aim is from what the machine can do at all.
//
//   teardown  SIGKILL of a process holding N MiB of populated private state and a mapping of an N MiB
//             memory tier, until waitpid reports it (what a crash's detection waits for)
//   boot      fork + exec of a fresh process until it has its N MiB of state populated (MAP_POPULATE,
//             as mscale-train-sim's StateBuffer does)
//   copy      that process copying N MiB from the memory tier (a memfd in the page cache) into its
//             state: the restore without hashing or any format
//
// usage: restart_floor --mib N [--reps R]     (prints one Markdown row of medians and P95s in ms)
// The child side (internal): restart_floor --child N TIER_FD REPORT_FD
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "restart_floor: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void *populated(size_t bytes) {
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED)
    die("mmap of the state");
  return p;
}

// The restarted worker: populate the state, say so, copy the tier into it, say so, wait to be killed.
int child(size_t bytes, int tierFd, int reportFd) {
  void *state = populated(bytes);
  char mark = 'b';
  if (::write(reportFd, &mark, 1) != 1)
    die("write");
  void *tier = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, tierFd, 0);
  if (tier == MAP_FAILED)
    die("mmap of the tier");
  std::memcpy(state, tier, bytes);
  mark = 'r';
  if (::write(reportFd, &mark, 1) != 1)
    die("write");
  for (;;)
    ::pause();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double p95(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(0.95 * double(v.size())))];
}

void readMark(int fd, char want) {
  char got = 0;
  if (::read(fd, &got, 1) != 1 || got != want) {
    std::fprintf(stderr, "restart_floor: the child did not report '%c'\n", want);
    std::exit(1);
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 5 && std::string(argv[1]) == "--child")
    return child(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]), std::atoi(argv[4]));
  size_t mib = 0;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string opt = argv[i];
    if (opt == "--mib")
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (opt == "--reps")
      reps = std::max(1, std::atoi(argv[i + 1]));
  }
  if (!mib) {
    std::fprintf(stderr, "usage: restart_floor --mib N [--reps R]\n");
    return 2;
  }
  size_t bytes = mib << 20;
  // The memory tier: a memfd the parent keeps (as the executor does), filled once, in the page cache.
  int tier = ::memfd_create("restart-floor-tier", 0);
  if (tier < 0 || ::ftruncate(tier, static_cast<off_t>(bytes)) != 0)
    die("memfd");
  void *fill = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, tier, 0);
  if (fill == MAP_FAILED)
    die("mmap of the tier");
  std::memset(fill, 0x5a, bytes);
  ::munmap(fill, bytes);

  std::vector<double> teardown, boot, copy, total;
  for (int r = 0; r < reps; ++r) {
    int report[2];
    if (::pipe(report) != 0)
      die("pipe");
    std::string size = std::to_string(bytes), tierFd = std::to_string(tier), reportFd = std::to_string(report[1]);
    Clock::time_point started = Clock::now();
    pid_t pid = ::fork();
    if (pid < 0)
      die("fork");
    if (pid == 0) {
      ::close(report[0]);
      ::execl("/proc/self/exe", argv[0], "--child", size.c_str(), tierFd.c_str(), reportFd.c_str(), (char *)nullptr);
      ::_exit(127);
    }
    ::close(report[1]);
    readMark(report[0], 'b');
    double booted = msSince(started);
    readMark(report[0], 'r');
    double restored = msSince(started);
    ::close(report[0]);
    // The next restart's teardown is this process's: it holds the populated state and the tier mapped.
    Clock::time_point killed = Clock::now();
    ::kill(pid, SIGKILL);
    if (::waitpid(pid, nullptr, 0) != pid)
      die("waitpid");
    double down = msSince(killed);
    teardown.push_back(down);
    boot.push_back(booted);
    copy.push_back(restored - booted);
    total.push_back(down + restored);
  }
  std::printf("| restart floor | %d | %.1f / %.1f | teardown %.1f / %.1f | boot %.1f / %.1f | copy %.1f / %.1f |\n",
              reps, median(total), p95(total), median(teardown), p95(teardown), median(boot), p95(boot), median(copy),
              p95(copy));
  return 0;
}

// A worker for the executor's tests: reports what the executor gave it.
//   exec-test-worker affinity          prints "Cpus_allowed_list: ..." of itself
//   exec-test-worker role ROLE         pins a thread to ROLE via WorkerApi.h, prints its affinity
//   exec-test-worker pool ROLE         maps the role's hugepage pool, writes every page, prints bytes
//   exec-test-worker cgroup            prints /proc/self/cgroup
//   exec-test-worker env PREFIX        prints the environment variables starting with PREFIX
//   exec-test-worker exit N | sleep S  exits with N | sleeps S seconds
//   exec-test-worker standby-job DIR [wait|die|beat-early]
//       a job under a warm standby (WorkerApi.h takeOver). As a standby: touches
//       DIR/standby-<rank>-ready and waits for the job (wait), exits 9 leaving
//       DIR/standby-<rank>-died-<pid> (die), or beats on its page without waiting, as a program that
//       writes the page itself would (beat-early). With the job: writes "PID REASON worker|standby
//       cuda=CUDA_VISIBLE_DEVICES" to DIR/rank-<rank>.<attempt>; attempt 0 then beats step 1 every
//       10 ms for 3 s and exits 0, its last rank SIGKILLing itself once its standby waits (wait), or
//       running until three standbys died and 2 s more (die); later attempts beat step 2 and exit 0.
#include "worker/WorkerApi.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <dirent.h>
#include <unistd.h>

extern char **environ;

static std::string statusLine(const char *path, const char *key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0)
      return line;
  return "";
}

static bool exists(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

// How many standbys of `rank` died before they were needed (their marker files in `dir`).
static int diedStandbys(const std::string &dir, const std::string &rank) {
  int n = 0;
  std::string prefix = "standby-" + rank + "-died-";
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
    closedir(d);
  }
  return n;
}

static int standbyJob(const std::string &dir, const std::string &asStandby) {
  auto var = [](const char *name, const char *otherwise) {
    const char *v = std::getenv(name);
    return std::string(v ? v : otherwise);
  };
  std::string rank = var("RANK", "0");
  if (mscale::worker::standby()) {
    if (asStandby == "die") {
      // Counted by the job, which runs until it has seen its supervisor's three standbys die.
      std::ofstream(dir + "/standby-" + rank + "-died-" + std::to_string(getpid())) << "\n";
      return 9;
    }
    if (asStandby == "beat-early") {
      if (mscale::worker::ControlPage *c = mscale::worker::detail::mapControlPage())
        c->beats.fetch_add(1, std::memory_order_release);
      sleep(60);
      return 0;
    }
    std::ofstream(dir + "/standby-" + rank + "-ready") << "\n";
  }
  mscale::worker::takeOver();
  std::string attempt = var("MSCALE_ATTEMPT", "0");
  std::ofstream(dir + "/rank-" + rank + "." + attempt)
      << getpid() << " " << var("MSCALE_RESTART_REASON", "-") << " " << (mscale::worker::standby() ? "standby" : "worker")
      << " cuda=" << var("CUDA_VISIBLE_DEVICES", "-") << "\n";
  if (attempt != "0") {
    mscale::worker::heartbeat(2);
    return 0;
  }
  bool victim = std::atoi(rank.c_str()) + 1 == std::atoi(var("WORLD_SIZE", "1").c_str());
  // With standbys that die, the job outlives the third by 2 s (its supervisor gives up on standbys
  // then), however slowly they start (a sanitizer build on a loaded machine), within a minute.
  int steps = 300;
  if (asStandby == "die") {
    for (steps = 0; steps < 6000 && diedStandbys(dir, rank) < 3; ++steps) {
      mscale::worker::heartbeat(1);
      usleep(10'000);
    }
    steps = 200;
  }
  for (int i = 0; i < steps; ++i) {
    mscale::worker::heartbeat(1);
    if (asStandby == "wait" && victim && exists(dir + "/standby-" + rank + "-ready"))
      raise(SIGKILL);
    usleep(10'000);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  std::string mode = argv[1];
  if (mode == "affinity") {
    std::cout << statusLine("/proc/self/status", "Cpus_allowed_list:") << "\n";
    return 0;
  }
  if (mode == "role" && argc > 2) {
    int rc = 0;
    std::string line;
    std::thread t([&] {
      rc = mscale::worker::pinThisThreadToRole(argv[2]);
      std::string path = "/proc/self/task/" + std::to_string(gettid()) + "/status";
      line = statusLine(path.c_str(), "Cpus_allowed_list:");
    });
    t.join();
    if (rc) {
      std::cout << "pin failed: " << std::strerror(rc) << "\n";
      return 1;
    }
    std::cout << "role " << argv[2] << " thread " << line << "\n";
    return 0;
  }
  if (mode == "pool" && argc > 2) {
    size_t bytes = 0;
    void *p = mscale::worker::mapPool(argv[2], &bytes);
    if (!p) {
      std::cout << "no pool: " << std::strerror(errno) << "\n";
      return 1;
    }
    std::memset(p, 0xa5, bytes);
    std::cout << "pool " << argv[2] << " mapped " << bytes << " bytes\n";
    std::cout << statusLine("/proc/meminfo", "HugePages_Free:") << "\n";
    return 0;
  }
  if (mode == "cgroup") {
    std::ifstream in("/proc/self/cgroup");
    std::cout << in.rdbuf();
    return 0;
  }
  if (mode == "env" && argc > 2) {
    for (char **e = environ; *e; ++e)
      if (std::strncmp(*e, argv[2], std::strlen(argv[2])) == 0)
        std::cout << *e << "\n";
    return 0;
  }
  if (mode == "standby-job" && argc > 2)
    return standbyJob(argv[2], argc > 3 ? argv[3] : "wait");
  if (mode == "exit" && argc > 2)
    return std::atoi(argv[2]);
  if (mode == "sleep" && argc > 2) {
    sleep(static_cast<unsigned>(std::atoi(argv[2])));
    return 0;
  }
  return 2;
}

// A worker for the executor's tests: reports what the executor gave it.
//   exec-test-worker affinity          prints "Cpus_allowed_list: ..." of itself
//   exec-test-worker role ROLE         pins a thread to ROLE via WorkerApi.h, prints its affinity
//   exec-test-worker pool ROLE         maps the role's hugepage pool, writes every page, prints bytes
//   exec-test-worker cgroup            prints /proc/self/cgroup
//   exec-test-worker env PREFIX        prints the environment variables starting with PREFIX
//   exec-test-worker exit N | sleep S  exits with N | sleeps S seconds
#include "worker/WorkerApi.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
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
  if (mode == "exit" && argc > 2)
    return std::atoi(argv[2]);
  if (mode == "sleep" && argc > 2) {
    sleep(static_cast<unsigned>(std::atoi(argv[2])));
    return 0;
  }
  return 2;
}

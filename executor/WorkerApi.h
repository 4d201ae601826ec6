// The worker side of the executor, header-only so any worker (C++ or through a tiny C shim) can use
// it without linking the executor: pin a role's threads to the CPUs the plan gave the role, name
// them, and map the role's hugepage pool. Reads the variables the appliers set:
//   MSCALE_ROLE_<ROLE>_CPUS="0-3", MSCALE_POOL_<ROLE>_FD=5, MSCALE_POOL_<ROLE>_BYTES=8388608
// <ROLE> is the role name upper-cased with non-alphanumerics as '_'.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <vector>

namespace mscale::worker {

inline std::string roleVariable(const char *role, const char *what) {
  std::string name = "MSCALE_";
  name += what[0] == 'P' ? "POOL_" : "ROLE_";
  for (const char *p = role; *p; ++p)
    name += std::isalnum(static_cast<unsigned char>(*p)) ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : '_';
  name += what[0] == 'P' ? what + 4 : what; // "POOL_FD" -> "_FD"
  return name;
}

// "0-3,8" -> {0,1,2,3,8}; empty on a malformed list.
inline std::vector<unsigned> parseCpus(const char *text) {
  std::vector<unsigned> out;
  const char *p = text;
  while (p && *p) {
    char *end;
    unsigned long a = std::strtoul(p, &end, 10), b = a;
    if (end == p)
      return {};
    p = end;
    if (*p == '-') {
      b = std::strtoul(p + 1, &end, 10);
      if (end == p + 1 || b < a)
        return {};
      p = end;
    }
    for (unsigned long c = a; c <= b; ++c)
      out.push_back(static_cast<unsigned>(c));
    if (*p == ',')
      ++p;
    else if (*p)
      return {};
  }
  return out;
}

// The CPUs of `role`; empty when the executor gave the role none.
inline std::vector<unsigned> roleCpus(const char *role) {
  const char *v = std::getenv(roleVariable(role, "_CPUS").c_str());
  return v ? parseCpus(v) : std::vector<unsigned>{};
}

// Pins the calling thread to the role's CPUs and names it "<role>" (truncated to 15 bytes).
// Returns 0, or an errno value (ENOENT when the role has no CPUs).
inline int pinThisThreadToRole(const char *role) {
  std::vector<unsigned> cpus = roleCpus(role);
  if (cpus.empty())
    return ENOENT;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : cpus)
    CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    return errno;
  std::string name(role);
  name.resize(std::min<size_t>(name.size(), 15));
  pthread_setname_np(pthread_self(), name.c_str());
  return 0;
}

// The inherited fd of the role's hugepage pool, or -1.
inline int poolFd(const char *role) {
  const char *v = std::getenv(roleVariable(role, "POOL_FD").c_str());
  return v ? std::atoi(v) : -1;
}
inline size_t poolBytes(const char *role) {
  const char *v = std::getenv(roleVariable(role, "POOL_BYTES").c_str());
  return v ? static_cast<size_t>(std::strtoull(v, nullptr, 10)) : 0;
}
// Maps the whole pool read-write and shared; nullptr (errno set) when there is none.
inline void *mapPool(const char *role, size_t *bytes = nullptr) {
  int fd = poolFd(role);
  size_t n = poolBytes(role);
  if (fd < 0 || n == 0) {
    errno = ENOENT;
    return nullptr;
  }
  void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED)
    return nullptr;
  if (bytes)
    *bytes = n;
  return p;
}

} // namespace mscale::worker

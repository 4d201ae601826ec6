#include "executor/ProcessTree.h"

#include "executor/host/Sys.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <map>
#include <sched.h>
#include <set>
#include <string>
#include <system_error>

namespace msc::exec {

namespace {

// pid -> parent pid of every process now in /proc. A process that ends while it is read is left out.
std::multimap<pid_t, pid_t> childrenByParent() {
  std::multimap<pid_t, pid_t> out;
  DIR *proc = ::opendir("/proc");
  if (!proc)
    return out;
  while (dirent *e = ::readdir(proc)) {
    unsigned pid;
    if (llvm::StringRef(e->d_name).getAsInteger(10, pid))
      continue;
    std::optional<std::string> stat = readFileText("/proc/" + std::string(e->d_name) + "/stat");
    if (!stat)
      continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
    llvm::StringRef rest = llvm::StringRef(*stat).rsplit(')').second.ltrim();
    unsigned ppid;
    if (rest.split(' ').second.split(' ').first.getAsInteger(10, ppid))
      continue;
    out.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

void collectDescendants(const std::multimap<pid_t, pid_t> &children, pid_t root, std::set<pid_t> &found) {
  auto [begin, end] = children.equal_range(root);
  for (auto it = begin; it != end; ++it)
    if (found.insert(it->second).second)
      collectDescendants(children, it->second, found);
}

} // namespace

bool processExiting(pid_t pid) {
  std::optional<std::string> stat = readFileText("/proc/" + std::to_string(pid) + "/stat");
  if (!stat)
    return false;
  // After the last ')': state ppid pgrp session tty_nr tpgid flags ...
  llvm::SmallVector<llvm::StringRef, 8> fields;
  llvm::StringRef(*stat).rsplit(')').second.ltrim().split(fields, ' ', 7, false);
  if (fields.size() < 7)
    return false;
  if (fields[0] == "Z" || fields[0] == "X")
    return true;
  constexpr unsigned long kPfExiting = 0x4; // include/linux/sched.h
  unsigned long flags;
  return !fields[6].getAsInteger(10, flags) && (flags & kPfExiting);
}

std::vector<pid_t> processDescendants(pid_t root) {
  std::set<pid_t> found;
  collectDescendants(childrenByParent(), root, found);
  return {found.begin(), found.end()};
}

void killProcessTree(const std::vector<pid_t> &roots) {
  std::set<pid_t> stopped;
  for (pid_t pid : roots)
    if (::kill(pid, SIGSTOP) == 0)
      stopped.insert(pid);
  // A round that stops a process may race with a fork it had already begun: walk again until a
  // round stops nothing new. Bounded, in case a process forks faster than /proc can be read.
  for (int round = 0; round < 100; ++round) {
    std::multimap<pid_t, pid_t> children = childrenByParent();
    std::set<pid_t> found;
    for (pid_t pid : roots)
      collectDescendants(children, pid, found);
    bool fresh = false;
    for (pid_t pid : found)
      if (!stopped.count(pid) && ::kill(pid, SIGSTOP) == 0) {
        stopped.insert(pid);
        fresh = true;
      }
    if (!fresh)
      break;
  }
  for (pid_t pid : roots)
    ::kill(pid, SIGKILL);
  for (pid_t pid : stopped)
    ::kill(pid, SIGKILL);
}

unsigned setProcessScheduling(pid_t pid, int policy, int priority) {
  unsigned set = 0;
  std::error_code ec;
  for (const auto &task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    pid_t tid = static_cast<pid_t>(std::strtol(task.path().filename().c_str(), nullptr, 10));
    sched_param param{};
    param.sched_priority = priority;
    if (tid > 0 && ::sched_setscheduler(tid, policy, &param) == 0)
      ++set;
  }
  return set;
}

} // namespace msc::exec

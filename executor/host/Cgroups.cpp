#include "executor/host/Cgroups.h"

#include "executor/host/Sys.h"
#include "support/ContractCgroup.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <cerrno>
#include <csignal>
#include <sys/stat.h>
#include <unistd.h>

namespace msc::exec {

CgroupLayout CgroupLayout::discover() {
  CgroupLayout l;
  std::optional<std::string> info = readFileText("/proc/self/mountinfo");
  if (!info)
    return l;
  llvm::SmallVector<llvm::StringRef, 64> lines;
  llvm::StringRef(*info).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    // id parent maj:min root mountpoint opts [optional...] - fstype source superopts
    auto [pre, post] = line.split(" - ");
    llvm::SmallVector<llvm::StringRef, 12> a, b;
    pre.split(a, ' ', -1, false);
    post.split(b, ' ', -1, false);
    if (a.size() < 5 || b.size() < 3)
      continue;
    llvm::StringRef mount = a[4], fstype = b[0], superOpts = b[2];
    if (fstype == "cgroup2" && l.v2Mount.empty())
      l.v2Mount = mount.str();
    else if (fstype == "cgroup") {
      llvm::SmallVector<llvm::StringRef, 8> opts;
      superOpts.split(opts, ',');
      for (llvm::StringRef o : opts)
        if (o == "cpuset" || o == "blkio" || o == "cpu" || o == "memory" || o == "hugetlb" || o == "freezer" ||
            o == "pids")
          l.v1Mounts.emplace(o.str(), mount.str());
    }
  }
  if (!l.v2Mount.empty())
    if (std::optional<std::string> c = readFileText(l.v2Mount + "/cgroup.controllers")) {
      llvm::SmallVector<llvm::StringRef, 16> names;
      llvm::StringRef(*c).trim().split(names, ' ', -1, false);
      for (llvm::StringRef n : names)
        l.v2Controllers.insert(n.str());
    }
  return l;
}

std::optional<std::string> CgroupLayout::dirFor(llvm::StringRef controller, llvm::StringRef contract) const {
  if (controller.empty() || onV2(controller))
    return v2Mount.empty() ? std::nullopt : std::optional<std::string>(v2Dir(contract));
  llvm::StringRef v1 = controller == "io" ? "blkio" : controller;
  auto it = v1Mounts.find(v1.str());
  if (it == v1Mounts.end())
    return std::nullopt;
  return contractCgroupDir(it->second, contract);
}

std::string CgroupLayout::v2Dir(llvm::StringRef contract) const { return contractCgroupDir(v2Mount, contract); }

std::string CgroupLayout::describe() const {
  std::string out = v2Mount.empty() ? "no cgroup2" : "cgroup2 at " + v2Mount;
  if (!v2Mount.empty()) {
    out += " (controllers:";
    for (const std::string &c : v2Controllers)
      out += " " + c;
    out += v2Controllers.empty() ? " none)" : ")";
  }
  for (auto &[c, m] : v1Mounts)
    out += "; v1 " + c + " at " + m;
  return out;
}

static bool makeDir(const std::string &path, bool cpusetV1, bool &created, std::string &error) {
  created = false;
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (errno == EEXIST)
      return true;
    error = "mkdir " + path + ": " + errnoText(errno);
    return false;
  }
  created = true;
  if (cpusetV1) {
    // A new v1 cpuset starts empty; copy the parent's CPUs and memory nodes.
    std::string parent = path.substr(0, path.rfind('/'));
    for (const char *file : {"cpuset.cpus", "cpuset.mems"}) {
      std::optional<std::string> value = readFileText(parent + "/" + file);
      std::string err;
      if (!value || !writeFileText(path + "/" + file, llvm::StringRef(*value).trim(), err)) {
        error = path + "/" + file + ": " + (value ? err : "cannot read the parent's value");
        ::rmdir(path.c_str());
        created = false;
        return false;
      }
    }
  }
  return true;
}

bool createCgroup(const std::string &path, bool cpusetV1, CgroupDir &out, std::string &error) {
  out = {path, false};
  std::string parent = path.substr(0, path.rfind('/'));
  bool parentCreated;
  if (!makeDir(parent, cpusetV1, parentCreated, error))
    return false;
  bool created;
  if (!makeDir(path, cpusetV1, created, error))
    return false;
  out.created = created;
  return true;
}

bool joinCgroup(const std::string &path, pid_t pid, std::string &error) {
  if (!writeFileText(path + "/cgroup.procs", std::to_string(pid), error)) {
    error = path + "/cgroup.procs: " + error;
    return false;
  }
  return true;
}

std::vector<pid_t> cgroupProcs(const std::string &path) {
  std::vector<pid_t> out;
  if (std::optional<std::string> text = readFileText(path + "/cgroup.procs")) {
    llvm::SmallVector<llvm::StringRef, 16> lines;
    llvm::StringRef(*text).split(lines, '\n', -1, false);
    for (llvm::StringRef l : lines) {
      int pid;
      if (!l.trim().getAsInteger(10, pid))
        out.push_back(pid);
    }
  }
  return out;
}

bool removeCgroup(const std::string &path, std::string &error) {
  if (!pathExists(path))
    return true;
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::vector<pid_t> procs = cgroupProcs(path);
    if (procs.empty() && ::rmdir(path.c_str()) == 0)
      return true;
    if (procs.empty() && errno != EBUSY) {
      error = "rmdir " + path + ": " + errnoText(errno);
      return false;
    }
    if (!procs.empty()) {
      std::string ignored;
      if (!pathExists(path + "/cgroup.kill") || !writeFileText(path + "/cgroup.kill", "1", ignored))
        for (pid_t p : procs)
          ::kill(p, SIGKILL);
    }
    ::usleep(10'000);
  }
  error = "rmdir " + path + ": processes are still in it";
  return false;
}

} // namespace msc::exec

#include "executor/lending/BorrowerCgroup.h"

#include "executor/host/Sys.h"
#include "support/CpuList.h"

#include <llvm/ADT/StringRef.h>

#include <chrono>
#include <csignal>
#include <sys/stat.h>
#include <thread>

namespace msc::exec::lending {

namespace {
constexpr const char *kParent = "mscale-borrowers";
// A freeze the kernel has not finished in this time is an error (a task stuck in the kernel).
constexpr auto kFreezeDeadline = std::chrono::milliseconds(200);
} // namespace

ReclaimMechanism reclaimMechanism(const CgroupLayout &layout) {
  if (!layout.v2Mount.empty() && layout.onV2("cpuset") && pathExists(layout.v2Mount + "/cgroup.subtree_control"))
    return ReclaimMechanism::CgroupV2;
  if (layout.v1Mounts.count("cpuset") && layout.v1Mounts.count("freezer"))
    return ReclaimMechanism::CgroupV1;
  return ReclaimMechanism::None;
}

const char *mechanismName(ReclaimMechanism m) {
  switch (m) {
  case ReclaimMechanism::CgroupV2: return "cgroup2 cpuset + cgroup.freeze";
  case ReclaimMechanism::CgroupV1: return "cgroup v1 cpuset + freezer";
  case ReclaimMechanism::None: return "none (no cpuset and freezer controllers)";
  }
  return "?";
}

std::optional<BorrowerCgroup> BorrowerCgroup::create(const CgroupLayout &layout, const std::string &name,
                                                     const BorrowerLimits &limits, std::string &error) {
  BorrowerCgroup b;
  b.name_ = name;
  b.mechanism_ = reclaimMechanism(layout);
  if (b.mechanism_ == ReclaimMechanism::None) {
    error = std::string("this node cannot take CPUs back: ") + mechanismName(b.mechanism_);
    return std::nullopt;
  }
  auto make = [&](const std::string &mount, bool cpusetV1, std::string &dir) {
    CgroupDir made;
    dir = mount + "/" + kParent + "/" + name;
    if (!createCgroup(dir, cpusetV1, made, error))
      return false;
    if (made.created)
      b.created_.push_back(dir);
    return true;
  };
  bool v2 = b.mechanism_ == ReclaimMechanism::CgroupV2;
  if (v2) {
    std::string e;
    // The controllers must be enabled for the children of the parent (and of the root).
    for (const std::string &dir : {layout.v2Mount, layout.v2Mount + "/" + kParent}) {
      ::mkdir(dir.c_str(), 0755);
      for (const char *c : {"+cpuset", "+memory", "+pids"})
        writeFileText(dir + "/cgroup.subtree_control", c, e);
    }
    if (!make(layout.v2Mount, false, b.cpusetDir_))
      return std::nullopt;
    b.freezerDir_ = b.memoryDir_ = b.pidsDir_ = b.cpusetDir_;
  } else {
    if (!make(layout.v1Mounts.at("cpuset"), true, b.cpusetDir_) ||
        !make(layout.v1Mounts.at("freezer"), false, b.freezerDir_))
      return std::nullopt;
    if (layout.v1Mounts.count("memory") && !make(layout.v1Mounts.at("memory"), false, b.memoryDir_))
      return std::nullopt;
    if (layout.v1Mounts.count("pids") && !make(layout.v1Mounts.at("pids"), false, b.pidsDir_))
      return std::nullopt;
  }
  std::string e;
  if (limits.memoryBytes && !b.memoryDir_.empty() &&
      !writeFileText(b.memoryDir_ + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), std::to_string(limits.memoryBytes), e)) {
    error = "memory limit of borrower '" + name + "': " + e;
    return std::nullopt;
  }
  if (limits.maxPids && !b.pidsDir_.empty() && !writeFileText(b.pidsDir_ + "/pids.max", std::to_string(limits.maxPids), e)) {
    error = "pids limit of borrower '" + name + "': " + e;
    return std::nullopt;
  }
  if (!b.freeze(true, error))
    return std::nullopt;
  return std::optional<BorrowerCgroup>(std::move(b));
}

BorrowerCgroup::BorrowerCgroup(BorrowerCgroup &&o) noexcept
    : mechanism_(o.mechanism_), name_(std::move(o.name_)), cpusetDir_(std::move(o.cpusetDir_)),
      freezerDir_(std::move(o.freezerDir_)), memoryDir_(std::move(o.memoryDir_)), pidsDir_(std::move(o.pidsDir_)),
      created_(std::move(o.created_)), cpus_(std::move(o.cpus_)), frozen_(o.frozen_) {
  o.created_.clear();
  o.cpusetDir_.clear();
}

BorrowerCgroup::~BorrowerCgroup() {
  if (cpusetDir_.empty())
    return;
  end();
  std::string ignored;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it)
    removeCgroup(*it, ignored);
}

bool BorrowerCgroup::join(pid_t pid, std::string &error) {
  for (const std::string *dir : {&cpusetDir_, &freezerDir_, &memoryDir_, &pidsDir_}) {
    if (dir->empty() || (dir != &cpusetDir_ && *dir == cpusetDir_))
      continue;
    if (!joinCgroup(*dir, pid, error))
      return false;
  }
  return true;
}

bool BorrowerCgroup::freeze(bool on, std::string &error) {
  bool v2 = mechanism_ == ReclaimMechanism::CgroupV2;
  std::string file = freezerDir_ + (v2 ? "/cgroup.freeze" : "/freezer.state");
  if (!writeFileText(file, v2 ? (on ? "1" : "0") : (on ? "FROZEN" : "THAWED"), error)) {
    error = file + ": " + error;
    return false;
  }
  frozen_ = on;
  if (!on)
    return true;
  // The kernel freezes asynchronously: the loan is back only once every task is frozen.
  auto deadline = std::chrono::steady_clock::now() + kFreezeDeadline;
  for (;;) {
    std::optional<std::string> state = readFileText(freezerDir_ + (v2 ? "/cgroup.events" : "/freezer.state"));
    if (state && (v2 ? llvm::StringRef(*state).contains("frozen 1") : llvm::StringRef(*state).trim() == "FROZEN"))
      return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      error = "borrower '" + name_ + "' did not freeze within " + std::to_string(kFreezeDeadline.count()) + " ms";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool BorrowerCgroup::setCpus(const CpuSet &cpus, std::string &error) {
  if (cpus.empty()) {
    if (!frozen_ && !freeze(true, error))
      return false;
    cpus_.clear();
    return true;
  }
  if (cpus != cpus_ && !writeFileText(cpusetDir_ + "/cpuset.cpus", formatCpuList(cpus), error)) {
    error = cpusetDir_ + "/cpuset.cpus: " + error;
    return false;
  }
  cpus_ = cpus;
  return !frozen_ || freeze(false, error);
}

std::vector<pid_t> BorrowerCgroup::procs() const { return cgroupProcs(freezerDir_); }

void BorrowerCgroup::end() {
  for (pid_t p : procs())
    ::kill(p, SIGKILL);
  std::string ignored;
  if (frozen_)
    freeze(false, ignored);
}

} // namespace msc::exec::lending

#include "executor/lending/BorrowerCgroup.h"

#include "executor/host/Sys.h"
#include "support/CpuList.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <chrono>
#include <csignal>
#include <cstring>
#include <sched.h>
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
      for (const char *c : {"+cpuset", "+cpu", "+io", "+memory", "+pids"})
        writeFileText(dir + "/cgroup.subtree_control", c, e);
    }
    if (!make(layout.v2Mount, false, b.cpusetDir_))
      return std::nullopt;
    b.freezerDir_ = b.memoryDir_ = b.pidsDir_ = b.cpusetDir_;
    if (layout.onV2("cpu"))
      b.cpuDir_ = b.cpusetDir_;
    if (layout.onV2("io"))
      b.ioDir_ = b.cpusetDir_;
  } else {
    if (!make(layout.v1Mounts.at("cpuset"), true, b.cpusetDir_) ||
        !make(layout.v1Mounts.at("freezer"), false, b.freezerDir_))
      return std::nullopt;
    // A v1 cpuset that balances load has the kernel rebuild every scheduling domain at each change
    // of its CPUs, milliseconds on a busy node: the borrower's would be slower to shrink than most
    // bounds. Its CPUs are balanced by the root's domain all the same.
    if (std::string e; !writeFileText(b.cpusetDir_ + "/cpuset.sched_load_balance", "0", e)) {
      error = "borrower '" + name + "': " + b.cpusetDir_ + "/cpuset.sched_load_balance: " + e;
      return std::nullopt;
    }
    if (layout.v1Mounts.count("cpu") && !make(layout.v1Mounts.at("cpu"), false, b.cpuDir_))
      return std::nullopt;
    if (layout.v1Mounts.count("cpuacct") && !make(layout.v1Mounts.at("cpuacct"), false, b.cpuacctDir_))
      return std::nullopt;
    if (layout.v1Mounts.count("blkio") && !make(layout.v1Mounts.at("blkio"), false, b.ioDir_))
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
  if (!b.setIdle(true, error))
    return std::nullopt;
  if (!b.writeFreezer(true, error) || !b.waitSettled(error))
    return std::nullopt;
  return std::optional<BorrowerCgroup>(std::move(b));
}

BorrowerCgroup::BorrowerCgroup(BorrowerCgroup &&o) noexcept
    : mechanism_(o.mechanism_), name_(std::move(o.name_)), cpusetDir_(std::move(o.cpusetDir_)),
      freezerDir_(std::move(o.freezerDir_)), cpuDir_(std::move(o.cpuDir_)), cpuacctDir_(std::move(o.cpuacctDir_)),
      ioDir_(std::move(o.ioDir_)), memoryDir_(std::move(o.memoryDir_)), pidsDir_(std::move(o.pidsDir_)),
      throttled_(std::move(o.throttled_)), throttledIds_(std::move(o.throttledIds_)),
      created_(std::move(o.created_)), cpus_(std::move(o.cpus_)), frozen_(o.frozen_), freezing_(o.freezing_), idle_(o.idle_),
      freezeAsked_(o.freezeAsked_) {
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

// The borrower's cgroup runs SCHED_IDLE (cpu.idle, 5.15 and later), else with the least weight the
// kernel gives: an owner thread that wakes on a lent CPU (one that has just left it, a housekeeping
// thread its cpuset still allows there) preempts the borrower at once instead of waiting its fair
// share behind every borrower thread.
//
// A freeze, though, completes only once each task has run again (it enters the freezer on its way
// back to user space), and an idle task queued behind a busy owner thread waits its turn for up to
// a second under EEVDF: long enough to miss the freeze deadline and be ended. So while a freeze is
// under way the cgroup has the kernel's default weight; frozen tasks do not run, and it is idle
// again before it thaws.
bool BorrowerCgroup::setIdle(bool idle, std::string &error) {
  if (cpuDir_.empty() || idle == idle_)
    return true;
  bool v2 = mechanism_ == ReclaimMechanism::CgroupV2;
  std::string e;
  if (writeFileText(cpuDir_ + "/cpu.idle", idle ? "1" : "0", e)) {
    idle_ = idle;
    return true;
  }
  std::string file = cpuDir_ + (v2 ? "/cpu.weight" : "/cpu.shares");
  if (writeFileText(file, v2 ? (idle ? "1" : "100") : (idle ? "2" : "1024"), e)) {
    idle_ = idle;
    return true;
  }
  error = "borrower '" + name_ + "': " + file + ": " + e;
  return false;
}

bool BorrowerCgroup::join(pid_t pid, std::string &error) {
  for (const std::string *dir : {&cpusetDir_, &freezerDir_, &cpuDir_, &cpuacctDir_, &ioDir_, &memoryDir_, &pidsDir_}) {
    if (dir->empty() || (dir != &cpusetDir_ && *dir == cpusetDir_) || (dir == &cpuacctDir_ && *dir == cpuDir_))
      continue;
    if (!joinCgroup(*dir, pid, error))
      return false;
  }
  // Without a cpu controller the policy is the task's own (inherited by what it forks; a borrower
  // could raise it again, which cpu.idle does not allow).
  if (cpuDir_.empty()) {
    sched_param none{};
    if (::sched_setscheduler(pid, SCHED_IDLE, &none) != 0) {
      error = "borrower '" + name_ + "': SCHED_IDLE for pid " + std::to_string(pid) + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

bool BorrowerCgroup::writeFreezer(bool on, std::string &error) {
  // Thawed idle; freezing at the default weight (setIdle). A weight that cannot be changed does
  // not stop the freeze: it may only take longer.
  std::string ignored;
  if (!on && !setIdle(true, error))
    return false;
  if (on)
    setIdle(false, ignored);
  bool v2 = mechanism_ == ReclaimMechanism::CgroupV2;
  std::string file = freezerDir_ + (v2 ? "/cgroup.freeze" : "/freezer.state");
  if (!writeFileText(file, v2 ? (on ? "1" : "0") : (on ? "FROZEN" : "THAWED"), error)) {
    error = file + ": " + error;
    return false;
  }
  frozen_ = freezing_ = on;
  if (on)
    freezeAsked_ = std::chrono::steady_clock::now();
  return true;
}

BorrowerCgroup::Settle BorrowerCgroup::settle(std::string &error) {
  if (!freezing_)
    return Settle::Done;
  // The kernel freezes asynchronously: the loan is back only once every task is frozen.
  bool v2 = mechanism_ == ReclaimMechanism::CgroupV2;
  std::optional<std::string> state = readFileText(freezerDir_ + (v2 ? "/cgroup.events" : "/freezer.state"));
  if (state && (v2 ? llvm::StringRef(*state).contains("frozen 1") : llvm::StringRef(*state).trim() == "FROZEN")) {
    freezing_ = false;
    std::string ignored;
    setIdle(true, ignored); // its tasks do not run until it thaws, which sets it again
    return Settle::Done;
  }
  if (std::chrono::steady_clock::now() - freezeAsked_ >= kFreezeDeadline) {
    error = "borrower '" + name_ + "' did not freeze within " + std::to_string(kFreezeDeadline.count()) + " ms";
    return Settle::Failed;
  }
  return Settle::Pending;
}

bool BorrowerCgroup::waitSettled(std::string &error) {
  for (;;) {
    switch (settle(error)) {
    case Settle::Done: return true;
    case Settle::Failed: return false;
    case Settle::Pending: std::this_thread::sleep_for(std::chrono::microseconds(20)); break;
    }
  }
}

bool BorrowerCgroup::setCpus(const CpuSet &cpus, std::string &error) {
  if (cpus.empty()) {
    if (!frozen_ && !writeFreezer(true, error))
      return false;
    cpus_.clear();
    return true;
  }
  if (cpus != cpus_ && !writeFileText(cpusetDir_ + "/cpuset.cpus", formatCpuList(cpus), error)) {
    error = cpusetDir_ + "/cpuset.cpus: " + error;
    return false;
  }
  cpus_ = cpus;
  return !frozen_ || writeFreezer(false, error);
}

namespace {
// The kernel's MAJ:MIN of the disk `device` is on: io.max and blkio throttle whole disks.
std::optional<std::string> diskId(const std::string &device, std::string &error) {
  std::string dir = "/sys/class/block/" + device;
  if (pathExists(dir + "/partition"))
    dir += "/..";
  std::optional<std::string> id = readFileText(dir + "/dev");
  if (!id) {
    error = "no block device '" + device + "' on this node";
    return std::nullopt;
  }
  return llvm::StringRef(*id).trim().str();
}
} // namespace

bool BorrowerCgroup::throttleIo(const std::vector<std::string> &devices, std::string &error) {
  if (devices == throttled_)
    return true;
  if (ioDir_.empty()) {
    error = "no io or blkio controller for borrower '" + name_ + "'";
    return false;
  }
  std::vector<std::string> ids;
  for (const std::string &d : devices) {
    std::optional<std::string> id = diskId(d, error);
    if (!id)
      return false;
    ids.push_back(*id);
  }
  bool v2 = mechanism_ == ReclaimMechanism::CgroupV2;
  auto set = [&](const std::string &id, bool on) {
    std::string bps = on ? std::to_string(kThrottledBps) : (v2 ? "max" : "0");
    std::string iops = on ? std::to_string(kThrottledIops) : (v2 ? "max" : "0");
    if (v2)
      return writeFileText(ioDir_ + "/io.max",
                           id + " rbps=" + bps + " wbps=" + bps + " riops=" + iops + " wiops=" + iops, error);
    for (const char *f : {"read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device"})
      if (!writeFileText(ioDir_ + "/blkio.throttle." + f, id + " " + (llvm::StringRef(f).contains("iops") ? iops : bps),
                         error))
        return false;
    return true;
  };
  for (const std::string &id : ids)
    if (!set(id, true)) {
      error = "borrower '" + name_ + "': IO throttle on " + id + ": " + error;
      return false;
    }
  for (const std::string &id : throttledIds_)
    if (std::find(ids.begin(), ids.end(), id) == ids.end())
      set(id, false); // a lift that fails leaves it throttled: the owner loses nothing
  throttled_ = devices;
  throttledIds_ = ids;
  return true;
}

std::optional<uint64_t> BorrowerCgroup::cpuTimeNs() const {
  if (mechanism_ == ReclaimMechanism::CgroupV2) {
    std::optional<std::string> stat = readFileText(cpusetDir_ + "/cpu.stat");
    if (!stat)
      return std::nullopt;
    for (llvm::StringRef rest = *stat; !rest.empty();) {
      auto [line, next] = rest.split('\n');
      rest = next;
      uint64_t usec = 0;
      if (line.consume_front("usage_usec ") && !line.trim().getAsInteger(10, usec))
        return usec * 1000;
    }
    return std::nullopt;
  }
  if (cpuacctDir_.empty())
    return std::nullopt;
  std::optional<std::string> usage = readFileText(cpuacctDir_ + "/cpuacct.usage");
  uint64_t ns = 0;
  if (!usage || llvm::StringRef(*usage).trim().getAsInteger(10, ns))
    return std::nullopt;
  return ns;
}

std::vector<pid_t> BorrowerCgroup::procs() const { return cgroupProcs(freezerDir_); }

void BorrowerCgroup::end() {
  for (pid_t p : procs())
    ::kill(p, SIGKILL);
  std::string ignored;
  if (frozen_)
    writeFreezer(false, ignored);
}

std::unique_ptr<FreezerKeepAlive> FreezerKeepAlive::create(const CgroupLayout &layout) {
  if (reclaimMechanism(layout) != ReclaimMechanism::CgroupV1)
    return nullptr;
  std::unique_ptr<FreezerKeepAlive> k(new FreezerKeepAlive);
  std::string parent = layout.v1Mounts.at("freezer") + "/" + kParent, error;
  ::mkdir(parent.c_str(), 0755);
  // One a process, each named by its pid: a process that ends thaws its own, never another's. One
  // left by a process that died (its pid gone) is thawed and removed here.
  constexpr llvm::StringLiteral kPrefix = "freezer-kept-on.";
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(parent, ec)) {
    std::string name = entry.path().filename().string();
    unsigned long owner = 0;
    if (!llvm::StringRef(name).starts_with(kPrefix) ||
        llvm::StringRef(name).drop_front(kPrefix.size()).split('.').first.getAsInteger(10, owner) ||
        ::kill(pid_t(owner), 0) == 0 || errno != ESRCH)
      continue;
    std::string ignored;
    writeFileText(entry.path().string() + "/freezer.state", "THAWED", ignored);
    removeCgroup(entry.path().string(), ignored);
  }
  static std::atomic<unsigned> instances{0};
  k->dir_ = parent + "/" + kPrefix.str() + std::to_string(::getpid()) + "." + std::to_string(instances++);
  CgroupDir made;
  if (!createCgroup(k->dir_, false, made, error))
    return nullptr;
  k->created_ = made.created;
  if (!writeFileText(k->dir_ + "/freezer.state", "FROZEN", error))
    return nullptr; // removed by the destructor
  return k;
}

FreezerKeepAlive::~FreezerKeepAlive() {
  std::string ignored;
  writeFileText(dir_ + "/freezer.state", "THAWED", ignored);
  if (created_)
    removeCgroup(dir_, ignored);
}

} // namespace msc::exec::lending

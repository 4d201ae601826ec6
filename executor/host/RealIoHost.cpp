// host_backend real, IO: per contract, cgroup io weight and bandwidth limits where the kernel offers
// them (v2 io.weight / io.max; v1 blkio.bfq.weight / blkio.throttle.*_bps_device), the node config's
// NVMe scheduler on the plan's block devices, and a check that io_uring accepts each role's queue
// depth. What the node cannot do is a WRN_EXEC_002 naming the setting, never silently dropped.
#include "executor/host/Backends.h"

#include "executor/core/Logger.h"
#include "executor/host/Sys.h"
#include "support/ContractCgroup.h"

#include <liburing.h>

#include <algorithm>
#include <optional>
#include <unistd.h>

namespace msc::exec {

namespace {

// The disk a block device (or partition) belongs to: "nvme0n1p1" -> "nvme0n1".
std::string diskOf(const std::string &dev) {
  std::string name = dev.rfind("/dev/", 0) == 0 ? dev.substr(5) : dev;
  if (pathExists("/sys/block/" + name))
    return name;
  char buf[512];
  std::string link = "/sys/class/block/" + name;
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n > 0) {
    std::string target(buf, static_cast<size_t>(n));
    size_t slash = target.rfind('/');
    if (slash != std::string::npos) {
      std::string parent = target.substr(0, slash);
      return parent.substr(parent.rfind('/') + 1);
    }
  }
  return name;
}

std::optional<std::string> majorMinor(const std::string &dev) {
  std::string name = dev.rfind("/dev/", 0) == 0 ? dev.substr(5) : dev;
  if (std::optional<std::string> t = readFileText("/sys/class/block/" + name + "/dev"))
    return llvm::StringRef(*t).trim().str();
  return std::nullopt;
}

// "none [mq-deadline] kyber bfq" -> "mq-deadline"
std::string activeScheduler(llvm::StringRef text) {
  size_t a = text.find('['), b = text.find(']');
  return a == llvm::StringRef::npos || b == llvm::StringRef::npos ? text.trim().str() : text.slice(a + 1, b).str();
}

class RealIoHost final : public IoHost {
public:
  explicit RealIoHost(const ApplierOptions &o) : opts_(o) {}

  bool checkRingDepth(ApplyContext &ctx, const plan::IoBinding &b, std::string &) override {
    io_uring ring;
    int rc = io_uring_queue_init(b.io_uring_depth(), &ring, 0);
    if (rc < 0) {
      ctx.diags.report(DiagCode::ERR_EXEC_007) << b.io_uring_depth() << b.role() << errnoText(-rc);
      return false;
    }
    io_uring_queue_exit(&ring);
    return true;
  }

  bool applySettings(ApplyContext &ctx, const plan::IoBinding &b, std::vector<std::string> &lines) override {
    if (!b.block_device().empty() && !opts_.nvmeScheduler.empty())
      setScheduler(ctx, b, lines);
    if (b.io_weight() && !applyWeight(ctx, b, lines))
      return false;
    if (b.io_limit_bps() && !applyLimit(ctx, b, lines))
      return false;
    return true;
  }

  bool attach(ApplyContext &ctx, pid_t worker) override {
    std::string error;
    if (dir_ && !joinCgroup(dir_->path, worker, error)) {
      ctx.diags.report(DiagCode::ERR_EXEC_003) << dir_->path << error;
      return false;
    }
    return true;
  }

  void release(ApplyContext &ctx) override {
    std::string error;
    for (auto it = schedulers_.rbegin(); it != schedulers_.rend(); ++it)
      if (!writeFileText(it->first, it->second, error))
        ctx.log.error(ctx.contractId, "io: cannot restore " + it->first + ": " + error);
    schedulers_.clear();
    if (dir_ && dir_->created && !removeCgroup(dir_->path, error))
      ctx.log.error(ctx.contractId, "io: " + error);
    dir_.reset();
  }

private:
  // The contract's io cgroup: v2 mscale/<ID> (made by the CPU backend, or here) or v1 blkio.
  // nullopt with an error reported when it cannot be made.
  std::optional<std::string> ioDir(ApplyContext &ctx) {
    if (dir_)
      return dir_->path;
    bool v2 = opts_.cgroups.onV2("io");
    std::optional<std::string> dir = opts_.cgroups.dirFor("io", ctx.contractId);
    if (!dir)
      return std::nullopt;
    std::string error;
    if (v2) {
      writeFileText(opts_.cgroups.v2Mount + "/cgroup.subtree_control", "+io", error);
      if (!pathExists(*dir)) {
        CgroupDir d;
        if (!createCgroup(*dir, false, d, error)) {
          ctx.diags.report(DiagCode::ERR_EXEC_003) << *dir << error;
          return std::nullopt;
        }
        dir_ = d;
      }
      writeFileText(contractCgroupParent(opts_.cgroups.v2Mount) + "/cgroup.subtree_control", "+io", error);
      if (!dir_)
        dir_ = CgroupDir{*dir, false};
      return *dir;
    }
    CgroupDir d;
    if (!createCgroup(*dir, false, d, error)) {
      ctx.diags.report(DiagCode::ERR_EXEC_003) << *dir << error;
      return std::nullopt;
    }
    dir_ = d;
    return *dir;
  }

  // The io cgroup for `setting`: nullopt when the node has no io controller (a WRN_EXEC_002 for the
  // setting) or when the directory could not be made (an error, and `failed`).
  std::optional<std::string> ioDirFor(ApplyContext &ctx, const std::string &setting, bool &failed) {
    if (!opts_.cgroups.onV2("io") && !opts_.cgroups.v1Mounts.count("blkio")) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << "no io controller on cgroup v2 and no v1 blkio hierarchy";
      return std::nullopt;
    }
    unsigned before = ctx.diags.errorCount();
    std::optional<std::string> dir = ioDir(ctx);
    failed = !dir && ctx.diags.errorCount() != before;
    return dir;
  }

  bool applyWeight(ApplyContext &ctx, const plan::IoBinding &b, std::vector<std::string> &lines) {
    std::string setting = "io_weight " + std::to_string(b.io_weight()) + " of role '" + b.role() + "'";
    bool failed = false;
    std::optional<std::string> dir = ioDirFor(ctx, setting, failed);
    if (!dir)
      return !failed;
    std::string error;
    if (opts_.cgroups.onV2("io")) {
      if (!writeFileText(*dir + "/io.weight", "default " + std::to_string(b.io_weight()), error)) {
        ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << (*dir + "/io.weight: " + error);
        return true;
      }
      lines.push_back("cgroup2 io.weight " + std::to_string(b.io_weight()) + " (" + *dir + ")");
      return true;
    }
    // v1: only BFQ has a weight (1..1000); the plan's weight is on the v2 scale 1..10000.
    std::string file = *dir + "/blkio.bfq.weight";
    if (!pathExists(file)) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << "the v1 blkio hierarchy has no blkio.bfq.weight (BFQ is not built in)";
      return true;
    }
    unsigned w = std::clamp(b.io_weight() / 10, 1u, 1000u);
    if (!writeFileText(file, std::to_string(w), error)) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << (file + ": " + error);
      return true;
    }
    lines.push_back("cgroup v1 blkio.bfq.weight " + std::to_string(w) + " (" + *dir + ")");
    if (!b.block_device().empty()) {
      std::string disk = diskOf(b.block_device());
      if (std::optional<std::string> s = readFileText("/sys/block/" + disk + "/queue/scheduler"))
        if (activeScheduler(*s) != "bfq")
          ctx.diags.report(DiagCode::WRN_EXEC_002)
              << setting << "'" + disk + "' uses the " + activeScheduler(*s) +
                                " scheduler; BFQ weights only act under bfq (set nvme_scheduler: bfq)";
    } else {
      ctx.log.info(ctx.contractId, "io: role '" + b.role() +
                                       "' names no block device; its weight acts on devices that use bfq");
    }
    return true;
  }

  bool applyLimit(ApplyContext &ctx, const plan::IoBinding &b, std::vector<std::string> &lines) {
    uint64_t bytesPerSecond = b.io_limit_bps() / 8; // the plan's bandwidth is in bits per second
    std::string setting = "io_limit of role '" + b.role() + "'";
    if (b.block_device().empty()) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << "cgroup limits are per device and the role names no io_queue";
      return true;
    }
    std::optional<std::string> mm = majorMinor(b.block_device());
    if (!mm) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << "'" + b.block_device() + "' has no major:minor in sysfs";
      return true;
    }
    bool failed = false;
    std::optional<std::string> dir = ioDirFor(ctx, setting, failed);
    if (!dir)
      return !failed;
    std::string error, bps = std::to_string(bytesPerSecond);
    if (opts_.cgroups.onV2("io")) {
      if (!writeFileText(*dir + "/io.max", *mm + " rbps=" + bps + " wbps=" + bps, error))
        ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << (*dir + "/io.max: " + error);
      else
        lines.push_back("cgroup2 io.max " + *mm + " rbps=wbps=" + bps);
      return true;
    }
    for (const char *f : {"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"})
      if (!writeFileText(*dir + "/" + f, *mm + " " + bps, error)) {
        ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << (*dir + "/" + f + ": " + error);
        return true;
      }
    lines.push_back("cgroup v1 blkio.throttle read/write " + *mm + " " + bps + " B/s");
    return true;
  }

  void setScheduler(ApplyContext &ctx, const plan::IoBinding &b, std::vector<std::string> &lines) {
    std::string disk = diskOf(b.block_device());
    std::string path = "/sys/block/" + disk + "/queue/scheduler";
    std::optional<std::string> current = readFileText(path);
    if (!current) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << "nvme_scheduler " + opts_.nvmeScheduler << "'" + path + "' cannot be read";
      return;
    }
    std::string old = activeScheduler(*current), error;
    if (old == opts_.nvmeScheduler)
      return;
    if (!writeFileText(path, opts_.nvmeScheduler, error)) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << "nvme_scheduler " + opts_.nvmeScheduler << (path + ": " + error);
      return;
    }
    schedulers_.push_back({path, old});
    lines.push_back("scheduler of " + disk + ": " + opts_.nvmeScheduler + " (was " + old + ")");
  }

  ApplierOptions opts_;
  std::optional<CgroupDir> dir_;
  std::vector<std::pair<std::string, std::string>> schedulers_;
};

} // namespace

std::unique_ptr<IoHost> createRealIoHost(const ApplierOptions &options) { return std::make_unique<RealIoHost>(options); }

} // namespace msc::exec

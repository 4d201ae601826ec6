#include "executor/agent/NodeLending.h"

#include "executor/host/Sys.h"
#include "executor/lending/PlanLending.h"
#include "support/CpuList.h"
#include "support/Diagnostic.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <csignal>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <fcntl.h>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace msc::exec {

using namespace lending;

namespace {
constexpr const char *kBorrowersDir = "mscale-borrowers";

void report(Logger &log, const std::string &contract, DiagCode code, std::initializer_list<std::string> args) {
  LogDiagnosticPrinter printer(log);
  printer.setContract(contract);
  DiagnosticEngine d(nullptr, printer);
  auto builder = d.report(code);
  for (const std::string &a : args)
    builder << a;
}

std::vector<std::string> files(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (e->d_type == DT_REG && e->d_name[0] != '.')
        out.push_back(e->d_name);
    ::closedir(d);
  }
  return out;
}
} // namespace

NodeLending::NodeLending(Logger &log, bool simulated, std::string recordDir)
    : log_(log), recordDir_(std::move(recordDir)) {
  if (simulated) {
    sim_ = std::make_unique<SimLoans>(simClock_);
    mechanism_ = "sim";
    node_ = std::make_unique<LendingNode>(clock_, *sim_);
  } else {
    CgroupLayout layout = CgroupLayout::discover();
    mechanism_ = mechanismName(reclaimMechanism(layout));
    if (reclaimMechanism(layout) != ReclaimMechanism::None) {
      cgroups_ = std::make_unique<CgroupLoans>(layout);
      endLeftBorrowers();
      node_ = std::make_unique<LendingNode>(clock_, *cgroups_);
    }
  }
  if (node_)
  {
    node_->setShareMechanism(lending::kGpuShare, &gpuLoans_);
    node_->setShareMechanism(lending::kRdmaShare, &rdmaLoans_);
  }
  if (node_)
    loop_ = std::make_unique<LendingLoop>(*node_, [this](const std::vector<std::string> &e) { onErrors(e); });
}

NodeLending::~NodeLending() {
  if (loop_)
    loop_->stop();
  loop_.reset();
  node_.reset();
  for (auto &[name, page] : owners_)
    unmapPage(page);
  for (auto &[name, page] : borrowerPages_)
    unmapPage(page);
  cgroups_.reset(); // ends every borrower still here
}

// An agent that died left its borrowers' cgroups: their processes are ended (thawed first, a frozen
// task does not die) and the cgroups removed. Their loans are not taken up again: the owners they
// borrowed from are re-admitted without their workers, and a borrower is started afresh.
void NodeLending::endLeftBorrowers() {
  CgroupLayout layout = CgroupLayout::discover();
  std::vector<std::string> roots;
  if (!layout.v2Mount.empty())
    roots.push_back(layout.v2Mount + "/" + kBorrowersDir);
  for (const auto &[controller, mount] : layout.v1Mounts)
    roots.push_back(mount + "/" + kBorrowersDir);
  if (recordDir_.empty())
    return;
  std::map<std::string, std::vector<std::string>> dirsOf; // borrower -> its directories
  for (const std::string &name : files(recordDir_)) {
    for (const std::string &root : roots)
      if (pathExists(root + "/" + name))
        dirsOf[name].push_back(root + "/" + name);
    ::unlink((recordDir_ + "/" + name).c_str());
  }
  for (const auto &[name, dirs] : dirsOf) {
    std::set<pid_t> pids;
    std::string ignored;
    for (const std::string &dir : dirs) {
      for (pid_t p : cgroupProcs(dir))
        pids.insert(p);
      if (pathExists(dir + "/freezer.state"))
        writeFileText(dir + "/freezer.state", "THAWED", ignored);
      if (pathExists(dir + "/cgroup.freeze"))
        writeFileText(dir + "/cgroup.freeze", "0", ignored);
    }
    for (pid_t p : pids)
      ::kill(p, SIGKILL);
    for (int i = 0; i < 100; ++i) {
      bool empty = true;
      for (const std::string &dir : dirs)
        empty &= cgroupProcs(dir).empty();
      if (empty)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (const std::string &dir : dirs)
      removeCgroup(dir, ignored);
    report(log_, name, DiagCode::WRN_EXEC_005,
           {name, std::to_string(pids.size()) + " process" + (pids.size() == 1 ? "" : "es") + " ended, its loans dropped"});
  }
}

void NodeLending::onErrors(const std::vector<std::string> &errors) {
  for (const std::string &e : errors)
    report(log_, "-", DiagCode::WRN_EXEC_004, {e});
}

bool NodeLending::mapPage(const worker::ControlPageHost &page, MappedPage &out, std::string &error) {
  struct stat st{};
  if (::fstat(page.fd(), &st) != 0) {
    error = std::string("its control page: ") + std::strerror(errno);
    return false;
  }
  out.fd = ::fcntl(page.fd(), F_DUPFD_CLOEXEC, 3);
  if (out.fd < 0) {
    error = std::string("its control page: ") + std::strerror(errno);
    return false;
  }
  out.map = ::mmap(nullptr, sizeof(mscale::worker::ControlPage), PROT_READ | PROT_WRITE, MAP_SHARED, out.fd, 0);
  if (out.map == MAP_FAILED) {
    error = std::string("its control page: ") + std::strerror(errno);
    ::close(out.fd);
    out = {};
    return false;
  }
  out.inode = st.st_ino;
  return true;
}

void NodeLending::unmapPage(MappedPage &p) {
  if (p.map && p.map != MAP_FAILED)
    ::munmap(p.map, sizeof(mscale::worker::ControlPage));
  if (p.fd >= 0)
    ::close(p.fd);
  p.map = nullptr;
  p.fd = -1;
}

void NodeLending::watchPages() {
  std::vector<std::atomic<uint32_t> *> words;
  for (auto &[name, page] : owners_)
    words.push_back(&static_cast<mscale::worker::ControlPage *>(page.map)->phase);
  loop_->watch(std::move(words));
}

bool NodeLending::addOwner(const plan::Plan &plan, const worker::ControlPageHost &page, std::string &error,
                           const OwnerDevices &devices) {
  std::optional<Owner> owner = ownerOf(plan);
  if (!owner) {
    error = "its plan has no phases";
    return false;
  }
  if (!loop_) { // nothing can be lent here: the owner keeps everything, as without phases
    error = std::string("this node cannot take CPUs back: ") + mechanism_;
    return false;
  }
  if (owners_.count(owner->contract)) {
    error = "it lends on this node already";
    return false;
  }
  MappedPage mapped;
  if (!mapPage(page, mapped, error))
    return false;
  for (const PhaseSpec &p : owner->phases)
    mapped.phaseNames.push_back(p.name);
  mapped.reclaimWithinNs = owner->reclaimWithinNs;
  mapped.cpus = owner->cpus;
  owner->startedNs = clock_.monotonicNs();
  mostLent_[owner->contract] = mostLent(*owner);
  auto *cp = static_cast<mscale::worker::ControlPage *>(mapped.map);
  owners_[owner->contract] = mapped;
  std::string gpuError, rdmaError;
  loop_->withNode([&](LendingNode &n) {
    // Each share is the session's slice or group of the same plan index; a kind of which one cannot
    // be had lends nothing of that kind.
    size_t registered = 0;
    for (const auto &[index, id] : devices.slices)
      if (devices.gpuBackend && index >= 0 && size_t(index) < owner->gpuShares.size() && gpuError.empty() &&
          gpuLoans_.addShare(owner->contract, unsigned(index), *devices.gpuBackend, id,
                             owner->gpuShares[size_t(index)].units, owner->gpuShares[size_t(index)].gpuIndex, gpuError))
        ++registered;
    if (registered != owner->gpuShares.size()) {
      gpuLoans_.removeOwner(owner->contract);
      owner->gpuShares.clear();
      for (PhaseSpec &p : owner->phases)
        p.keptShares[kGpuShare].clear();
    }
    registered = 0;
    for (const auto &[index, id] : devices.qpGroups)
      if (devices.rdmaBackend && index >= 0 && index < plan.rdma_size() && rdmaError.empty() &&
          rdmaLoans_.addShare(owner->contract, unsigned(index), *devices.rdmaBackend, id, plan.rdma(index), rdmaError))
        ++registered;
    if (registered != owner->rdmaShares.size()) {
      rdmaLoans_.removeOwner(owner->contract);
      owner->rdmaShares.clear();
      for (PhaseSpec &p : owner->phases)
        p.keptShares[kRdmaShare].clear();
    }
    n.addOwner(*owner, cp);
  });
  if (!gpuError.empty())
    log_.warn(owner->contract, "its GPU slices are not lent: " + gpuError);
  if (!rdmaError.empty())
    log_.warn(owner->contract, "its queue pairs are not lent: " + rdmaError);
  PerShareKind<unsigned> &units = mostLentUnits_[owner->contract];
  for (unsigned k = 0; k < kShareKinds; ++k)
    units[k] = mostLentUnits(*owner, ShareKind(k));
  watchPages();
  loop_->start();
  log_.info(owner->contract, "lends what its phases do not keep (" + std::to_string(owner->phases.size()) +
                                 " phases, at most " + std::to_string(mostLent_[owner->contract]) + " CPUs" +
                                 (units[kGpuShare] ? ", " + std::to_string(units[kGpuShare]) + " GPU units on one GPU" : "") +
                                 (units[kRdmaShare] ? ", " + std::to_string(units[kRdmaShare]) + " queue pairs on one port" : "") +
                                 ", " + mechanism_ + ")");
  return true;
}

void NodeLending::followPage(const std::string &contract, const worker::ControlPageHost &page) {
  struct stat st{};
  if (borrowers_.count(contract) && loop_) {
    auto known = borrowerPages_.find(contract);
    if (::fstat(page.fd(), &st) != 0 || (known != borrowerPages_.end() && st.st_ino == known->second.inode))
      return;
    MappedPage mapped;
    std::string error;
    if (!mapPage(page, mapped, error)) {
      log_.warn(contract, "its worker's control page cannot be read: " + error + "; it is frozen unasked");
      return;
    }
    loop_->withNode([&](LendingNode &n) {
      auto *cp = static_cast<mscale::worker::ControlPage *>(mapped.map);
      n.replaceBorrowerPage(contract, cp);
      gpuLoans_.setPage(contract, cp);
      rdmaLoans_.setPage(contract, cp);
    });
    if (known != borrowerPages_.end())
      unmapPage(known->second); // replaced: the loop reads it no more
    borrowerPages_[contract] = mapped;
    return;
  }
  auto it = owners_.find(contract);
  if (it == owners_.end() || ::fstat(page.fd(), &st) != 0 || st.st_ino == it->second.inode)
    return;
  MappedPage mapped;
  std::string error;
  if (!mapPage(page, mapped, error)) {
    log_.warn(contract, "its new control page cannot be read: " + error + "; it lends nothing more");
    remove(contract);
    return;
  }
  mapped.phaseNames = it->second.phaseNames;
  mapped.reclaimWithinNs = it->second.reclaimWithinNs;
  mapped.cpus = it->second.cpus;
  MappedPage old = it->second;
  it->second = mapped;
  loop_->withNode([&](LendingNode &n) { n.replacePage(contract, static_cast<mscale::worker::ControlPage *>(mapped.map)); });
  watchPages();
  unmapPage(old); // replacePage returned: the loop reads the old page no more
}

bool NodeLending::addBorrower(const plan::Plan &plan, std::string &error) {
  std::string name = plan.provenance().contract();
  unsigned asked = plan.borrow().cpu_cores();
  PerShareKind<unsigned> units = {plan.borrow().gpu_sm_slices(), plan.borrow().rdma_queue_pairs()};
  if (!loop_) {
    error = std::string("this node cannot take CPUs back (") + mechanism_ + ")";
    return false;
  }
  if (borrowers_.count(name)) {
    error = "it borrows on this node already";
    return false;
  }
  if (asked == 0) {
    error = "it asks for no CPU (cpu_cores): a borrower runs on lent CPUs";
    return false;
  }
  // What the node says it lends (offer(): the cluster places borrowers by it) is what it admits.
  const LendingOffer lends = most();
  if (units[kGpuShare] > lends.gpuUnits) {
    error = "it asks for " + std::to_string(units[kGpuShare]) +
            " GPU units on one GPU; the contracts here lend at most " + std::to_string(lends.gpuUnits);
    return false;
  }
  if (units[kRdmaShare] > lends.rdmaQueuePairs) {
    error = "it asks for " + std::to_string(units[kRdmaShare]) +
            " RDMA queue pairs on one port; the contracts here lend at most " + std::to_string(lends.rdmaQueuePairs);
    return false;
  }
  if (lends.cpus < asked) {
    error = "it asks for " + std::to_string(asked) + " CPUs; the contracts here lend at most " +
            std::to_string(lends.cpus) + (owners_.empty() ? " (none lends)" : "");
    return false;
  }
  if (cgroups_) {
    BorrowerLimits limits;
    limits.memoryBytes = plan.borrow().memory_bytes();
    bool made = false;
    loop_->withNode([&](LendingNode &) { made = cgroups_->add(name, limits, error); });
    if (!made)
      return false;
    if (!recordDir_.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(recordDir_, ec);
      std::ofstream record(recordDir_ + "/" + name, std::ios::trunc);
      record << plan.provenance().source_file() << "\n";
      if (!record.flush())
        log_.warn(name, "not recorded in " + recordDir_ + ": " + (ec ? ec.message() : std::strerror(errno)) +
                            "; an agent after this one would not end it");
    }
  }
  borrowers_[name] = asked;
  loop_->withNode([&](LendingNode &n) { n.addBorrower(name, asked, nullptr, units); });
  loop_->start();
  log_.info(name, "borrows up to " + std::to_string(asked) + " CPUs" +
                      (units[kGpuShare] ? ", " + std::to_string(units[kGpuShare]) + " GPU units" : "") +
                      (units[kRdmaShare] ? ", " + std::to_string(units[kRdmaShare]) + " queue pairs" : "") +
                      " of what this node lends (" + mechanism_ + "); it runs on none until lent");
  return true;
}

bool NodeLending::joinBorrower(const std::string &contract, pid_t pid, std::string &error) {
  if (!borrowers_.count(contract)) {
    error = "it does not borrow on this node";
    return false;
  }
  // A worker started again after the node ended the last one (a take-back that could neither
  // shrink nor freeze it) is lent again from now on: the supervisor restarts it, from its snapshot
  // where it keeps them, as after any crash.
  bool joined = false;
  loop_->withNode([&](LendingNode &n) {
    if (n.ended(contract)) {
      if (!n.reviveBorrower(contract, error))
        return;
      log_.info(contract, "borrows again with a new worker");
    }
    joined = !cgroups_ || cgroups_->join(contract, pid, error);
  });
  return joined;
}

void NodeLending::remove(const std::string &contract) {
  if (!loop_)
    return;
  if (auto it = owners_.find(contract); it != owners_.end()) {
    loop_->withNode([&](LendingNode &n) {
      n.removeOwner(contract); // its units are taken back now: its session's slices and groups go with it
      gpuLoans_.removeOwner(contract);
      rdmaLoans_.removeOwner(contract);
    });
    MappedPage page = it->second;
    owners_.erase(it);
    mostLent_.erase(contract);
    mostLentUnits_.erase(contract);
    watchPages();
    unmapPage(page); // removeOwner returned: the loop reads it no more
  }
  if (borrowers_.erase(contract)) {
    loop_->withNode([&](LendingNode &n) {
      n.removeBorrower(contract);
      gpuLoans_.setPage(contract, nullptr);
      rdmaLoans_.setPage(contract, nullptr);
      if (cgroups_)
        cgroups_->remove(contract);
    });
    if (auto page = borrowerPages_.find(contract); page != borrowerPages_.end()) {
      unmapPage(page->second); // removeBorrower returned: the loop reads it no more
      borrowerPages_.erase(page);
    }
    if (!recordDir_.empty())
      ::unlink((recordDir_ + "/" + contract).c_str());
  }
}

bool NodeLending::holdForRecovery(const std::string &contract) {
  auto it = owners_.find(contract);
  if (!loop_ || it == owners_.end())
    return true;
  uint64_t start = clock_.monotonicNs(), waitNs = 2 * std::max<uint64_t>(it->second.reclaimWithinNs, 1'000'000);
  bool back = false;
  loop_->withNode([&](LendingNode &n) { n.hold(contract); });
  // The loop takes it back on its next tick, woken by withNode; a freeze under way settles on its own.
  for (;;) {
    loop_->withNode([&](LendingNode &n) { back = !n.lends(contract); });
    if (back || clock_.monotonicNs() - start >= waitNs)
      break;
    ::usleep(100);
  }
  uint64_t tookUs = (clock_.monotonicNs() - start) / 1000;
  if (back)
    log_.info(contract, "its worker faulted: what it lent is back (" + std::to_string(tookUs) +
                            " us) before recovery starts; it lends again once its next worker enters a phase");
  else
    log_.warn(contract, "its worker faulted: what it lent is not back after " + std::to_string(tookUs) +
                            " us; recovery starts while the lending goes on taking it back");
  return back;
}

lending::YieldStats NodeLending::yieldStats() {
  lending::YieldStats s;
  if (loop_)
    loop_->withNode([&](LendingNode &n) { s = n.yieldStats(); });
  return s;
}

bool NodeLending::frozen(const std::string &borrower) {
  if (!borrowers_.count(borrower) || !loop_)
    return false;
  bool none = false;
  loop_->withNode([&](LendingNode &n) { none = n.cpusOf(borrower).empty(); });
  return none;
}

std::optional<LendingView> NodeLending::view(const std::string &contract) {
  if (!loop_ || (!owners_.count(contract) && !borrowers_.count(contract)))
    return std::nullopt;
  LendingView v;
  v.borrower = borrowers_.count(contract) != 0;
  loop_->withNode([&](LendingNode &n) {
    for (Loan &l : n.loans())
      if (l.owner == contract || l.borrower == contract)
        v.loans.push_back(std::move(l));
    if (v.borrower) {
      v.frozen = n.cpusOf(contract).empty();
      if (cgroups_)
        if (const BorrowerCgroup *b = cgroups_->find(contract))
          v.cpuTimeNs = b->cpuTimeNs();
    } else {
      unsigned phase = n.phaseOf(contract);
      const std::vector<std::string> &names = owners_.at(contract).phaseNames;
      if (phase && phase <= names.size())
        v.phase = names[phase - 1];
      v.reclaims = n.ledger().stats(contract);
      v.reclaimWithinNs = owners_.at(contract).reclaimWithinNs;
    }
  });
  return v;
}

std::vector<Loan> NodeLending::loans() {
  std::vector<Loan> out;
  if (loop_)
    loop_->withNode([&](LendingNode &n) { out = n.loans(); });
  return out;
}

NodeLending::Timeline NodeLending::timeline() {
  Timeline t;
  for (const auto &[name, page] : owners_)
    t.owners.push_back({name, page.cpus, page.phaseNames});
  if (loop_)
    loop_->withNode([&](LendingNode &n) {
      const std::deque<TimelineChange> &changes = n.timeline().changes();
      t.changes.assign(changes.begin(), changes.end());
    });
  t.nowNs = clock_.monotonicNs();
  return t;
}

bool NodeLending::withSimLoans(const std::function<void(SimLoans &)> &change) {
  if (!sim_ || !loop_)
    return false;
  loop_->withNode([&](LendingNode &) { change(*sim_); });
  return true;
}

uint64_t NodeLending::lentUnitNs(ShareKind kind) {
  uint64_t ns = 0;
  if (loop_)
    loop_->withNode([&](LendingNode &n) { ns = n.lentUnitNs(kind); });
  return ns;
}

LendingOffer NodeLending::most() const {
  LendingOffer o;
  o.owners = unsigned(owners_.size());
  for (const auto &[owner, most] : mostLent_)
    o.cpus += most;
  for (const auto &[owner, most] : mostLentUnits_) {
    o.gpuUnits = std::max(o.gpuUnits, most[kGpuShare]);
    o.rdmaQueuePairs = std::max(o.rdmaQueuePairs, most[kRdmaShare]);
  }
  return o;
}

LendingOffer NodeLending::offer() {
  LendingOffer o = most();
  o.atNs = clock_.monotonicNs();
  if (loop_)
    loop_->withNode([&](LendingNode &n) {
      o.lendableCpus = n.lendableCores();
      o.lendableCoreNs = n.lendableCoreNs();
      o.lentCoreNs = n.lentCoreNs();
      for (unsigned k = 0; k < lending::kShareKinds; ++k) {
        o.lendableUnits[k] = n.lendableUnits(lending::ShareKind(k));
        o.lendableUnitNs[k] = n.lendableUnitNs(lending::ShareKind(k));
        o.lentUnitNs[k] = n.lentUnitNs(lending::ShareKind(k));
      }
      for (const lending::Loan &l : n.loans()) {
        o.lentCpus += unsigned(l.cpus.size());
        for (unsigned k = 0; k < lending::kShareKinds; ++k)
          o.lentUnits[k] += l.shares[k].units;
      }
    });
  return o;
}

uint64_t NodeLending::lentCoreNs() {
  uint64_t ns = 0;
  if (loop_)
    loop_->withNode([&](LendingNode &n) { ns = n.lentCoreNs(); });
  return ns;
}

} // namespace msc::exec

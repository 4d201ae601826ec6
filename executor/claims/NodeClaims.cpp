#include "executor/claims/NodeClaims.h"

#include "plan/PlanFile.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>
#include <utility>

namespace msc::exec {

namespace {

// Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot; with the pid it
// names one process for the machine's uptime (a pid alone is reused). None for a process that has
// ended, a zombie not yet reaped included (field 3, its state, Z or X): it holds nothing any more.
std::optional<uint64_t> startTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  if (close == std::string::npos)
    return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && (field == "Z" || field == "X"))
      return std::nullopt;
    if (i == 22)
      return std::strtoull(field.c_str(), nullptr, 10);
  }
  return std::nullopt;
}

int64_t nowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Holder {
  pid_t pid = 0;
  uint64_t ticks = 0;
  int64_t sinceMs = 0;
  std::string what;
};

std::optional<Holder> readHolder(const std::string &path) {
  std::ifstream in(path);
  Holder h;
  long long pid = 0;
  if (!(in >> pid >> h.ticks >> h.sinceMs))
    return std::nullopt;
  h.pid = pid_t(pid);
  std::getline(in >> std::ws, h.what);
  return h.pid > 0 ? std::optional<Holder>(h) : std::nullopt;
}

bool alive(const Holder &h) { return startTicks(h.pid) == h.ticks; }

std::vector<NodeClaim> scan(const std::string &dir, std::vector<std::string> *dropped) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string file = entry.path().filename().string();
    llvm::StringRef name(file);
    if (name.consume_back(".holder"))
      names.push_back(name.str());
  }
  std::sort(names.begin(), names.end());
  std::vector<NodeClaim> out;
  for (const std::string &name : names) {
    std::string base = dir + "/" + name;
    std::optional<Holder> h = readHolder(base + ".holder");
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    std::optional<plan::Plan> p = h ? plan::readPlanFile(base + ".msp", diags) : std::nullopt;
    if (h && p && alive(*h)) {
      out.push_back({name, std::move(*p), h->pid, h->what, h->sinceMs});
      continue;
    }
    if (!dropped)
      continue;
    std::string why = !h ? "its holder file does not read"
                    : !p ? "its plan does not read"
                         : "its holder (" + h->what + ", pid " + std::to_string(h->pid) + ") is gone";
    dropped->push_back("dropped the stale claim of contract '" + name + "': " + why);
    std::filesystem::remove(base + ".holder", ec);
    std::filesystem::remove(base + ".msp", ec);
  }
  return out;
}

} // namespace

std::string NodeClaim::describe() const {
  return "contract '" + contract + "' (" + holder + ", pid " + std::to_string(pid) + ")";
}

std::string NodeClaims::dirFor(const std::string &configured) {
  if (!configured.empty())
    return configured; // the node config says where its node's ledger is
  const char *env = std::getenv("MSCALE_CLAIMS_DIR");
  return env && *env ? std::string(env) : std::string("/run/mscale/claims");
}

std::optional<NodeClaims> NodeClaims::lock(const std::string &dir, std::string &error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = "cannot make '" + dir + "': " + ec.message();
    return std::nullopt;
  }
  std::string path = dir + "/.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  int rc;
  while ((rc = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    error = "cannot lock '" + path + "': " + std::strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  return NodeClaims(dir, fd);
}

NodeClaims &NodeClaims::operator=(NodeClaims &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    dir_ = std::move(other.dir_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

NodeClaims::~NodeClaims() {
  if (fd_ >= 0)
    ::close(fd_); // releases the flock
}

std::vector<NodeClaim> NodeClaims::read(std::vector<std::string> &dropped) { return scan(dir_, &dropped); }

std::vector<NodeClaim> NodeClaims::look(const std::string &dir) { return scan(dir, nullptr); }

bool NodeClaims::claim(const plan::Plan &plan, const std::string &holder, std::string &error) {
  const std::string &contract = plan.provenance().contract();
  std::string base = dir_ + "/" + contract;
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  if (!plan::writePlanFile(plan, base + ".msp", diags)) {
    error = sink.diags.empty() ? "cannot write '" + base + ".msp'" : sink.diags.front().message;
    return false;
  }
  // The holder file last: a claim is a claim once it names its holder.
  std::optional<uint64_t> ticks = startTicks(::getpid());
  std::string tmp = base + ".holder.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << ::getpid() << " " << ticks.value_or(0) << " " << nowUnixMs() << " " << holder << "\n";
    if (!out.flush()) {
      error = "cannot write '" + tmp + "'";
      std::filesystem::remove(base + ".msp");
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, base + ".holder", ec);
  if (ec) {
    error = "cannot write '" + base + ".holder': " + ec.message();
    std::filesystem::remove(tmp, ec);
    std::filesystem::remove(base + ".msp", ec);
    return false;
  }
  return true;
}

void NodeClaims::release(const std::string &contract) {
  std::string base = dir_ + "/" + contract;
  std::optional<Holder> h = readHolder(base + ".holder");
  if (!h || h->pid != ::getpid())
    return; // not ours (anymore): someone else's claim is not ours to drop
  std::error_code ec;
  std::filesystem::remove(base + ".holder", ec);
  std::filesystem::remove(base + ".msp", ec);
}

} // namespace msc::exec

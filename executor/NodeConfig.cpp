#include "executor/NodeConfig.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/YAMLTraits.h>

#include <grp.h>
#include <pwd.h>

namespace {

struct RdmaDoc {
  std::optional<bool> enabled;
  std::optional<std::string> backend;
};
struct HugepagesDoc {
  std::optional<bool> auto_allocate;
};
struct ConfigDoc {
  std::vector<unsigned> gpus;
  std::optional<std::string> gpu_backend;
  std::optional<RdmaDoc> rdma;
  std::optional<msc::exec::HostBackend> host_backend;
  std::optional<std::string> nvme_scheduler;
  std::optional<HugepagesDoc> hugepages;
  std::vector<std::string> allowed_users, allowed_groups;
  std::optional<std::string> socket_group, state_dir, claims_dir, log_file;
  std::optional<uint64_t> max_frame_bytes;
  std::optional<bool> strict_fingerprint;
};

} // namespace

namespace llvm::yaml {
// A scalar rather than a post-parse check: the YAML parser then reports a bad value with its line
// and column, like a wrong type.
template <> struct ScalarTraits<msc::exec::HostBackend> {
  static void output(const msc::exec::HostBackend &v, void *, raw_ostream &os) {
    os << (v == msc::exec::HostBackend::Sim ? "sim" : "real");
  }
  static StringRef input(StringRef text, void *, msc::exec::HostBackend &v) {
    if (text == "real")
      v = msc::exec::HostBackend::Real;
    else if (text == "sim")
      v = msc::exec::HostBackend::Sim;
    else
      return "host_backend must be real or sim";
    return {};
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::None; }
};
template <> struct MappingTraits<RdmaDoc> {
  static void mapping(IO &io, RdmaDoc &d) {
    io.mapOptional("enabled", d.enabled);
    io.mapOptional("backend", d.backend);
  }
};
template <> struct MappingTraits<HugepagesDoc> {
  static void mapping(IO &io, HugepagesDoc &d) { io.mapOptional("auto_allocate", d.auto_allocate); }
};
template <> struct MappingTraits<ConfigDoc> {
  static void mapping(IO &io, ConfigDoc &d) {
    io.mapOptional("gpus", d.gpus);
    io.mapOptional("gpu_backend", d.gpu_backend);
    io.mapOptional("rdma", d.rdma);
    io.mapOptional("host_backend", d.host_backend);
    io.mapOptional("nvme_scheduler", d.nvme_scheduler);
    io.mapOptional("hugepages", d.hugepages);
    io.mapOptional("allowed_users", d.allowed_users);
    io.mapOptional("allowed_groups", d.allowed_groups);
    io.mapOptional("socket_group", d.socket_group);
    io.mapOptional("state_dir", d.state_dir);
    io.mapOptional("claims_dir", d.claims_dir);
    io.mapOptional("log_file", d.log_file);
    io.mapOptional("max_frame_bytes", d.max_frame_bytes);
    io.mapOptional("strict_fingerprint", d.strict_fingerprint);
  }
};
} // namespace llvm::yaml

namespace msc::exec {

namespace {

struct DiagContext {
  std::string name;
  DiagnosticEngine *diags;
};

void yamlDiag(const llvm::SMDiagnostic &d, void *ctx) {
  auto *c = static_cast<DiagContext *>(ctx);
  std::string where = c->name;
  if (d.getLineNo() > 0)
    where += ":" + std::to_string(d.getLineNo()) + ":" + std::to_string(d.getColumnNo() + 1);
  c->diags->report(DiagCode::ERR_EXEC_017, Location{{}, c->name, unsigned(std::max(d.getLineNo(), 0))})
      << c->name << (d.getMessage() + " (at " + where + ")").str();
}

bool oneOf(llvm::StringRef v, std::initializer_list<llvm::StringRef> allowed) {
  for (llvm::StringRef a : allowed)
    if (v == a)
      return true;
  return false;
}

} // namespace

std::optional<NodeConfig> parseNodeConfig(llvm::StringRef text, llvm::StringRef name, DiagnosticEngine &diags) {
  ConfigDoc doc;
  DiagContext ctx{name.str(), &diags};
  unsigned before = diags.errorCount();
  llvm::yaml::Input in(text, nullptr, yamlDiag, &ctx);
  if (!text.trim().empty())
    in >> doc;
  if (in.error() || diags.errorCount() != before) {
    if (diags.errorCount() == before)
      diags.report(DiagCode::ERR_EXEC_017, Location{{}, name.str(), 0}) << name << in.error().message();
    return std::nullopt;
  }
  auto bad = [&](const std::string &why) {
    diags.report(DiagCode::ERR_EXEC_017, Location{{}, name.str(), 0}) << name << why;
  };
  NodeConfig c;
  c.gpus = doc.gpus;
  if (doc.gpu_backend) {
    if (!oneOf(*doc.gpu_backend, {"auto", "cuda", "sim"}))
      return bad("gpu_backend is '" + *doc.gpu_backend + "', expected auto, cuda or sim"), std::nullopt;
    c.gpuBackend = *doc.gpu_backend;
  }
  if (doc.rdma) {
    c.rdmaEnabled = doc.rdma->enabled.value_or(true);
    if (doc.rdma->backend) {
      if (!oneOf(*doc.rdma->backend, {"auto", "ibverbs", "sim"}))
        return bad("rdma.backend is '" + *doc.rdma->backend + "', expected auto, ibverbs or sim"), std::nullopt;
      c.rdmaBackend = *doc.rdma->backend;
    }
  }
  c.hostBackend = doc.host_backend.value_or(HostBackend::Real);
  if (doc.nvme_scheduler) {
    if (!oneOf(*doc.nvme_scheduler, {"none", "mq-deadline", "bfq", "kyber"}))
      return bad("nvme_scheduler is '" + *doc.nvme_scheduler + "', expected none, mq-deadline, bfq or kyber"),
             std::nullopt;
    c.nvmeScheduler = *doc.nvme_scheduler;
  }
  if (doc.hugepages)
    c.hugepageAutoAllocate = doc.hugepages->auto_allocate.value_or(true);
  for (const std::string &u : doc.allowed_users) {
    unsigned id;
    if (!llvm::StringRef(u).getAsInteger(10, id)) {
      c.allowedUids.push_back(id);
    } else if (passwd *pw = ::getpwnam(u.c_str())) {
      c.allowedUids.push_back(pw->pw_uid);
    } else {
      return bad("unknown user '" + u + "' in allowed_users"), std::nullopt;
    }
  }
  for (const std::string &g : doc.allowed_groups) {
    unsigned id;
    if (!llvm::StringRef(g).getAsInteger(10, id)) {
      c.allowedGids.push_back(id);
    } else if (group *gr = ::getgrnam(g.c_str())) {
      c.allowedGids.push_back(gr->gr_gid);
    } else {
      return bad("unknown group '" + g + "' in allowed_groups"), std::nullopt;
    }
  }
  c.allowedUsers = doc.allowed_users;
  c.allowedGroups = doc.allowed_groups;
  if (doc.socket_group) {
    c.socketGroup = *doc.socket_group;
    unsigned id;
    if (!llvm::StringRef(c.socketGroup).getAsInteger(10, id))
      c.socketGid = id;
    else if (group *gr = ::getgrnam(c.socketGroup.c_str()))
      c.socketGid = gr->gr_gid;
    else
      return bad("unknown group '" + c.socketGroup + "' in socket_group"), std::nullopt;
  }
  c.stateDir = doc.state_dir.value_or("");
  c.claimsDir = doc.claims_dir.value_or("");
  c.logFile = doc.log_file.value_or("");
  if (doc.max_frame_bytes) {
    if (*doc.max_frame_bytes < 1024 || *doc.max_frame_bytes > (1ull << 30))
      return bad("max_frame_bytes must be between 1024 and 1073741824"), std::nullopt;
    c.maxFrameBytes = *doc.max_frame_bytes;
  }
  c.strictFingerprint = doc.strict_fingerprint.value_or(false);
  return c;
}

std::optional<NodeConfig> readNodeConfig(llvm::StringRef path, DiagnosticEngine &diags) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf) {
    diags.report(DiagCode::ERR_EXEC_017, Location{{}, path.str(), 0}) << path << buf.getError().message();
    return std::nullopt;
  }
  return parseNodeConfig((*buf)->getBuffer(), path, diags);
}

} // namespace msc::exec

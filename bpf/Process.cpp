#include "bpf/Process.h"

#include "support/ContractCgroup.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace msc::trace {
namespace {

constexpr long kCgroup2SuperMagic = 0x63677270;

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

std::vector<MapEntry> readMaps(int pid) {
  std::vector<MapEntry> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    // start-end perms offset dev inode path
    llvm::StringRef rest(line);
    llvm::SmallVector<llvm::StringRef, 6> f;
    for (int i = 0; i < 5; ++i) {
      auto [head, tail] = rest.ltrim().split(' ');
      f.push_back(head);
      rest = tail;
    }
    if (f.size() < 5)
      continue;
    auto [s, e] = f[0].split('-');
    MapEntry m;
    if (s.getAsInteger(16, m.start) || e.getAsInteger(16, m.end) || f[2].getAsInteger(16, m.offset))
      continue;
    m.exec = f[1].size() >= 3 && f[1][2] == 'x';
    m.path = rest.trim().str();
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<std::string> findMappedLibrary(int pid, llvm::StringRef prefix) {
  for (const MapEntry &m : readMaps(pid)) {
    if (m.path.empty() || m.path[0] != '/')
      continue;
    llvm::StringRef base = llvm::StringRef(m.path).rsplit('/').second;
    if (!base.starts_with(prefix))
      continue;
    // Same file in our mount namespace? Otherwise go through the target's root.
    std::string viaRoot = "/proc/" + std::to_string(pid) + "/root" + m.path;
    struct stat a, b;
    if (::stat(m.path.c_str(), &a) == 0 && ::stat(viaRoot.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
      return m.path;
    if (::stat(viaRoot.c_str(), &b) == 0)
      return viaRoot;
    return m.path;
  }
  return std::nullopt;
}

bool processExists(int pid) {
  if (pid <= 0)
    return false;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

std::string cgroup2Mount() {
  std::ifstream in("/proc/mounts");
  std::string dev, dir, type;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (ls >> dev >> dir >> type && type == "cgroup2")
      return dir;
  }
  return {};
}

bool isCgroup2Dir(const std::string &path) {
  struct statfs fs;
  struct stat st;
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == kCgroup2SuperMagic && ::stat(path.c_str(), &st) == 0 &&
         S_ISDIR(st.st_mode);
}

std::string contractCgroupPath(llvm::StringRef contractId, const std::string &mount, bool &exists) {
  std::string primary = contractCgroupDir(mount, contractId);
  exists = isCgroup2Dir(primary);
  if (exists)
    return primary;
  if (DIR *d = ::opendir(mount.c_str())) {
    while (dirent *ent = ::readdir(d)) {
      if (ent->d_type != DT_DIR || ent->d_name[0] == '.')
        continue;
      std::string candidate = contractCgroupDir(mount + "/" + ent->d_name, contractId);
      if (isCgroup2Dir(candidate)) {
        ::closedir(d);
        exists = true;
        return candidate;
      }
    }
    ::closedir(d);
  }
  return primary;
}

std::vector<int> cgroupProcesses(const std::string &path) {
  std::vector<int> pids;
  std::istringstream procs(readFile(path + "/cgroup.procs"));
  int pid;
  while (procs >> pid)
    pids.push_back(pid);
  if (DIR *d = ::opendir(path.c_str())) {
    while (dirent *ent = ::readdir(d)) {
      if (ent->d_type == DT_DIR && ent->d_name[0] != '.') {
        std::vector<int> sub = cgroupProcesses(path + "/" + ent->d_name);
        pids.insert(pids.end(), sub.begin(), sub.end());
      }
    }
    ::closedir(d);
  }
  return pids;
}

std::optional<uint64_t> cgroupId(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return std::nullopt;
  return static_cast<uint64_t>(st.st_ino); // kernfs: the inode number is the cgroup id on 64-bit
}

Privileges currentPrivileges() {
  Privileges p;
  p.uid = ::geteuid();
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (!llvm::StringRef(line).starts_with("CapEff:"))
      continue;
    uint64_t caps = 0;
    if (llvm::StringRef(line).drop_front(7).trim().getAsInteger(16, caps))
      break;
    p.sysAdmin = caps & (1ULL << 21);
    p.perfmon = caps & (1ULL << 38);
    p.bpf = caps & (1ULL << 39);
  }
  return p;
}

} // namespace msc::trace

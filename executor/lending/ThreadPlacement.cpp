#include "executor/lending/ThreadPlacement.h"

#include "executor/host/Sys.h"
#include "support/CpuList.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <dirent.h>
#include <map>

namespace msc::exec::lending {

namespace {
// /proc/<pid>[/task/<tid>]/stat after the command's closing parenthesis: "S 1 ..." (fields 3..).
bool parseStat(const std::string &text, char &state, pid_t &ppid, int &cpu) {
  size_t close = text.rfind(')');
  if (close == std::string::npos)
    return false;
  llvm::SmallVector<llvm::StringRef, 64> fields;
  llvm::StringRef(text).drop_front(close + 2).split(fields, ' ', -1, false);
  if (fields.size() < 37 || fields[0].empty())
    return false;
  state = fields[0][0];
  long p = 0, c = -1;
  fields[1].getAsInteger(10, p);
  fields[36].getAsInteger(10, c); // field 39 of stat, the 37th after the command
  ppid = pid_t(p);
  cpu = int(c);
  return true;
}

std::vector<pid_t> numbersIn(const std::string &dir) {
  std::vector<pid_t> out;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      int n = 0;
      if (!llvm::StringRef(e->d_name).getAsInteger(10, n))
        out.push_back(n);
    }
    ::closedir(d);
  }
  return out;
}
} // namespace

std::vector<pid_t> processTree(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  bool rootAlive = false;
  for (pid_t pid : numbersIn("/proc")) {
    std::optional<std::string> stat = readFileText("/proc/" + std::to_string(pid) + "/stat");
    char state;
    pid_t ppid;
    int cpu;
    if (stat && parseStat(*stat, state, ppid, cpu)) {
      children[ppid].push_back(pid);
      rootAlive |= pid == root;
    }
  }
  if (!rootAlive)
    return {};
  std::vector<pid_t> out{root};
  for (size_t i = 0; i < out.size(); ++i)
    for (pid_t child : children[out[i]])
      out.push_back(child);
  return out;
}

std::vector<ThreadSeen> threadsOf(const std::vector<pid_t> &pids) {
  std::vector<ThreadSeen> out;
  for (pid_t pid : pids) {
    std::string base = "/proc/" + std::to_string(pid) + "/task/";
    for (pid_t tid : numbersIn(base)) {
      ThreadSeen t;
      t.pid = pid, t.tid = tid;
      pid_t ppid;
      std::optional<std::string> stat = readFileText(base + std::to_string(tid) + "/stat");
      if (!stat || !parseStat(*stat, t.state, ppid, t.cpu))
        continue; // it exited meanwhile
      if (std::optional<std::string> status = readFileText(base + std::to_string(tid) + "/status")) {
        size_t at = status->find("Cpus_allowed_list:");
        if (at != std::string::npos) {
          size_t eol = status->find('\n', at);
          llvm::StringRef list = llvm::StringRef(*status).slice(at + 18, eol).trim();
          t.allowed = parseCpuList(list.str()).value_or(CpuSet{});
        }
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<ThreadSeen> runnableOn(const std::vector<ThreadSeen> &seen, const CpuSet &cpus) {
  std::vector<ThreadSeen> out;
  for (const ThreadSeen &t : seen) {
    if (t.state != 'R')
      continue;
    bool queuedThere = t.cpu >= 0 && std::binary_search(cpus.begin(), cpus.end(), unsigned(t.cpu));
    bool allowedThere = std::any_of(t.allowed.begin(), t.allowed.end(),
                                    [&](unsigned c) { return std::binary_search(cpus.begin(), cpus.end(), c); });
    if (queuedThere || allowedThere)
      out.push_back(t);
  }
  return out;
}

} // namespace msc::exec::lending

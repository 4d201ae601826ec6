// The phases of a trace that come before BPF: may this process trace, whom, in which CUDA
// libraries, and at which offsets.
#include "bpf/TraceTargets.h"

#include "bpf/Process.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unistd.h>

namespace msc::trace {
namespace {

std::optional<std::string> findInPath(const std::string &cmd) {
  if (cmd.find('/') != std::string::npos)
    return ::access(cmd.c_str(), X_OK) == 0 ? std::optional<std::string>(cmd) : std::nullopt;
  const char *path = getenv("PATH");
  llvm::SmallVector<llvm::StringRef, 16> dirs;
  llvm::StringRef(path ? path : "/usr/bin:/bin").split(dirs, ':');
  for (llvm::StringRef d : dirs) {
    std::string full = (d.empty() ? std::string(".") : d.str()) + "/" + cmd;
    if (::access(full.c_str(), X_OK) == 0)
      return full;
  }
  return std::nullopt;
}

std::optional<std::string> findDriverLibraryOnDisk() {
  std::vector<std::string> dirs;
  if (const char *ld = getenv("LD_LIBRARY_PATH")) {
    llvm::SmallVector<llvm::StringRef, 8> parts;
    llvm::StringRef(ld).split(parts, ':', -1, false);
    for (llvm::StringRef p : parts)
      dirs.push_back(p.str());
  }
  for (const char *d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"})
    dirs.push_back(d);
  for (const std::string &d : dirs) {
    std::string p = d + "/libcuda.so.1";
    if (::access(p.c_str(), R_OK) == 0)
      return p;
  }
  return std::nullopt;
}

// Adds the functions of `which` that `path` exports. False when the file cannot be read, or when a
// `required` library exports none of them.
bool resolveIn(const std::string &path, CudaLibrary which, bool required, bool skipEndbr64,
               std::vector<ResolvedFunction> &resolved, DiagnosticEngine &diags) {
  std::string error;
  std::unique_ptr<ElfFile> elf = ElfFile::open(path, error);
  if (!elf) {
    diags.report(DiagCode::ERR_TRACE_008) << path << error;
    return false;
  }
  std::vector<std::string> missing;
  size_t found = 0;
  for (const CudaFunction &fn : cudaFunctions()) {
    if (fn.library != which)
      continue;
    std::optional<ElfSymbol> sym = elf->findFunction(fn.name);
    if (!sym) {
      missing.push_back("'" + fn.name.str() + "'");
      continue;
    }
    ++found;
    resolved.push_back({&fn, path, chooseAttachPoint(*elf, *sym, skipEndbr64)});
  }
  if (!found) {
    if (required)
      diags.report(DiagCode::ERR_TRACE_009) << path;
    return !required;
  }
  if (!missing.empty())
    diags.report(DiagCode::WRN_TRACE_002) << path << llvm::join(missing, ", ");
  return true;
}

} // namespace

bool checkMachineAllowsTracing(const TraceOptions &options, DiagnosticEngine &diags) {
  if (!options.preflight)
    return true;
  std::string btfPath = options.btfPath.empty() ? "/sys/kernel/btf/vmlinux" : options.btfPath;
  Privileges priv = currentPrivileges();
  if (!priv.canTrace()) {
    diags.report(DiagCode::ERR_TRACE_001) << priv.uid;
    return false;
  }
  if (::access(btfPath.c_str(), R_OK) != 0) {
    diags.report(DiagCode::ERR_TRACE_002) << btfPath;
    return false;
  }
  return true;
}

bool checkWhomToTrace(const TraceOptions &options, TraceTargets &targets, DiagnosticEngine &diags) {
  for (int pid : options.pids)
    if (!processExists(pid)) {
      diags.report(DiagCode::ERR_TRACE_004) << pid;
      return false;
    }
  if (!options.cgroupPath.empty() && !isCgroup2Dir(options.cgroupPath)) {
    std::string mount = cgroup2Mount();
    diags.report(DiagCode::ERR_TRACE_005)
            .note(Location::none(), mount.empty() ? "no cgroup2 file system is mounted"
                                                  : "cgroup v2 is mounted at '" + mount + "'")
        << options.cgroupPath;
    return false;
  }
  if (!options.command.empty()) {
    targets.commandPath = findInPath(options.command[0]);
    if (!targets.commandPath) {
      diags.report(DiagCode::ERR_TRACE_012) << options.command[0] << std::strerror(ENOENT);
      return false;
    }
  }
  return true;
}

bool findCudaLibraries(const TraceOptions &options, TraceTargets &targets, DiagnosticEngine &diags) {
  std::vector<int> candidates = options.pids;
  if (!options.cgroupPath.empty()) {
    std::vector<int> inGroup = cgroupProcesses(options.cgroupPath);
    candidates.insert(candidates.end(), inGroup.begin(), inGroup.end());
  }
  std::string lib = options.libPath, rtlib = options.runtimeLibPath;
  for (int pid : candidates) {
    if (lib.empty())
      if (auto found = findMappedLibrary(pid, "libcuda.so"))
        lib = *found;
    if (rtlib.empty())
      if (auto found = findMappedLibrary(pid, "libcudart.so"))
        rtlib = *found;
  }
  if (lib.empty() && candidates.empty())
    if (auto found = findDriverLibraryOnDisk())
      lib = *found;
  if (lib.empty()) {
    std::string who;
    if (!options.pids.empty()) {
      who = "pid";
      for (int p : options.pids)
        who += " " + std::to_string(p);
    } else if (!options.cgroupPath.empty()) {
      who = "any process of cgroup '" + options.cgroupPath + "'";
    } else {
      who = "any process, and none is in the library path";
    }
    diags.report(DiagCode::ERR_TRACE_007).note(Location::none(), "pass the library with --lib PATH") << who;
    return false;
  }
  targets.library = lib;
  targets.runtimeLibrary = rtlib;
  return true;
}

bool resolveAttachPoints(const TraceOptions &options, TraceTargets &targets, DiagnosticEngine &diags) {
  if (!resolveIn(targets.library, CudaLibrary::Driver, true, options.skipEndbr64, targets.functions, diags))
    return false;
  return targets.runtimeLibrary.empty() ||
         resolveIn(targets.runtimeLibrary, CudaLibrary::Runtime, false, options.skipEndbr64, targets.functions,
                   diags);
}

} // namespace msc::trace

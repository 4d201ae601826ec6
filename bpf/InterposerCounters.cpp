#include "bpf/InterposerCounters.h"

#include "interposer/cuda_counters.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace msc::trace {

static_assert(MSC_COUNTERS_MAX_FN == MSC_TRACE_MAX_FN && MSC_COUNTERS_BUCKETS == MSC_TRACE_BUCKETS,
              "the interposer's counters and the BPF side's must have the same shape");

namespace {

// The writer updates these words while we read: relaxed atomic loads (a plain mov on x86-64).
uint64_t load(const uint64_t &word) { return __atomic_load_n(&word, __ATOMIC_RELAXED); }

// One file: nullopt (with a warning) when it is not a complete counters file.
std::optional<CounterReading::Process> readFile(const std::string &path, DiagnosticEngine &diags) {
  auto skip = [&](const std::string &why) {
    diags.report(DiagCode::WRN_TRACE_004) << path << why;
    return std::nullopt;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return skip(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(msc_counters_file)) {
    ::close(fd);
    return skip("it is shorter than a counters file");
  }
  void *p = ::mmap(nullptr, sizeof(msc_counters_file), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    return skip(std::strerror(errno));
  const auto *f = static_cast<const msc_counters_file *>(p);
  std::optional<CounterReading::Process> out;
  if (__atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != MSC_COUNTERS_MAGIC || f->version != MSC_COUNTERS_VERSION) {
    ::munmap(p, sizeof(msc_counters_file));
    return skip("no counters header of version " + std::to_string(MSC_COUNTERS_VERSION));
  }
  out.emplace();
  out->comm.assign(f->comm, strnlen(f->comm, sizeof(f->comm)));
  uint32_t threads = std::min<uint32_t>(__atomic_load_n(&f->threads_used, __ATOMIC_RELAXED), MSC_COUNTERS_THREADS);
  for (uint32_t i = 0; i < std::min<uint32_t>(f->functions, MSC_COUNTERS_MAX_FN); ++i) {
    llvm::StringRef name(f->names[i], strnlen(f->names[i], MSC_COUNTERS_NAME_LEN));
    std::optional<uint32_t> id = cudaFunctionId(name);
    if (!id)
      continue; // a newer interposer wraps more than this tracer knows
    FunctionStats s;
    s.id = *id;
    s.name = name.str();
    s.kind = cudaFunction(*id).kind;
    s.timed = (f->timed_mask >> i) & 1;
    for (uint32_t t = 0; t < threads; ++t) {
      const msc_fn_counters &c = f->thread[t].fn[i];
      s.calls += load(c.calls);
      s.errors += load(c.errors);
      s.totalNs += load(c.total_ns);
      s.maxNs = std::max(s.maxNs, load(c.max_ns));
      for (size_t b = 0; b < MSC_COUNTERS_BUCKETS; ++b)
        s.histogram[b] += load(c.histogram[b]);
    }
    out->functions[*id] = std::move(s);
  }
  ::munmap(p, sizeof(msc_counters_file));
  return out;
}

} // namespace

std::optional<CounterReading> readCounters(const std::string &dir, const std::vector<int> &pids,
                                           DiagnosticEngine &diags) {
  DIR *d = ::opendir(dir.c_str());
  if (!d) {
    diags.report(DiagCode::ERR_TRACE_013) << dir << std::strerror(errno);
    return std::nullopt;
  }
  CounterReading reading;
  while (const dirent *e = ::readdir(d)) {
    llvm::StringRef name(e->d_name);
    int pid = 0;
    if (!name.consume_back(MSC_COUNTERS_SUFFIX) || name.getAsInteger(10, pid) || pid <= 0)
      continue;
    if (!pids.empty() && std::find(pids.begin(), pids.end(), pid) == pids.end())
      continue;
    if (auto p = readFile(dir + "/" + e->d_name, diags))
      reading.processes[pid] = std::move(*p);
  }
  ::closedir(d);
  return reading;
}

CounterReading subtract(const CounterReading &after, const CounterReading &before) {
  CounterReading out = after;
  for (auto &[pid, proc] : out.processes) {
    auto b = before.processes.find(pid);
    if (b == before.processes.end())
      continue;
    for (auto &[id, f] : proc.functions) {
      auto bf = b->second.functions.find(id);
      if (bf == b->second.functions.end())
        continue;
      const FunctionStats &old = bf->second;
      f.calls -= std::min(f.calls, old.calls);
      f.errors -= std::min(f.errors, old.errors);
      f.totalNs -= std::min(f.totalNs, old.totalNs);
      for (size_t i = 0; i < f.histogram.size(); ++i)
        f.histogram[i] -= std::min(f.histogram[i], old.histogram[i]);
      // The window's maximum is unknown when it is not above the earlier one: keep the larger.
    }
  }
  return out;
}

void fillResults(const CounterReading &reading, const std::string &library, TraceResults &results) {
  results.mechanism = "interposer";
  results.library = library;
  std::map<uint32_t, FunctionStats> sum;
  for (const auto &[pid, proc] : reading.processes) {
    if (std::find(results.pids.begin(), results.pids.end(), pid) == results.pids.end())
      results.pids.push_back(pid);
    for (const auto &[id, f] : proc.functions) {
      auto [it, fresh] = sum.try_emplace(id, f);
      if (fresh)
        continue;
      FunctionStats &s = it->second;
      s.calls += f.calls;
      s.errors += f.errors;
      s.totalNs += f.totalNs;
      s.maxNs = std::max(s.maxNs, f.maxNs);
      s.timed = s.timed && f.timed;
      for (size_t b = 0; b < s.histogram.size(); ++b)
        s.histogram[b] += f.histogram[b];
    }
  }
  results.functions.clear();
  results.attached.clear();
  for (auto &[id, f] : sum) {
    // The uprobe path probes the runtime only where a libcudart is mapped; here it is always
    // wrapped, so its functions show up where they were called.
    if (cudaFunction(id).library == CudaLibrary::Runtime && f.calls == 0)
      continue;
    results.attached.push_back({id, f.name, library, 0, 0, false, f.timed});
    results.enters += f.calls;
    results.functions.push_back(std::move(f));
  }
}

} // namespace msc::trace

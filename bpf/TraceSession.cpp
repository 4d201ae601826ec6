// The BPF side of a trace: libbpf's messages, the skeleton (opened, configured, loaded), the command
// held until the probes are in, the filters, probes and ring buffer, and the results read back.
#include "bpf/TraceSession.h"

#include "bpf/CudaFunctions.h"
#include "bpf/InterposerTrace.h"
#include "bpf/Process.h"
#include "bpf/Symbolizer.h"
#include "bpf/TraceTargets.h"

#include <linux/types.h>

#include "bpf/cuda_trace.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cuda_trace.skel.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace msc::trace {
namespace {

// ---- libbpf's messages: to stderr, and the last warnings kept for diagnostics --------------------

std::mutex gLogMutex;
bool gLogVerbose = false;
std::vector<std::string> gRecentWarnings; // the last few, for diagnostics

int libbpfPrint(enum libbpf_print_level level, const char *format, va_list args) {
  if (level == LIBBPF_DEBUG && !gLogVerbose)
    return 0;
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string buf(n > 0 ? static_cast<size_t>(n) + 1 : 1, '\0');
  vsnprintf(buf.data(), buf.size(), format, args);
  llvm::StringRef msg = llvm::StringRef(buf.c_str()).rtrim();
  if (msg.starts_with("libbpf: "))
    msg = msg.drop_front(8);
  std::lock_guard<std::mutex> lock(gLogMutex);
  if (level == LIBBPF_WARN) {
    gRecentWarnings.push_back(msg.str());
    if (gRecentWarnings.size() > 8)
      gRecentWarnings.erase(gRecentWarnings.begin());
  }
  fprintf(stderr, "libbpf: %s\n", msg.str().c_str());
  return 0;
}

std::vector<std::string> takeRecentWarnings() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  std::vector<std::string> out;
  out.swap(gRecentWarnings);
  return out;
}

// From here on libbpf's messages go to the log sink; warnings left from an earlier session are dropped.
void routeLibbpfMessages(bool verbose) {
  gLogVerbose = verbose;
  libbpf_set_print(libbpfPrint);
  takeRecentWarnings();
}

std::string readSmallFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return llvm::StringRef(ss.str()).trim().str();
}

// "[none] integrity confidentiality" -> the bracketed mode.
std::string lockdownMode(const std::string &path) {
  std::string text = readSmallFile(path);
  size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return {};
  return text.substr(open + 1, close - open - 1);
}

// The command is traced by pid unless pids or a cgroup say whom to trace.
bool filtersByPid(const TraceOptions &options) {
  return !options.pids.empty() || (options.cgroupPath.empty() && !options.command.empty());
}

using FoldKey = std::tuple<uint32_t, std::string, uint32_t, std::vector<uint64_t>>; // pid, comm, fn, stack

} // namespace

struct TraceSession::Impl {
  TraceOptions opts;
  cuda_trace *skel = nullptr;
  std::vector<bpf_link *> links;
  ring_buffer *rb = nullptr;
  int cgroupFd = -1;
  pid_t child = -1;
  int gateFd = -1;   // write end: one byte lets the command exec
  int execErrFd = -1; // read end: errno from a failed exec
  bool childDone = false;
  int childStatus = 0;
  std::chrono::steady_clock::time_point started;
  TraceResults results;
  Symbolizer symbolizer;
  std::map<FoldKey, uint64_t> folded;
  std::map<FoldKey, uint64_t> foldedNs;
  size_t keptOrdinary = 0;

  ~Impl() { cleanup(); }

  // The phases of TraceSession::start after the targets are known, in their order. Each reports
  // why it fails and returns false; the destructor then undoes what the earlier ones did.
  bool loadProgram(DiagnosticEngine &diags);
  bool forkHeldCommand(const std::optional<std::string> &commandPath, DiagnosticEngine &diags);
  bool setFilters(DiagnosticEngine &diags);
  bool attachProbes(const std::vector<ResolvedFunction> &functions, DiagnosticEngine &diags);
  bool openRingBuffer(DiagnosticEngine &diags);
  bool releaseCommand(DiagnosticEngine &diags);

  // Each uprobe removal waits for an RCU grace period (~100 ms here); removing them one after the
  // other took 3 s for 32 probes, so they are removed in parallel.
  void detach() {
    std::vector<std::thread> threads;
    for (bpf_link *l : links)
      threads.emplace_back([l] { bpf_link__destroy(l); });
    for (std::thread &t : threads)
      t.join();
    links.clear();
  }

  void cleanup() {
    if (rb)
      ring_buffer__free(rb);
    rb = nullptr;
    detach();
    if (skel)
      cuda_trace__destroy(skel);
    skel = nullptr;
    if (cgroupFd >= 0)
      ::close(cgroupFd);
    cgroupFd = -1;
    if (gateFd >= 0) { // never released: the command must not run untraced
      ::close(gateFd);
      gateFd = -1;
      if (child > 0 && !childDone)
        ::kill(child, SIGKILL);
    }
    if (execErrFd >= 0)
      ::close(execErrFd);
    execErrFd = -1;
    if (child > 0 && !childDone) {
      ::waitpid(child, &childStatus, 0);
      childDone = true;
    }
  }

  bool reapChild(bool block) {
    if (child <= 0 || childDone)
      return childDone;
    if (::waitpid(child, &childStatus, block ? 0 : WNOHANG) == child)
      childDone = true;
    return childDone;
  }

  static int onEvent(void *ctx, void *data, size_t size) {
    auto *self = static_cast<Impl *>(ctx);
    if (size < sizeof(msc_event))
      return 0;
    const auto *ev = static_cast<const msc_event *>(data);
    self->take(*ev);
    return 0;
  }

  void take(const msc_event &ev) {
    ++results.eventsReceived;
    if (ev.fn >= cudaFunctions().size())
      return;
    symbolizer.snapshot(static_cast<int>(ev.pid)); // while the process is still there
    TraceEvent e;
    e.fn = ev.fn;
    e.pid = ev.pid;
    e.tid = ev.tid;
    e.startNs = ev.start_ns;
    e.latencyNs = ev.latency_ns;
    e.stream = ev.stream;
    e.bytes = ev.bytes;
    e.cgroupId = ev.cgroup_id;
    e.ret = ev.ret;
    e.comm.assign(ev.comm, strnlen(ev.comm, sizeof(ev.comm)));
    if (ev.stack_bytes > 0) {
      size_t n = std::min<size_t>(static_cast<size_t>(ev.stack_bytes) / 8, MSC_TRACE_MAX_STACK);
      e.stack.assign(ev.stack, ev.stack + n);
    }
    if (opts.stacks) {
      FoldKey key{e.pid, e.comm, e.fn, e.stack};
      ++folded[key];
      foldedNs[key] += e.latencyNs;
    }
    // Candidates for implicit-sync detection are always kept; other events up to the limit.
    CallKind kind = cudaFunction(e.fn).kind;
    bool candidate = (kind == CallKind::AsyncCopy && e.latencyNs >= opts.implicitSync.minWaitNs) ||
                     (kind == CallKind::Sync && !opts.implicitSync.stepFunction.empty());
    if (!candidate) {
      if (keptOrdinary >= opts.maxKeptEvents) {
        ++results.eventsNotKept;
        return;
      }
      ++keptOrdinary;
    } else if (results.events.size() >= 4 * opts.maxKeptEvents) {
      ++results.eventsNotKept;
      return;
    }
    results.events.push_back(std::move(e));
  }
};

TraceSession::TraceSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceSession::~TraceSession() = default;

// Opens the BPF object, sets its read-only configuration, sizes the ring buffer and loads it.
bool TraceSession::Impl::loadProgram(DiagnosticEngine &diags) {
  LIBBPF_OPTS(bpf_object_open_opts, openOpts);
  if (!opts.btfPath.empty())
    openOpts.btf_custom_path = opts.btfPath.c_str();
  skel = cuda_trace__open_opts(&openOpts);
  if (!skel) {
    diags.report(DiagCode::ERR_TRACE_010) << std::string("cannot open the BPF object: ") + std::strerror(errno);
    return false;
  }
  auto *ro = skel->rodata;
  ro->filter_pid = filtersByPid(opts);
  ro->filter_cgroup = !opts.cgroupPath.empty();
  ro->do_histogram = opts.histogram;
  ro->emit_events = opts.events;
  ro->capture_stacks = opts.stacks;
  ro->min_latency_ns = opts.minLatencyNs;
  ro->sample_every = std::max<uint32_t>(1, opts.sampleEvery);
  uint32_t always = 0;
  if (!opts.implicitSync.stepFunction.empty())
    for (const CudaFunction &fn : cudaFunctions())
      if (fn.kind == CallKind::Sync)
        always |= 1u << fn.id;
  ro->always_mask = always;
  ro->event_mask = 0xffffffffu;
  ro->wakeup_bytes = std::max<size_t>(opts.ringBufferBytes / 8, 4096);
  for (const CudaFunction &fn : cudaFunctions()) {
    ro->arg_spec[fn.id].stream_slot = fn.args.stream_slot;
    ro->arg_spec[fn.id].bytes_slot = fn.args.bytes_slot;
    ro->arg_spec[fn.id].stream_deref = fn.args.stream_deref;
  }
  size_t rbBytes = 4096;
  while (rbBytes < opts.ringBufferBytes)
    rbBytes <<= 1;
  bpf_map__set_max_entries(skel->maps.events, static_cast<uint32_t>(rbBytes));
  if (int err = cuda_trace__load(skel)) {
    std::vector<std::string> log = takeRecentWarnings();
    std::string mode = lockdownMode(opts.lockdownPath);
    if (!mode.empty() && mode != "none") {
      diags.report(DiagCode::ERR_TRACE_003) << mode;
      return false;
    }
    DiagBuilder d = diags.report(DiagCode::ERR_TRACE_010);
    d << std::strerror(-err);
    for (const std::string &line : log)
      d.note(Location::none(), "libbpf: " + line);
    if (err == -EPERM && !currentPrivileges().canTrace())
      d.note(Location::none(), "this process has neither CAP_SYS_ADMIN nor CAP_BPF with CAP_PERFMON");
    return false;
  }
  return true;
}

// Forks the command, held before exec until releaseCommand: it must not run before the probes are in.
bool TraceSession::Impl::forkHeldCommand(const std::optional<std::string> &commandPath, DiagnosticEngine &diags) {
  if (!commandPath)
    return true;
  int gate[2], execErr[2];
  if (::pipe2(gate, O_CLOEXEC) != 0 || ::pipe2(execErr, O_CLOEXEC) != 0) {
    diags.report(DiagCode::ERR_TRACE_012) << opts.command[0] << std::strerror(errno);
    return false;
  }
  std::vector<char *> argv;
  for (const std::string &a : opts.command)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    diags.report(DiagCode::ERR_TRACE_012) << opts.command[0] << std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    ::close(gate[1]);
    ::close(execErr[0]);
    char go = 0;
    if (::read(gate[0], &go, 1) != 1)
      ::_exit(127); // the tracer gave up: do not run untraced
    ::execv(commandPath->c_str(), argv.data());
    int e = errno;
    ssize_t ignored = ::write(execErr[1], &e, sizeof(e));
    (void)ignored;
    ::_exit(127);
  }
  ::close(gate[0]);
  ::close(execErr[1]);
  child = pid;
  gateFd = gate[1];
  execErrFd = execErr[0];
  return true;
}

// Which pids (results.pids) and which cgroup the BPF side keeps.
bool TraceSession::Impl::setFilters(DiagnosticEngine &diags) {
  results.pids = opts.pids;
  if (filtersByPid(opts) && child > 0)
    results.pids.push_back(child);
  uint8_t one = 1;
  for (int pid : results.pids) {
    uint32_t key = static_cast<uint32_t>(pid);
    bpf_map_update_elem(bpf_map__fd(skel->maps.pid_filter), &key, &one, BPF_ANY);
  }
  if (!opts.cgroupPath.empty()) {
    cgroupFd = ::open(opts.cgroupPath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint32_t zero = 0;
    if (cgroupFd < 0 ||
        bpf_map_update_elem(bpf_map__fd(skel->maps.cgroup_filter), &zero, &cgroupFd, BPF_ANY) != 0) {
      diags.report(DiagCode::ERR_TRACE_010) << "cannot set the cgroup filter to '" + opts.cgroupPath +
                                                   "': " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

// An entry and a return probe per timed function, an entry probe alone per counted one. One target pid: let the kernel filter too, so other
// processes never trap.
bool TraceSession::Impl::attachProbes(const std::vector<ResolvedFunction> &functions, DiagnosticEngine &diags) {
  pid_t attachPid = results.pids.size() == 1 && opts.cgroupPath.empty() ? results.pids[0] : -1;
  for (const ResolvedFunction &r : functions) {
    bool timed = opts.timeAll || isSynchronising(r.fn->kind);
    for (bool ret : {false, true}) {
      if (ret && !timed)
        break;
      LIBBPF_OPTS(bpf_uprobe_opts, uopts);
      uopts.retprobe = ret;
      uopts.bpf_cookie = r.fn->id;
      bpf_program *prog = ret ? skel->progs.cuda_exit : timed ? skel->progs.cuda_enter : skel->progs.cuda_count;
      bpf_link *link =
          bpf_program__attach_uprobe_opts(prog, attachPid, r.library.c_str(), r.point.offset, &uopts);
      if (!link) {
        int err = errno;
        // 524 is the kernel-internal ENOTSUPP: the instruction at the offset cannot be probed.
        std::string why = err == 524 ? "the instruction there cannot be probed (ENOTSUPP)" : std::strerror(err);
        diags.report(DiagCode::ERR_TRACE_011) << r.fn->name << r.library << why;
        return false;
      }
      links.push_back(link);
    }
    results.attached.push_back({r.fn->id, r.fn->name.str(), r.library, r.point.symbolOffset, r.point.offset,
                                r.point.skippedEndbr64, timed});
  }
  return true;
}

bool TraceSession::Impl::openRingBuffer(DiagnosticEngine &diags) {
  rb = ring_buffer__new(bpf_map__fd(skel->maps.events), &Impl::onEvent, this, nullptr);
  if (!rb) {
    diags.report(DiagCode::ERR_TRACE_010) << std::string("cannot open the ring buffer: ") + std::strerror(errno);
    return false;
  }
  return true;
}

// Lets the held command exec; its exec error, if any, comes back through execErrFd.
bool TraceSession::Impl::releaseCommand(DiagnosticEngine &diags) {
  if (child <= 0)
    return true;
  char go = 1;
  ssize_t n = ::write(gateFd, &go, 1);
  ::close(gateFd);
  gateFd = -1;
  int execErrno = 0;
  if (n != 1 || ::read(execErrFd, &execErrno, sizeof(execErrno)) == sizeof(execErrno)) {
    diags.report(DiagCode::ERR_TRACE_012) << opts.command[0] << std::strerror(n != 1 ? EPIPE : execErrno);
    return false;
  }
  return true;
}

std::unique_ptr<TraceSession> TraceSession::start(const TraceOptions &options, DiagnosticEngine &diags) {
  routeLibbpfMessages(options.verbose);
  auto impl = std::make_unique<Impl>();
  Impl &s = *impl;
  s.opts = options;
  TraceTargets targets;
  bool ready = checkMachineAllowsTracing(options, diags) &&
               checkWhomToTrace(options, targets, diags) &&
               findCudaLibraries(options, targets, diags) &&
               resolveAttachPoints(options, targets, diags) &&
               s.loadProgram(diags) &&
               s.forkHeldCommand(targets.commandPath, diags) &&
               s.setFilters(diags) &&
               s.attachProbes(targets.functions, diags) &&
               s.openRingBuffer(diags);
  if (!ready)
    return nullptr;
  s.results.cgroup = options.cgroupPath;
  s.results.library = targets.library;
  s.results.runtimeLibrary = targets.runtimeLibrary;
  s.started = std::chrono::steady_clock::now();
  if (!s.releaseCommand(diags))
    return nullptr;
  return std::unique_ptr<TraceSession>(new TraceSession(std::move(impl)));
}

bool TraceSession::poll(int timeoutMs) {
  Impl &s = *impl_;
  ring_buffer__poll(s.rb, timeoutMs);
  ring_buffer__consume(s.rb); // submissions without wakeup are not signalled
  if (s.child > 0)
    return !s.reapChild(false);
  return true;
}

void TraceSession::run(const std::function<bool()> &stop) {
  Impl &s = *impl_;
  using clock = std::chrono::steady_clock;
  bool limited = s.opts.duration.count() > 0;
  clock::time_point deadline = s.started + s.opts.duration;
  while (!limited || clock::now() < deadline) {
    if (stop && stop())
      break;
    int wait = 50;
    if (limited)
      wait = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count(), 0, 50));
    if (!poll(wait))
      break;
  }
}

TraceResults TraceSession::finish(DiagnosticEngine &diags) {
  Impl &s = *impl_;
  s.results.durationNs = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - s.started).count());
  s.detach(); // no new calls are counted from here on
  ring_buffer__consume(s.rb);

  int ncpu = libbpf_num_possible_cpus();
  std::vector<msc_fn_stats> st(static_cast<size_t>(ncpu));
  std::vector<uint64_t> counts(static_cast<size_t>(ncpu));
  std::vector<msc_misc_stats> misc(static_cast<size_t>(ncpu));
  for (const AttachedFunction &a : s.results.attached) {
    FunctionStats f;
    f.id = a.id;
    f.name = a.name;
    f.kind = cudaFunction(a.id).kind;
    f.timed = a.timed;
    if (bpf_map_lookup_elem(bpf_map__fd(s.skel->maps.fn_stats), &a.id, st.data()) == 0)
      for (const msc_fn_stats &c : st) {
        f.calls += c.calls;
        f.totalNs += c.total_ns;
        f.errors += c.errors;
        f.maxNs = std::max<uint64_t>(f.maxNs, c.max_ns);
      }
    if (!f.timed)
      s.results.enters += f.calls; // cuda_count counts entries in fn_stats, not in misc
    for (uint32_t b = 0; b < MSC_TRACE_BUCKETS; ++b) {
      uint32_t key = a.id * MSC_TRACE_BUCKETS + b;
      if (bpf_map_lookup_elem(bpf_map__fd(s.skel->maps.hist), &key, counts.data()) == 0)
        for (uint64_t c : counts)
          f.histogram[b] += c;
    }
    s.results.functions.push_back(std::move(f));
  }
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(s.skel->maps.misc), &zero, misc.data()) == 0)
    for (const msc_misc_stats &m : misc) {
      s.results.enters += m.enters;
      s.results.eventsWritten += m.events;
      s.results.drops += m.drops;
      s.results.sampledOut += m.sampled_out;
    }

  // Symbolise: each distinct stack once.
  std::map<std::pair<uint32_t, std::vector<uint64_t>>, std::vector<std::string>> named;
  auto framesOf = [&](uint32_t pid, const std::vector<uint64_t> &stack) -> const std::vector<std::string> & {
    auto key = std::make_pair(pid, stack);
    auto it = named.find(key);
    if (it != named.end())
      return it->second;
    std::vector<std::string> frames;
    for (uint64_t addr : stack)
      frames.push_back(s.symbolizer.frame(static_cast<int>(pid), addr));
    return named.emplace(std::move(key), std::move(frames)).first->second;
  };
  for (TraceEvent &e : s.results.events)
    e.frames = framesOf(e.pid, e.stack);
  for (const auto &[key, count] : s.folded) {
    const auto &[pid, comm, fn, stack] = key;
    std::string line = comm.empty() ? std::string("[unknown]") : comm;
    const std::vector<std::string> &frames = framesOf(pid, stack);
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
      line += ";" + *it;
    line += ";" + cudaFunction(fn).name.str();
    std::replace(line.begin(), line.end(), ' ', '_'); // the count is after the last space
    s.results.folded[line] += count;
    s.results.foldedNs[line] += s.foldedNs[key];
  }

  if (s.child > 0) {
    s.reapChild(true);
    if (WIFEXITED(s.childStatus))
      s.results.commandExitStatus = WEXITSTATUS(s.childStatus);
    else if (WIFSIGNALED(s.childStatus))
      s.results.commandExitStatus = 128 + WTERMSIG(s.childStatus);
  }
  detectImplicitSyncs(s.results, s.opts.implicitSync);

  if (s.results.drops)
    diags.report(DiagCode::WRN_TRACE_001) << s.results.drops;
  for (const ImplicitSync &sync : s.results.implicitSyncs) {
    DiagBuilder d = diags.report(DiagCode::WRN_TRACE_003);
    d << sync.function << sync.count << sync.reason;
    if (!sync.frames.empty())
      d.note(Location::none(), "called from " + llvm::join(sync.frames, " <- "));
  }
  TraceResults out = std::move(s.results);
  s.cleanup();
  return out;
}

std::optional<TraceResults> runTrace(const TraceOptions &options, DiagnosticEngine &diags,
                                     const std::function<bool()> &stop) {
  if (options.mechanism == TraceMechanism::Interposer)
    return runInterposerTrace(options, diags, stop);
  std::unique_ptr<TraceSession> session = TraceSession::start(options, diags);
  if (!session)
    return std::nullopt;
  session->run(stop);
  return session->finish(diags);
}

} // namespace msc::trace

// bench_exec: numbers for docs/PERFORMANCE.md.
//   BM_Apply/pool:0|1        Session apply + release of a one-role plan (cgroups, io_uring check),
//                            with a 4 x 2MiB pool whose pages are reserved each time (pool:1). Root.
//   BM_Read/<reader>/<set>   io_uring reader (depth 64, 1 MiB blocks) vs open+read()+close, on
//                            2000 x 64 KiB files and one 256 MiB file, from page cache (warmed first);
//                            reader_bench measures the cold case, the reader's modes and fio.
//   BM_ReadAt/<reader>       the reader's random-access mode vs pread: 4 KiB records at 16384
//                            scattered offsets of the 256 MiB file, one at a time (a record loader).
#include "executor/Session.h"
#include "hal/LiveRefresh.h"
#include "hal/Loader.h"
#include "worker/IoUringReader.h"

#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

using namespace msc;
using namespace msc::exec;
using namespace msc::worker;

namespace {

plan::Plan benchPlan(bool pool, const hal::Topology &live) {
  plan::Plan p;
  p.mutable_provenance()->set_contract("bench_apply");
  p.mutable_provenance()->set_topology_fingerprint(live.fingerprint());
  plan::IoBinding *b = p.add_io_bindings();
  b->set_role("data");
  b->add_cpus(0);
  b->add_physical_cores(0);
  b->set_numa_node(0);
  b->set_io_uring_depth(64);
  if (pool) {
    plan::MemoryPool *m = p.add_memory_pools();
    m->set_role("data");
    m->set_page_size(2 << 20);
    m->set_pages(4);
    m->set_numa_node(0);
    m->set_reserve_pages(4);
  }
  return p;
}

void BM_Apply(benchmark::State &state) {
  if (geteuid() != 0) {
    state.SkipWithError("needs root");
    return;
  }
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<hal::Topology> live = hal::loadTopology(hal::TopologySource::liveMachine(), diags);
  Logger log("bench", false);
  SessionOptions o;
  o.appliers.cgroups = CgroupLayout::discover();
  plan::Plan p = benchPlan(state.range(0) != 0, *live);
  for (auto _ : state) {
    Session s(p, "bench_apply", "bench", log, o);
    if (!s.apply(diags)) {
      state.SkipWithError(sink.diags.empty() ? "apply failed" : sink.diags.back().message.c_str());
      return;
    }
    s.release(diags);
  }
}
BENCHMARK(BM_Apply)->ArgName("pool")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

void BM_RecheckLiveTopology(benchmark::State &state) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  for (auto _ : state)
    benchmark::DoNotOptimize(hal::loadTopology(hal::TopologySource::liveMachine(), diags));
}
BENCHMARK(BM_RecheckLiveTopology)->Unit(benchmark::kMillisecond);

// What the agent does per submit now (executor/agent/NodeLedger.cpp): the topology discovered once,
// then only hugepages, online CPUs, temperatures and RDMA port states re-read. The full discovery
// above is its baseline, in the same run.
void BM_RefreshLiveTopology(benchmark::State &state) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<hal::Topology> live = hal::loadTopology(hal::TopologySource::liveMachine(), diags);
  if (!live) {
    state.SkipWithError("live discovery failed");
    return;
  }
  std::optional<hal::Topology> updated;
  for (auto _ : state) {
    updated.reset();
    benchmark::DoNotOptimize(hal::refreshLiveFacts(*live, "/", updated));
  }
}
BENCHMARK(BM_RefreshLiveTopology)->Unit(benchmark::kMicrosecond);

struct Files {
  std::vector<std::string> small, large;
  uint64_t smallBytes = 0, largeBytes = 0;
  std::string dir;
  Files() {
    char tmpl[] = "/tmp/msc-bench-exec-XXXXXX";
    dir = mkdtemp(tmpl);
    std::string block(64 << 10, 'x');
    for (int i = 0; i < 2000; ++i) {
      small.push_back(dir + "/s" + std::to_string(i));
      int fd = ::open(small.back().c_str(), O_WRONLY | O_CREAT, 0644);
      (void)!::write(fd, block.data(), block.size());
      ::close(fd);
      smallBytes += block.size();
    }
    large.push_back(dir + "/large");
    int fd = ::open(large.back().c_str(), O_WRONLY | O_CREAT, 0644);
    std::string mb(1 << 20, 'y');
    for (int i = 0; i < 256; ++i)
      (void)!::write(fd, mb.data(), mb.size());
    ::close(fd);
    largeBytes = 256ull << 20;
  }
  ~Files() { std::filesystem::remove_all(dir); }
};

Files &files() {
  static Files f;
  return f;
}

void readSet(benchmark::State &state, bool uring, bool large) {
  Files &f = files();
  const std::vector<std::string> &paths = large ? f.large : f.small;
  uint64_t bytes = large ? f.largeBytes : f.smallBytes;
  std::string error;
  uint64_t sum = 0;
  auto consume = [&](size_t, uint64_t, std::string_view d) { sum += static_cast<unsigned char>(d.front()); };
  readFilesPlain(paths, 1 << 20, consume, error); // warm the page cache
  // A loader keeps its reader (and the reader its registered buffers) across passes.
  std::unique_ptr<IoUringReader> r = uring ? IoUringReader::create(64, 1 << 20, error) : nullptr;
  for (auto _ : state) {
    bool ok;
    if (uring) {
      ok = r && r->readFiles(paths, consume, error);
    } else {
      ok = readFilesPlain(paths, 1 << 20, consume, error);
    }
    if (!ok) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetBytesProcessed(static_cast<int64_t>(bytes * state.iterations()));
}

void BM_Read_IoUring_Small(benchmark::State &s) { readSet(s, true, false); }
void BM_Read_Plain_Small(benchmark::State &s) { readSet(s, false, false); }
void BM_Read_IoUring_Large(benchmark::State &s) { readSet(s, true, true); }
void BM_Read_Plain_Large(benchmark::State &s) { readSet(s, false, true); }
BENCHMARK(BM_Read_IoUring_Small)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Read_Plain_Small)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Read_IoUring_Large)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Read_Plain_Large)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void readAtSet(benchmark::State &state, bool uring) {
  Files &f = files();
  const std::string &path = f.large.front();
  std::vector<uint64_t> offsets(16384);
  uint64_t x = 42;
  for (uint64_t &o : offsets) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    o = (x >> 11) % (f.largeBytes - 4096);
  }
  std::string error;
  std::unique_ptr<IoUringReader> r = IoUringReader::create(8, 4096, error);
  OpenFiles open;
  int fd = open.fd(path);
  if (!r || fd < 0) {
    state.SkipWithError(r ? "cannot open the file" : error.c_str());
    return;
  }
  std::vector<char> buf(4096);
  for (auto _ : state)
    for (uint64_t o : offsets)
      if ((uring ? r->readAt(path, o, buf.data(), buf.size()) : preadFully(fd, o, buf.data(), buf.size())) != 4096) {
        state.SkipWithError("short read");
        return;
      }
  state.SetItemsProcessed(static_cast<int64_t>(offsets.size() * state.iterations()));
}

void BM_ReadAt_IoUring(benchmark::State &s) { readAtSet(s, true); }
void BM_ReadAt_Pread(benchmark::State &s) { readAtSet(s, false); }
BENCHMARK(BM_ReadAt_IoUring)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_ReadAt_Pread)->Unit(benchmark::kMillisecond)->MinTime(1.0);

} // namespace

BENCHMARK_MAIN();

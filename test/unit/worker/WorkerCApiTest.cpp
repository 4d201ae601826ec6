// The worker runtime's C ABI through dlopen/dlsym, as Python's ctypes uses it: batched reads at the
// queue depth, whole files, errors per request, the role's depth and CPUs, pinning every thread,
// the heartbeat on a control page. Also checks that only the C ABI is exported.
#include "worker/BatchReader.h"
#include "worker/WorkerApi.h"
#include <csignal>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/futex.h>
#include <cstddef>
#include "worker/mscale_worker.h"

#include "worker/ControlPage.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>((i * 131 + seed * 7 + i / 251) & 0xff);
  return s;
}

// The calling thread's allowed CPUs, as /proc/<pid>/task/<tid>/status says them.
std::string allowedList(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0)
      return line.substr(line.find_first_not_of(" \t", 18));
  return "";
}

class WorkerCApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    lib = ::dlopen(MSC_WORKER_SO, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << ::dlerror();
    char tmpl[] = "/tmp/msc-workercapi-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (lib)
      ::dlclose(lib);
  }
  template <class F> F fn(const char *name) {
    void *p = ::dlsym(lib, name);
    EXPECT_NE(p, nullptr) << name << " is not exported";
    return reinterpret_cast<F>(p);
  }
  std::string write(const std::string &name, const std::string &content) {
    std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::string lastError() { return fn<const char *(*)()>("msc_worker_last_error")(); }
  msc_worker_reader *open(unsigned depth, uint64_t chunk = 0) {
    msc_worker_reader *r = nullptr;
    EXPECT_EQ(fn<decltype(&msc_worker_reader_open)>("msc_worker_reader_open")(depth, chunk, &r), 0) << lastError();
    return r;
  }
  void *lib = nullptr;
  std::string dir;
};

TEST_F(WorkerCApiTest, AbiVersion) {
  EXPECT_EQ(fn<decltype(&msc_worker_abi_version)>("msc_worker_abi_version")(), MSC_WORKER_ABI_VERSION);
}

TEST_F(WorkerCApiTest, ReadsAWholeFileAndRefusesASmallBuffer) {
  auto readFile = fn<decltype(&msc_worker_read_file)>("msc_worker_read_file");
  std::string content = pattern(3 * 65536 + 17, 1);
  std::string path = write("big", content);
  msc_worker_reader *r = open(4, 65536);
  std::vector<char> buf(content.size());
  uint64_t size = 0;
  ASSERT_EQ(readFile(r, path.c_str(), buf.data(), buf.size(), &size), 0) << lastError();
  EXPECT_EQ(size, content.size());
  EXPECT_EQ(std::string(buf.data(), size), content);
  // Four pieces of 64 KiB: one file alone fills the queue.
  EXPECT_EQ(fn<decltype(&msc_worker_reader_max_in_flight)>("msc_worker_reader_max_in_flight")(r), 4u);

  EXPECT_EQ(readFile(r, path.c_str(), buf.data(), 10, &size), EOVERFLOW);
  EXPECT_EQ(size, content.size());
  EXPECT_NE(lastError().find("buffer holds 10"), std::string::npos) << lastError();

  std::string empty = write("empty", "");
  ASSERT_EQ(readFile(r, empty.c_str(), nullptr, 0, &size), 0) << lastError();
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(readFile(r, (dir + "/missing").c_str(), buf.data(), buf.size(), &size), ENOENT);
  EXPECT_EQ(lastError(), "cannot open '" + dir + "/missing': No such file or directory");
  EXPECT_EQ(readFile(r, dir.c_str(), buf.data(), buf.size(), &size), EISDIR);
  fn<decltype(&msc_worker_reader_close)>("msc_worker_reader_close")(r);
}

TEST_F(WorkerCApiTest, ReadsABatchAtTheQueueDepth) {
  auto readBatch = fn<decltype(&msc_worker_read_batch)>("msc_worker_read_batch");
  std::vector<std::string> contents, paths;
  for (unsigned i = 0; i < 200; ++i) {
    contents.push_back(pattern(i == 7 ? 0 : 100 + i * 97, i));
    paths.push_back(write("f" + std::to_string(i), contents.back()));
  }
  std::vector<std::string> bufs(contents.size());
  std::vector<msc_worker_read> reads;
  for (size_t i = 0; i < paths.size(); ++i) {
    bufs[i].resize(contents[i].size());
    reads.push_back({paths[i].c_str(), -1, 0, contents[i].size(), bufs[i].data(), 0, 0});
  }
  msc_worker_reader *r = open(16);
  uint64_t failed = 99;
  ASSERT_EQ(readBatch(r, reads.data(), reads.size(), &failed), 0) << lastError();
  EXPECT_EQ(failed, 99u);
  for (size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(reads[i].result, static_cast<int64_t>(contents[i].size())) << i;
    EXPECT_EQ(bufs[i], contents[i]) << i;
  }
  EXPECT_EQ(fn<decltype(&msc_worker_reader_max_in_flight)>("msc_worker_reader_max_in_flight")(r), 16u);
  uint64_t total = 0;
  for (const std::string &c : contents)
    total += c.size();
  EXPECT_EQ(fn<decltype(&msc_worker_reader_bytes_read)>("msc_worker_reader_bytes_read")(r), total);
  fn<decltype(&msc_worker_reader_close)>("msc_worker_reader_close")(r);
}

TEST_F(WorkerCApiTest, RangesFdsShortReadsAndFailuresPerRequest) {
  auto readBatch = fn<decltype(&msc_worker_read_batch)>("msc_worker_read_batch");
  std::string content = pattern(10000, 3);
  std::string path = write("data", content);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::string missing = dir + "/missing";
  std::vector<char> a(100), b(5000), c(300), d(10), e(10);
  std::vector<msc_worker_read> reads = {
      {path.c_str(), -1, 1234, 100, a.data(), 0, 0},
      {nullptr, fd, 4000, 5000, b.data(), 0, 0},      // by fd, over several 1 KiB pieces
      {path.c_str(), -1, 9900, 300, c.data(), 0, 0},  // past the end: short
      {missing.c_str(), -1, 0, 10, d.data(), 0, 0},   // fails alone, at the open
      {dir.c_str(), -1, 0, 10, e.data(), 0, 0},       // a directory opens but does not read
  };
  msc_worker_reader *r = open(3, 1024);
  uint64_t failed = 0;
  EXPECT_EQ(readBatch(r, reads.data(), reads.size(), &failed), ENOENT);
  EXPECT_EQ(failed, 3u);
  EXPECT_EQ(lastError(), "cannot open '" + missing + "': No such file or directory");
  EXPECT_EQ(reads[0].result, 100);
  EXPECT_EQ(std::string(a.data(), 100), content.substr(1234, 100));
  EXPECT_EQ(reads[1].result, 5000);
  EXPECT_EQ(std::string(b.data(), 5000), content.substr(4000, 5000));
  EXPECT_EQ(reads[2].result, 100);
  EXPECT_EQ(std::string(c.data(), 100), content.substr(9900));
  EXPECT_EQ(reads[3].result, -ENOENT);
  EXPECT_EQ(reads[3].failed_open, 1);
  EXPECT_EQ(reads[4].result, -EISDIR);
  EXPECT_EQ(reads[4].failed_open, 0);
  // The fd is the caller's: still open.
  EXPECT_EQ(::fcntl(fd, F_GETFD), FD_CLOEXEC);
  ::close(fd);
  fn<decltype(&msc_worker_reader_close)>("msc_worker_reader_close")(r);
}

TEST_F(WorkerCApiTest, RefusesADepthIoUringRefuses) {
  msc_worker_reader *r = nullptr;
  auto openReader = fn<decltype(&msc_worker_reader_open)>("msc_worker_reader_open");
  EXPECT_EQ(openReader(0, 0, &r), EINVAL);
  EXPECT_NE(openReader(1u << 20, 0, &r), 0); // io_uring takes at most 32768 entries
  EXPECT_NE(lastError().find("io_uring_queue_init(1048576)"), std::string::npos) << lastError();
}

TEST_F(WorkerCApiTest, RoleDepthAndCpusFromTheEnvironment) {
  auto depthOf = fn<decltype(&msc_worker_role_io_depth)>("msc_worker_role_io_depth");
  auto cpusOf = fn<decltype(&msc_worker_role_cpus)>("msc_worker_role_cpus");
  unsigned depth = 0;
  ::unsetenv("MSCALE_ROLE_CAPI_TEST_IO_DEPTH");
  EXPECT_EQ(depthOf("capi-test", &depth), ENOENT);
  ::setenv("MSCALE_ROLE_CAPI_TEST_IO_DEPTH", "48", 1);
  EXPECT_EQ(depthOf("capi-test", &depth), 0);
  EXPECT_EQ(depth, 48u);
  for (const char *bad : {"", "0", "-3", "12x", "99999999999"}) {
    ::setenv("MSCALE_ROLE_CAPI_TEST_IO_DEPTH", bad, 1);
    EXPECT_EQ(depthOf("capi-test", &depth), EINVAL) << bad;
  }
  EXPECT_EQ(lastError(), "MSCALE_ROLE_CAPI_TEST_IO_DEPTH='99999999999' is not a positive number");
  ::unsetenv("MSCALE_ROLE_CAPI_TEST_IO_DEPTH");

  unsigned cpus[4];
  uint64_t count = 0;
  ::unsetenv("MSCALE_ROLE_CAPI_TEST_CPUS");
  EXPECT_EQ(cpusOf("capi-test", cpus, 4, &count), ENOENT);
  ::setenv("MSCALE_ROLE_CAPI_TEST_CPUS", "2-3,7,9-11", 1);
  EXPECT_EQ(cpusOf("capi-test", cpus, 4, &count), 0);
  EXPECT_EQ(count, 6u);
  EXPECT_EQ(cpus[3], 9u);
  ::setenv("MSCALE_ROLE_CAPI_TEST_CPUS", "a-b", 1);
  EXPECT_EQ(cpusOf("capi-test", cpus, 4, &count), EINVAL);
  ::unsetenv("MSCALE_ROLE_CAPI_TEST_CPUS");
}

TEST_F(WorkerCApiTest, PinsEveryThreadOfTheProcessAndNamesTheCaller) {
  cpu_set_t before;
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  unsigned cpu = 0;
  while (!CPU_ISSET(cpu, &before))
    ++cpu;
  std::atomic<bool> stop{false};
  std::atomic<pid_t> otherTid{0};
  std::thread other([&] {
    otherTid = static_cast<pid_t>(::gettid());
    while (!stop)
      std::this_thread::yield();
  });
  while (!otherTid)
    std::this_thread::yield();
  ::setenv("MSCALE_ROLE_CAPI_LOADER_CPUS", std::to_string(cpu).c_str(), 1);
  auto pin = fn<decltype(&msc_worker_pin_to_role)>("msc_worker_pin_to_role");
  EXPECT_EQ(pin("capi-loader"), 0) << lastError();
  EXPECT_EQ(allowedList(static_cast<pid_t>(::gettid())), std::to_string(cpu));
  EXPECT_EQ(allowedList(otherTid), std::to_string(cpu));
  char name[16] = {};
  ::pthread_getname_np(::pthread_self(), name, sizeof name);
  EXPECT_STREQ(name, "capi-loader");
  stop = true;
  other.join();

  ::setenv("MSCALE_ROLE_CAPI_LOADER_CPUS", "100000", 1); // no such CPU: the kernel refuses
  EXPECT_EQ(pin("capi-loader"), EINVAL);
  EXPECT_EQ(lastError(), "sched_setaffinity(cpus 100000): Invalid argument");
  ::unsetenv("MSCALE_ROLE_CAPI_LOADER_CPUS");
  EXPECT_EQ(pin("capi-loader"), ENOENT);
  EXPECT_EQ(lastError(), "MSCALE_ROLE_CAPI_LOADER_CPUS is not set");
  ASSERT_EQ(::sched_setaffinity(0, sizeof before, &before), 0);
}

TEST_F(WorkerCApiTest, HeartbeatsOnTheControlPage) {
  // The library finds the page once, on first use: set it up before any call that needs it.
  int fd = ::memfd_create("capi-control", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  void *p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto *page = new (p) mscale::worker::ControlPage{};
  page->magic = mscale::worker::ControlPage::kMagic;
  ::setenv("MSCALE_CONTROL_FD", std::to_string(fd).c_str(), 1);
  ::setenv("MSCALE_PHASES", "decode,compute,eval", 1);
  EXPECT_EQ(fn<decltype(&msc_worker_supervised)>("msc_worker_supervised")(), 1);
  auto beat = fn<decltype(&msc_worker_heartbeat)>("msc_worker_heartbeat");
  beat(MSC_WORKER_STEP_RESTORING);
  EXPECT_EQ(page->step.load(), UINT64_MAX);
  beat(41);
  beat(42);
  EXPECT_EQ(page->beats.load(), 3u);
  EXPECT_EQ(page->step.load(), 42u);
  fn<decltype(&msc_worker_report_throughput)>("msc_worker_report_throughput")(1.25);
  EXPECT_EQ(page->milliTflops.load(), 1250u);
  // The worker's failure word, through the C ABI: its line and whether a restart can help.
  auto failed = fn<decltype(&msc_worker_failed)>("msc_worker_failed");
  EXPECT_EQ(failed(nullptr, 0), EINVAL);
  EXPECT_EQ(page->failure.load(), 0u) << "a refused call says nothing";
  EXPECT_EQ(failed("error: shard 3 is corrupt\nmore", 1), 0);
  EXPECT_EQ(page->failure.load(), uint32_t(mscale::worker::Failure::RetryCannotFix));
  EXPECT_STREQ(page->failureLine, "error: shard 3 is corrupt");

  // Phases: numbered in MSCALE_PHASES order, entered by name, counted, timed; "" is between phases.
  auto enter = fn<decltype(&msc_worker_enter_phase)>("msc_worker_enter_phase");
  auto current = fn<decltype(&msc_worker_current_phase)>("msc_worker_current_phase");
  char name[16];
  EXPECT_EQ(current(name, sizeof name), 0);
  EXPECT_STREQ(name, "");
  EXPECT_EQ(enter("compute"), 0);
  EXPECT_EQ(page->phase.load(), 2u);
  EXPECT_EQ(page->phaseEntries.load(), 1u);
  EXPECT_GT(page->phaseEnteredNs.load(), 0u);
  EXPECT_EQ(current(name, sizeof name), 0);
  EXPECT_STREQ(name, "compute");
  EXPECT_EQ(current(name, 4), ERANGE);
  EXPECT_EQ(enter("evaluate"), ENOENT);
  EXPECT_EQ(page->phase.load(), 2u) << "a name the plan does not have changes nothing";
  EXPECT_EQ(enter(nullptr), 0);
  EXPECT_EQ(page->phase.load(), 0u);
  EXPECT_EQ(page->phaseEntries.load(), 2u);

  // Entering a phase is stores alone, no system call, unless the node asked to be woken for it: a
  // child under a seccomp filter that kills it at any system call but exit enters phases 10,000
  // times and exits; with the node waiting on phase 3 the entry of phase 3 is its futex wake. (A
  // filter, not strict mode: strict mode also takes the TSC away, which the vDSO clock reads.)
  auto enterUnderFilter = [&](uint32_t wake) {
    page->phaseWake.store(wake);
    pid_t child = ::fork();
    if (child == 0) {
      sock_filter onlyExit[] = {
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit, 0, 1),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      };
      sock_fprog program{sizeof onlyExit / sizeof onlyExit[0], onlyExit};
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0)
        ::syscall(SYS_exit, 3);
      for (int i = 0; i < 10000; ++i)
        enter(i % 2 ? "decode" : "eval");
      ::syscall(SYS_exit, 0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return status;
  };
  int status = enterUnderFilter(0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  status = enterUnderFilter(1u << 2);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) << "status " << status;
  page->phaseWake.store(0);

  // Yielding what is lent (a borrower's): any call marks the worker as one that cooperates; the
  // node's ask is seen with the time left; yield acknowledges it and returns once it is withdrawn.
  auto requested = fn<decltype(&msc_worker_yield_requested)>("msc_worker_yield_requested");
  auto waitAsk = fn<decltype(&msc_worker_wait_yield_request)>("msc_worker_wait_yield_request");
  auto yieldNow = fn<decltype(&msc_worker_yield)>("msc_worker_yield");
  EXPECT_EQ(page->cooperates.load(), 0u);
  EXPECT_EQ(requested(), -1) << "nothing asked";
  EXPECT_EQ(page->cooperates.load(), 1u);
  EXPECT_EQ(yieldNow(), 0) << "nothing to yield: at once";
  EXPECT_EQ(waitAsk(1'000'000), 0) << "not asked within 1 ms";
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t nowNs = uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
  page->yieldByNs.store(nowNs + 60'000'000'000u);
  page->yieldAsk.store(7);
  int64_t left = requested();
  EXPECT_GT(left, 59'000'000'000);
  EXPECT_LE(left, 60'000'000'000);
  EXPECT_EQ(waitAsk(1'000'000), 1);
  std::thread node([&] { // the node: frozen once acknowledged, lent again later
    while (page->yieldAck.load() != 7)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    page->yieldAsk.store(0);
    ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&page->yieldAsk), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  });
  auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(yieldNow(), 1);
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(20)) << "returned before it was lent again";
  node.join();
  EXPECT_EQ(page->yieldAck.load(), 7u);
  page->yieldByNs.store(nowNs);
  page->yieldAsk.store(8);
  EXPECT_EQ(requested(), 0) << "the time is up";
  page->yieldAsk.store(0);

  // GPU slice hand-overs: a borrower is told of its lent units and to let go of them, and says so.
  auto pending = fn<decltype(&msc_worker_gpu_slices_pending)>("msc_worker_gpu_slices_pending");
  auto acknowledge = fn<decltype(&msc_worker_acknowledge_gpu_slices)>("msc_worker_acknowledge_gpu_slices");
  char slices[64];
  EXPECT_EQ(pending(slices, sizeof slices), 0) << "nothing handed over";
  uint64_t lent = msc::worker::publishSlices(*page, "lent@0:64:0:0");
  EXPECT_EQ(pending(slices, 4), -ERANGE);
  EXPECT_EQ(pending(slices, sizeof slices), int64_t(lent));
  EXPECT_STREQ(slices, "lent@0:64:0:0");
  acknowledge(lent);
  EXPECT_EQ(page->ackGeneration.load(), lent);
  EXPECT_EQ(pending(slices, sizeof slices), 0) << "taken";
  uint64_t letGo = msc::worker::publishSlices(*page, "");
  EXPECT_EQ(pending(slices, sizeof slices), int64_t(letGo));
  EXPECT_STREQ(slices, "");
  acknowledge(letGo);
  EXPECT_EQ(page->ackGeneration.load(), letGo);

  // A borrower's queue-pair hand-over, on its own words beside the slices': told, taken, let go.
  auto qpsPending = fn<decltype(&msc_worker_rdma_queue_pairs_pending)>("msc_worker_rdma_queue_pairs_pending");
  auto qpsAcknowledge = fn<decltype(&msc_worker_acknowledge_rdma_queue_pairs)>("msc_worker_acknowledge_rdma_queue_pairs");
  char queuePairs[64];
  EXPECT_EQ(qpsPending(queuePairs, sizeof queuePairs), 0) << "nothing handed over";
  uint64_t qpsLent = msc::worker::publishQueuePairs(*page, "lent@mlx5_0:1:2:64");
  EXPECT_EQ(pending(slices, sizeof slices), 0) << "a queue-pair hand-over is not a slice hand-over";
  EXPECT_EQ(qpsPending(queuePairs, 8), -ERANGE);
  EXPECT_EQ(qpsPending(queuePairs, sizeof queuePairs), int64_t(qpsLent));
  EXPECT_STREQ(queuePairs, "lent@mlx5_0:1:2:64");
  qpsAcknowledge(qpsLent);
  EXPECT_EQ(page->queuePairAck.load(), qpsLent);
  EXPECT_EQ(qpsPending(queuePairs, sizeof queuePairs), 0) << "taken";
  uint64_t qpsLetGo = msc::worker::publishQueuePairs(*page, "");
  EXPECT_EQ(qpsPending(queuePairs, sizeof queuePairs), int64_t(qpsLetGo));
  EXPECT_STREQ(queuePairs, "");
  qpsAcknowledge(qpsLetGo);
  EXPECT_EQ(page->queuePairAck.load(), qpsLetGo);
  EXPECT_EQ(msc::worker::publishQueuePairs(*page, std::string(sizeof page->queuePairs, 'x')), 0u)
      << "a text the page cannot hold is not published";

  // A planned stop (a drain): the step the executor asks for is read back; the worker says it
  // stopped there, which marks it finishing too. Step 0 is refused: on the page it means "not stopped".
  auto stopRequested = fn<decltype(&msc_worker_stop_requested)>("msc_worker_stop_requested");
  auto stoppedAt = fn<decltype(&msc_worker_stopped_at)>("msc_worker_stopped_at");
  EXPECT_EQ(stopRequested(), 0u) << "nothing asked";
  page->stopAfterStep.store(50);
  EXPECT_EQ(stopRequested(), 50u);
  page->finishing.store(0);
  EXPECT_EQ(stoppedAt(0), EINVAL);
  EXPECT_EQ(page->stoppedAtStep.load(), 0u) << "a refused call says nothing";
  EXPECT_EQ(page->finishing.load(), 0u);
  EXPECT_EQ(stoppedAt(50), 0);
  EXPECT_EQ(page->stoppedAtStep.load(), 50u);
  EXPECT_EQ(page->finishing.load(), 1u);
  ::unsetenv("MSCALE_PHASES");
  ::unsetenv("MSCALE_CONTROL_FD");
  ::munmap(p, 4096);
  ::close(fd);
}

TEST_F(WorkerCApiTest, OnlyTheCAbiIsExported) {
  EXPECT_EQ(::dlsym(lib, "_ZN3msc6worker11BatchReader4readEPNS0_11ReadRequestEmRNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERm"), nullptr);
  // liburing's functions resolve through the library's dependencies, never from it.
  Dl_info info;
  void *uring = ::dlsym(lib, "io_uring_queue_init");
  ASSERT_NE(uring, nullptr);
  ASSERT_NE(::dladdr(uring, &info), 0);
  EXPECT_EQ(std::string(info.dli_fname).find("mscale_worker"), std::string::npos) << info.dli_fname;
  EXPECT_NE(::dlsym(lib, "msc_worker_read_batch"), nullptr);
}

// The engine under the C ABI, linked directly: one piece per queue slot, retries of the rest.
TEST(BatchReader, ManyPiecesOfOneRequestAndTheDepth) {
  char tmpl[] = "/tmp/msc-batchreader-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/f", content = pattern(1 << 20, 9);
  std::ofstream(path, std::ios::binary) << content;
  std::string error;
  int err = 0;
  auto reader = msc::worker::BatchReader::create(8, 4096, error, err);
  ASSERT_TRUE(reader) << error;
  std::string buf(content.size() + 4096, '\0');
  msc::worker::ReadRequest req;
  req.path = path.c_str();
  req.length = buf.size(); // a page more than the file holds
  req.buffer = buf.data();
  size_t failed = 0;
  ASSERT_EQ(reader->read(&req, 1, error, failed), 0) << error;
  EXPECT_EQ(req.result, static_cast<int64_t>(content.size()));
  EXPECT_EQ(buf.substr(0, content.size()), content);
  EXPECT_EQ(reader->maxInFlight(), 8u);
  std::filesystem::remove_all(tmpl);
}

} // namespace

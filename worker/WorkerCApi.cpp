// The C ABI (mscale_worker.h) over BatchReader and WorkerApi.h.
#include "worker/mscale_worker.h"

#include "worker/BatchReader.h"
#include "worker/WorkerApi.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace msc::worker;

struct msc_worker_reader {
  std::unique_ptr<BatchReader> reader;
};

namespace {
thread_local std::string lastError;

int fail(int err, std::string message) {
  lastError = std::move(message);
  return err;
}

std::string quoted(const char *s) { return "'" + std::string(s) + "'"; }

// The role's CPUs, or an errno value with the reason in lastError.
int roleCpuList(const char *role, std::vector<unsigned> &cpus) {
  std::string var = mscale::worker::roleVariable(role, "_CPUS");
  const char *v = std::getenv(var.c_str());
  if (!v)
    return fail(ENOENT, var + " is not set");
  cpus = mscale::worker::roleCpus(role);
  if (cpus.empty())
    return fail(EINVAL, var + "=" + quoted(v) + " is not a cpu list");
  return 0;
}

std::string cpuText(const std::vector<unsigned> &cpus) { return msc::formatCpuList(cpus); }

// A pending hand-over's text copied out for C: its generation, 0 when none, -ERANGE when it does
// not fit `capacity` bytes with its NUL.
int64_t copyHandOver(bool (*pending)(uint64_t &, std::string &), char *out, uint64_t capacity) {
  uint64_t generation = 0;
  std::string text;
  if (!pending(generation, text))
    return 0;
  if (!out || text.size() + 1 > capacity)
    return -ERANGE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return int64_t(generation);
}

} // namespace

extern "C" {

int msc_worker_abi_version(void) { return MSC_WORKER_ABI_VERSION; }
const char *msc_worker_last_error(void) { return lastError.c_str(); }

int msc_worker_reader_open(unsigned queue_depth, uint64_t chunk_bytes, msc_worker_reader **out) {
  if (!out)
    return fail(EINVAL, "msc_worker_reader_open needs an output pointer");
  std::string error;
  int err = 0;
  auto reader = BatchReader::create(queue_depth, chunk_bytes ? chunk_bytes : (uint64_t(1) << 20), error, err);
  if (!reader)
    return fail(err, error);
  *out = new msc_worker_reader{std::move(reader)};
  return 0;
}

void msc_worker_reader_close(msc_worker_reader *reader) { delete reader; }
unsigned msc_worker_reader_depth(const msc_worker_reader *r) { return r ? r->reader->depth() : 0; }
unsigned msc_worker_reader_max_in_flight(const msc_worker_reader *r) { return r ? r->reader->maxInFlight() : 0; }
uint64_t msc_worker_reader_bytes_read(const msc_worker_reader *r) { return r ? r->reader->bytesRead() : 0; }

int msc_worker_read_file(msc_worker_reader *r, const char *path, void *buffer, uint64_t capacity, uint64_t *size) {
  if (!r || !path || !size || (capacity && !buffer))
    return fail(EINVAL, "msc_worker_read_file needs a reader, a path, a buffer and a size pointer");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(errno, "cannot open " + quoted(path) + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return fail(err, "cannot read " + quoted(path) + ": " + std::strerror(err));
  }
  *size = static_cast<uint64_t>(st.st_size);
  if (*size > capacity) {
    ::close(fd);
    return fail(EOVERFLOW, quoted(path) + " has " + std::to_string(*size) + " bytes; the buffer holds " +
                               std::to_string(capacity));
  }
  ReadRequest req;
  req.fd = fd;
  req.length = *size;
  req.buffer = buffer;
  std::string error;
  size_t failed = 0;
  int err = r->reader->read(&req, 1, error, failed);
  ::close(fd);
  if (err)
    return fail(err, "read of " + quoted(path) + " at byte 0: " + std::strerror(err));
  *size = static_cast<uint64_t>(req.result); // fewer when the file shrank since fstat
  return 0;
}

int msc_worker_read_batch(msc_worker_reader *r, msc_worker_read *reads, uint64_t count, uint64_t *failed_index) {
  if (!r || (count && !reads))
    return fail(EINVAL, "msc_worker_read_batch needs a reader and the reads");
  // The C struct and ReadRequest differ in layout guarantees; copy in and out (cheap next to I/O).
  std::vector<ReadRequest> requests(count);
  for (uint64_t i = 0; i < count; ++i)
    requests[i] = {reads[i].path, reads[i].fd, reads[i].offset, reads[i].length, reads[i].buffer, 0, false};
  std::string error;
  size_t failed = 0;
  int err = r->reader->read(requests.data(), requests.size(), error, failed);
  for (uint64_t i = 0; i < count; ++i) {
    reads[i].result = requests[i].result;
    reads[i].failed_open = requests[i].openFailed;
  }
  if (!err)
    return 0;
  if (failed_index)
    *failed_index = failed;
  return fail(err, error);
}

int msc_worker_role_io_depth(const char *role, unsigned *depth) {
  if (!role || !depth)
    return fail(EINVAL, "msc_worker_role_io_depth needs a role and a depth pointer");
  int err = roleIoDepth(role, *depth);
  std::string var = mscale::worker::roleVariable(role, "_IO_DEPTH");
  if (err == ENOENT)
    return fail(err, var + " is not set");
  if (err)
    return fail(err, var + "=" + quoted(std::getenv(var.c_str())) + " is not a positive number");
  return 0;
}

int msc_worker_role_cpus(const char *role, unsigned *cpus, uint64_t capacity, uint64_t *count) {
  if (!role || !count || (capacity && !cpus))
    return fail(EINVAL, "msc_worker_role_cpus needs a role, a buffer and a count pointer");
  std::vector<unsigned> list;
  if (int err = roleCpuList(role, list))
    return err;
  for (uint64_t i = 0; i < list.size() && i < capacity; ++i)
    cpus[i] = list[i];
  *count = list.size();
  return 0;
}

int msc_worker_pin_thread_to_role(const char *role) {
  if (!role)
    return fail(EINVAL, "msc_worker_pin_thread_to_role needs a role");
  std::vector<unsigned> cpus;
  if (int err = roleCpuList(role, cpus))
    return err;
  if (int err = mscale::worker::pinThisThreadToRole(role))
    return fail(err, "sched_setaffinity(cpus " + cpuText(cpus) + "): " + std::strerror(err));
  return 0;
}

int msc_worker_pin_to_role(const char *role) {
  if (int err = msc_worker_pin_thread_to_role(role))
    return err;
  std::vector<unsigned> cpus = mscale::worker::roleCpus(role);
  // Threads may start while we walk the list (they inherit the mask of the thread that starts
  // them, which may be one not pinned yet): walk until a pass finds no thread it had not seen.
  std::set<pid_t> pinned{static_cast<pid_t>(::gettid())};
  for (bool again = true; again;) {
    again = false;
    DIR *dir = ::opendir("/proc/self/task");
    if (!dir)
      return fail(errno, std::string("cannot list the threads of this process: ") + std::strerror(errno));
    while (dirent *e = ::readdir(dir)) {
      pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      if (tid <= 0 || pinned.count(tid))
        continue;
      int err = mscale::worker::pinToCpus(tid, cpus);
      if (err && err != ESRCH) { // ESRCH: the thread ended meanwhile
        ::closedir(dir);
        return fail(err, "sched_setaffinity(thread " + std::to_string(tid) + ", cpus " + cpuText(cpus) +
                             "): " + std::strerror(err));
      }
      pinned.insert(tid);
      again = true;
    }
    ::closedir(dir);
  }
  return 0;
}

// Not a use of the page: a standby may ask before it has the job.
int msc_worker_supervised(void) { return mscale::worker::detail::mapControlPage() != nullptr; }
void msc_worker_heartbeat(uint64_t step) { mscale::worker::heartbeat(step); }
void msc_worker_finishing(void) { mscale::worker::finishing(); }
void msc_worker_nothing_to_resume(void) { mscale::worker::nothingToResume(); }
int msc_worker_failed(const char *line, int retry_cannot_fix) {
  if (!line)
    return EINVAL;
  using mscale::worker::Failure;
  mscale::worker::failed(retry_cannot_fix ? Failure::RetryCannotFix : Failure::Retryable, line);
  return 0;
}
int msc_worker_standby(void) { return mscale::worker::standby() ? 1 : 0; }
void msc_worker_take_over(void) { mscale::worker::takeOver(); }

int msc_worker_enter_phase(const char *name) {
  unsigned number = 0;
  // Where the executor names no phases (no mscale-exec, or a plan without them) the same script
  // runs unchanged: entering is a no-op. Where it does, a name it does not list is a mistake.
  if (name && *name && !(number = mscale::worker::phaseNumber(name)))
    return mscale::worker::phaseNames().empty() ? 0 : ENOENT;
  mscale::worker::enterPhase(number);
  return 0;
}

int msc_worker_current_phase(char *name, uint64_t capacity) {
  if (!name || capacity == 0)
    return ERANGE;
  unsigned number = mscale::worker::currentPhase();
  const std::vector<std::string> &names = mscale::worker::phaseNames();
  std::string current = number && number <= names.size() ? names[number - 1] : std::string();
  if (current.size() + 1 > capacity)
    return ERANGE;
  std::memcpy(name, current.c_str(), current.size() + 1);
  return 0;
}
int64_t msc_worker_yield_requested(void) { return mscale::worker::yieldRequestedNs(); }
int msc_worker_wait_yield_request(uint64_t timeout_ns) {
  return mscale::worker::waitForYieldRequest(timeout_ns) ? 1 : 0;
}
int msc_worker_yield(void) { return mscale::worker::yieldNow() ? 1 : 0; }
int64_t msc_worker_gpu_slices_pending(char *slices, uint64_t capacity) {
  return copyHandOver(mscale::worker::pendingSliceUpdate, slices, capacity);
}
void msc_worker_acknowledge_gpu_slices(uint64_t generation) { mscale::worker::acknowledgeSlices(generation); }
int64_t msc_worker_rdma_queue_pairs_pending(char *queue_pairs, uint64_t capacity) {
  return copyHandOver(mscale::worker::pendingQueuePairUpdate, queue_pairs, capacity);
}
void msc_worker_acknowledge_rdma_queue_pairs(uint64_t generation) { mscale::worker::acknowledgeQueuePairs(generation); }
void msc_worker_report_throughput(double tflops) { mscale::worker::reportThroughput(tflops); }
uint64_t msc_worker_stop_requested(void) { return mscale::worker::stopRequested(); }
int msc_worker_stopped_at(uint64_t step) {
  if (step == 0)
    return fail(EINVAL, "msc_worker_stopped_at: step 0 is no step"); // 0 on the page is "not stopped"
  mscale::worker::stoppedAt(step);
  return 0;
}

} // extern "C"

/* C ABI of the MegaScale-Omni worker runtime (libmscale_worker.so), for Python (ctypes/cffi) and
 * other languages: the io_uring reader, the role's CPUs and io depth from the executor's
 * environment, pinning, and the heartbeat on the control page. See docs/python_io.md.
 *
 * Every function returning int returns 0 on success or a positive errno value (ENOENT, EINVAL,
 * EOVERFLOW, ...); msc_worker_last_error() then says what failed, for this thread. Buffers are the
 * caller's; the library keeps no pointer to them after a call returns. */
#ifndef MSCALE_WORKER_H
#define MSCALE_WORKER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MSC_WORKER_API __attribute__((visibility("default")))
#else
#define MSC_WORKER_API
#endif

#define MSC_WORKER_ABI_VERSION 1

/* The step a worker reports while it restores a snapshot and does not know its step yet. */
#define MSC_WORKER_STEP_RESTORING UINT64_MAX

typedef struct msc_worker_reader msc_worker_reader;

/* One read of a batch. `path` is opened when its first piece is queued and closed when it is done;
 * with `path` NULL, `fd` is read and left open. `result` is set by the call. */
typedef struct msc_worker_read {
  const char *path;
  int fd;
  uint64_t offset;
  uint64_t length;
  void *buffer;   /* at least `length` bytes */
  int64_t result; /* bytes read (fewer than `length` only at the end of the file) or -errno */
  int32_t failed_open; /* set to 1 when the failure was opening `path`, 0 otherwise */
} msc_worker_read;

MSC_WORKER_API int msc_worker_abi_version(void);
MSC_WORKER_API const char *msc_worker_last_error(void);

/* ---- the io_uring reader ---- */
/* A reader with `queue_depth` reads in flight; a read is split into pieces of at most `chunk_bytes`
 * (0: 1 MiB) so one large file keeps the queue full too. */
MSC_WORKER_API int msc_worker_reader_open(unsigned queue_depth, uint64_t chunk_bytes, msc_worker_reader **out);
MSC_WORKER_API void msc_worker_reader_close(msc_worker_reader *reader);
MSC_WORKER_API unsigned msc_worker_reader_depth(const msc_worker_reader *reader);
MSC_WORKER_API unsigned msc_worker_reader_max_in_flight(const msc_worker_reader *reader); /* deepest queue reached */
MSC_WORKER_API uint64_t msc_worker_reader_bytes_read(const msc_worker_reader *reader);
/* Reads all of `path` into `buffer`; `*size` is the file's size. EOVERFLOW (nothing read, `*size`
 * set) when the file is larger than `capacity`. */
MSC_WORKER_API int msc_worker_read_file(msc_worker_reader *reader, const char *path, void *buffer, uint64_t capacity,
                                        uint64_t *size);
/* Reads every request, keeping the reader's queue depth in flight across them. Returns 0, or the
 * errno of the first failed request (its index in `*failed_index` when not NULL); the others are
 * still read and their `result` set. */
MSC_WORKER_API int msc_worker_read_batch(msc_worker_reader *reader, msc_worker_read *reads, uint64_t count,
                                         uint64_t *failed_index);

/* ---- the role's resources, as mscale-exec exported them ---- */
/* The io_uring depth of `role` (MSCALE_ROLE_<ROLE>_IO_DEPTH): ENOENT when not set, EINVAL when it
 * is not a positive number. */
MSC_WORKER_API int msc_worker_role_io_depth(const char *role, unsigned *depth);
/* The CPUs of `role` (MSCALE_ROLE_<ROLE>_CPUS): fills up to `capacity`, `*count` is how many there
 * are. ENOENT when not set, EINVAL when the list does not parse. */
MSC_WORKER_API int msc_worker_role_cpus(const char *role, unsigned *cpus, uint64_t capacity, uint64_t *count);
/* Pins the calling thread to the role's CPUs and names it after the role. */
MSC_WORKER_API int msc_worker_pin_thread_to_role(const char *role);
/* Pins every thread of the calling process to the role's CPUs (threads started later inherit it)
 * and names the calling thread after the role: what a data loader process wants. */
MSC_WORKER_API int msc_worker_pin_to_role(const char *role);

/* ---- the control page (under mscale-exec; no-ops otherwise) ---- */
MSC_WORKER_API int msc_worker_supervised(void); /* 1 when the process has a control page */
/* `step` is the last completed step, or MSC_WORKER_STEP_RESTORING. Call it at least once per
 * heartbeat interval while the worker makes progress. */
MSC_WORKER_API void msc_worker_heartbeat(uint64_t step);
/* The work is done and the worker is exiting: silence is no longer a hang (within the exit grace). */
MSC_WORKER_API void msc_worker_finishing(void);
/* A restarted worker found no valid snapshot to resume from and is exiting: the supervisor stops
 * (ERR_EXEC_022) rather than restart it or start the job afresh. */
MSC_WORKER_API void msc_worker_nothing_to_resume(void);
/* The worker is failing with error `line` (its first line is kept, up to 255 bytes): the supervisor
 * logs it and shows it in `contract status`. With `retry_cannot_fix` non-zero a restart would fail
 * the same way (a snapshot that does not fit the model, a wrong argument): the supervisor stops
 * (ERR_EXEC_030) instead of spending its restarts. Call it before exiting; EINVAL for a NULL line. */
MSC_WORKER_API int msc_worker_failed(const char *line, int retry_cannot_fix);
MSC_WORKER_API void msc_worker_report_throughput(double tflops);
/* A warm standby (the plan's fault_tolerance.standby_worker; MSCALE_STANDBY=1 in its environment):
 * 1 until it has taken over. */
MSC_WORKER_API int msc_worker_standby(void);
/* Returns once the process may do the worker's work: at once for a worker; a standby waits here,
 * its state allocated, until the executor hands it the job after a fault (MSCALE_RESTART_REASON is
 * then set). msc_worker_heartbeat and opening a snapshot store wait here too. */
MSC_WORKER_API void msc_worker_take_over(void);

/* ---- phases (the contract's `phases`; the executor names them in MSCALE_PHASES) ---- */
/* Enters phase `name` (NULL or "": between phases): stores on the control page, a system call only
 * when the node must take back what it lent. 0; ENOENT when MSCALE_PHASES does not name it; 0 and
 * nothing done where no phases are named (not under mscale-exec, or a plan without phases). */
MSC_WORKER_API int msc_worker_enter_phase(const char *name);
/* The phase the worker is in: its name copied into `name` (capacity bytes, NUL-terminated; "" between
 * phases). 0, or ERANGE when it does not fit. */
MSC_WORKER_API int msc_worker_current_phase(char *name, uint64_t capacity);

/* ---- yielding what is lent (a borrower: a contract of class = opportunistic) ---- */
/* The node asks a borrower that cooperates to yield before it freezes it; any of these calls marks
 * the worker as one that does. The nanoseconds left before the freeze (0: now), or -1 when nothing
 * is asked: stores and loads only. */
MSC_WORKER_API int64_t msc_worker_yield_requested(void);
/* Waits until the node asks (1) or `timeout_ns` has passed (0): for a thread that watches. */
MSC_WORKER_API int msc_worker_wait_yield_request(uint64_t timeout_ns);
/* If asked: tells the node it may freeze the process now, and returns once it is lent CPUs again (1).
 * 0 at once when nothing is asked. */
MSC_WORKER_API int msc_worker_yield(void);

/* ---- GPU slice hand-overs (a resize, a move off a lost GPU, a borrower's lent GPU units) ---- */
/* A hand-over the worker has not taken yet: its generation (> 0), with the new MSCALE_GPU_SLICES
 * value copied into `slices` (capacity bytes, NUL-terminated; "": let go of every slice). 0 when
 * none is pending, -ERANGE when it does not fit. Loads only. */
MSC_WORKER_API int64_t msc_worker_gpu_slices_pending(char *slices, uint64_t capacity);
/* The worker has moved its work to the slices of `generation` (and let go of the old ones): the
 * executor releases them. A borrower that does not acknowledge a let-go in time is ended. */
MSC_WORKER_API void msc_worker_acknowledge_gpu_slices(uint64_t generation);

/* ---- a borrower's lent RDMA queue pairs (class = opportunistic, rdma_qps) ---- */
/* A hand-over the worker has not taken yet: its generation (> 0), with the lent queue pairs copied
 * into `queue_pairs` (capacity bytes, NUL-terminated; MSCALE_RDMA syntax
 * "lent@<device>:<port>:<queue pairs>:<max outstanding>"; "": let go of them). 0 when none is
 * pending, -ERANGE when it does not fit. Loads only. */
MSC_WORKER_API int64_t msc_worker_rdma_queue_pairs_pending(char *queue_pairs, uint64_t capacity);
/* The worker uses the queue pairs of `generation` now, or has let go of them: a borrower that does
 * not acknowledge a let-go within half its lender's bound is ended. */
MSC_WORKER_API void msc_worker_acknowledge_rdma_queue_pairs(uint64_t generation);

/* ---- a planned stop at a snapshot boundary (a drain: the job moves to other nodes) ---- */
/* The step the executor asks this worker to stop after, 0 when nothing is asked. Loads only: call it
 * after every completed step. When it equals the step just completed, the worker writes that step's
 * snapshot to the disk tier (even off its cadence) and waits for it to be committed, calls
 * msc_worker_stopped_at(step) and exits 0; the job resumes at step + 1 elsewhere. A request for a
 * step already passed is not honoured: the worker runs on. */
MSC_WORKER_API uint64_t msc_worker_stop_requested(void);
/* The snapshot of `step` is committed to the disk tier and the worker is exiting 0 (it is also
 * finishing, as msc_worker_finishing says). 0, or EINVAL for step 0. */
MSC_WORKER_API int msc_worker_stopped_at(uint64_t step);

#ifdef __cplusplus
}
#endif

#endif /* MSCALE_WORKER_H */

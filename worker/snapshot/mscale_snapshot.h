/* C ABI of the MegaScale-Omni snapshot library (libmscale_snapshot.so), for Python (ctypes/cffi) and
 * other languages. See docs/recovery.md.
 *
 * Every function returning int returns 0 on success or the number of an ERR_SNAP code (4 means
 * ERR_SNAP_004); msc_snap_last_error() then gives "error[ERR_SNAP_004]: ..." for this thread.
 * Blobs passed to msc_snap_add_blob are borrowed until msc_snap_commit/abort returns. */
#ifndef MSCALE_SNAPSHOT_H
#define MSCALE_SNAPSHOT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MSC_SNAP_API __attribute__((visibility("default")))
#else
#define MSC_SNAP_API
#endif

#define MSC_SNAP_ABI_VERSION 1

/* Blob kinds and tiers (bit flags for commit). */
enum { MSC_SNAP_MODEL = 1, MSC_SNAP_OPTIMIZER = 2, MSC_SNAP_RNG = 3, MSC_SNAP_OTHER = 4 };
enum { MSC_SNAP_TIER_MEMORY = 1, MSC_SNAP_TIER_DISK = 2, MSC_SNAP_TIER_BOTH = 3 };

typedef struct msc_snap_store msc_snap_store;
typedef struct msc_snap_writer msc_snap_writer;
typedef struct msc_snap_restored msc_snap_restored;

typedef struct msc_snap_options {
  const char *disk_dir;    /* NULL or "": no disk tier */
  int memory_tier;         /* 0: disk only */
  int memory_fd;           /* -1: MSCALE_SNAPSHOT_MEMFD if set, else shm_open(memory_name) */
  const char *memory_name; /* NULL: derived from disk_dir */
  uint32_t keep;           /* disk snapshots kept; 0 means 3 */
  uint32_t memory_slots;   /* 0 means 2 */
} msc_snap_options;

MSC_SNAP_API int msc_snap_abi_version(void);
MSC_SNAP_API const char *msc_snap_last_error(void);
MSC_SNAP_API const char *msc_snap_code_name(int code); /* 4 -> "ERR_SNAP_004" */

MSC_SNAP_API int msc_snap_open(const msc_snap_options *options, msc_snap_store **out);
MSC_SNAP_API void msc_snap_close(msc_snap_store *store);
MSC_SNAP_API void msc_snap_destroy_memory_tier(msc_snap_store *store);

/* Saving: begin, describe, commit (or abort). */
MSC_SNAP_API int msc_snap_begin(msc_snap_store *store, uint64_t step, msc_snap_writer **out);
MSC_SNAP_API int msc_snap_add_blob(msc_snap_writer *w, const char *name, int kind, const void *data, uint64_t size);
MSC_SNAP_API int msc_snap_set_loader(msc_snap_writer *w, const char *file, uint64_t byte_offset, uint64_t shuffle_seed,
                                     uint64_t epoch, uint64_t file_index, uint64_t samples_seen);
MSC_SNAP_API int msc_snap_set_lr(msc_snap_writer *w, const char *name, double base_lr, double current_lr,
                                 uint64_t last_step, const double *params, uint64_t n_params);
MSC_SNAP_API int msc_snap_set_loss_scale(msc_snap_writer *w, double scale, uint64_t growth_tracker,
                                         const uint64_t *history_steps, const double *history_scales,
                                         uint64_t n_history);
MSC_SNAP_API int msc_snap_commit(msc_snap_writer *w, int tiers); /* frees w */
MSC_SNAP_API void msc_snap_abort(msc_snap_writer *w);             /* frees w */

/* Restoring the newest valid snapshot across tiers. */
MSC_SNAP_API int msc_snap_restore(msc_snap_store *store, msc_snap_restored **out);
/* The newest valid snapshot of step <= max_step (the newest step every rank of a job committed). */
MSC_SNAP_API int msc_snap_restore_at_most(msc_snap_store *store, uint64_t max_step, msc_snap_restored **out);
/* The steps present (not verified), newest first, across tiers: fills up to `capacity` and returns
 * how many there are. */
MSC_SNAP_API uint64_t msc_snap_list_steps(msc_snap_store *store, uint64_t *steps, uint64_t capacity);
MSC_SNAP_API uint64_t msc_snap_restored_step(const msc_snap_restored *r);
MSC_SNAP_API const char *msc_snap_restored_tier(const msc_snap_restored *r);   /* "memory" | "disk" */
MSC_SNAP_API const char *msc_snap_restored_source(const msc_snap_restored *r); /* file or "shm:... slot N" */
MSC_SNAP_API uint64_t msc_snap_restored_skipped(const msc_snap_restored *r);   /* newer ones that failed */
MSC_SNAP_API const char *msc_snap_restored_skipped_reason(const msc_snap_restored *r, uint64_t i);
MSC_SNAP_API int msc_snap_restored_blob(const msc_snap_restored *r, const char *name, const void **data,
                                        uint64_t *size);
MSC_SNAP_API int msc_snap_restored_loader(const msc_snap_restored *r, const char **file, uint64_t *byte_offset,
                                          uint64_t *shuffle_seed, uint64_t *epoch, uint64_t *file_index,
                                          uint64_t *samples_seen);
MSC_SNAP_API int msc_snap_restored_lr(const msc_snap_restored *r, double *base_lr, double *current_lr,
                                      uint64_t *last_step);
MSC_SNAP_API int msc_snap_restored_loss_scale(const msc_snap_restored *r, double *scale, uint64_t *growth_tracker,
                                              uint64_t *n_history);
MSC_SNAP_API void msc_snap_restored_free(msc_snap_restored *r);

#ifdef __cplusplus
}
#endif

#endif /* MSCALE_SNAPSHOT_H */

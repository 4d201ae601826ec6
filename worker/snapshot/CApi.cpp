// The C ABI (mscale_snapshot.h) over Store.
#include "worker/snapshot/mscale_snapshot.h"

#include "worker/snapshot/Snapshot.h"

#include <string>

using namespace msc::snapshot;

struct msc_snap_store {
  std::unique_ptr<Store> store;
};
struct msc_snap_writer {
  msc_snap_store *store;
  SnapshotMeta meta;
  std::vector<BlobView> blobs;
};
struct msc_snap_restored {
  Restored r;
  std::vector<std::string> reasons;
};

namespace {
thread_local std::string lastError;

int fail(const Status &s) {
  lastError = s.str();
  return codeNumber(s.code);
}
int invalid(const char *what) { return fail(Status::make(ErrorCode::ERR_SNAP_009, {what})); }
} // namespace

extern "C" {

int msc_snap_abi_version(void) { return MSC_SNAP_ABI_VERSION; }
const char *msc_snap_last_error(void) { return lastError.c_str(); }
const char *msc_snap_code_name(int code) {
  if (code < 0 || code > static_cast<int>(ErrorCode::ERR_SNAP_012))
    return "unknown";
  return codeName(static_cast<ErrorCode>(code));
}

int msc_snap_open(const msc_snap_options *o, msc_snap_store **out) {
  if (!o || !out)
    return invalid("msc_snap_open needs options and an output pointer");
  StoreOptions opt;
  opt.diskDir = o->disk_dir ? o->disk_dir : "";
  opt.memoryTier = o->memory_tier != 0;
  opt.memoryFd = o->memory_fd;
  opt.memoryName = o->memory_name ? o->memory_name : "";
  opt.keep = o->keep ? o->keep : 3;
  opt.memorySlots = o->memory_slots ? o->memory_slots : 2;
  auto *s = new msc_snap_store();
  if (Status st = Store::open(opt, s->store); !st) {
    delete s;
    return fail(st);
  }
  *out = s;
  return 0;
}

void msc_snap_close(msc_snap_store *store) { delete store; }

void msc_snap_destroy_memory_tier(msc_snap_store *store) {
  if (store)
    store->store->destroyMemoryTier();
}

int msc_snap_begin(msc_snap_store *store, uint64_t step, msc_snap_writer **out) {
  if (!store || !out)
    return invalid("msc_snap_begin needs a store and an output pointer");
  *out = new msc_snap_writer{store, {}, {}};
  (*out)->meta.step = step;
  return 0;
}

int msc_snap_add_blob(msc_snap_writer *w, const char *name, int kind, const void *data, uint64_t size) {
  if (!w || !name)
    return invalid("msc_snap_add_blob needs a writer and a name");
  if (kind < MSC_SNAP_MODEL || kind > MSC_SNAP_OTHER)
    return invalid("unknown blob kind");
  w->blobs.push_back({name, static_cast<BlobKind>(kind), data, size});
  return 0;
}

int msc_snap_set_loader(msc_snap_writer *w, const char *file, uint64_t byte_offset, uint64_t shuffle_seed,
                        uint64_t epoch, uint64_t file_index, uint64_t samples_seen) {
  if (!w)
    return invalid("msc_snap_set_loader needs a writer");
  w->meta.loader = {file ? file : "", byte_offset, shuffle_seed, epoch, file_index, samples_seen};
  return 0;
}

int msc_snap_set_lr(msc_snap_writer *w, const char *name, double base_lr, double current_lr, uint64_t last_step,
                    const double *params, uint64_t n_params) {
  if (!w || (n_params && !params))
    return invalid("msc_snap_set_lr needs a writer (and params when n_params > 0)");
  w->meta.lr = {name ? name : "", base_lr, current_lr, last_step, std::vector<double>(params, params + n_params)};
  return 0;
}

int msc_snap_set_loss_scale(msc_snap_writer *w, double scale, uint64_t growth_tracker, const uint64_t *steps,
                            const double *scales, uint64_t n) {
  if (!w || (n && (!steps || !scales)))
    return invalid("msc_snap_set_loss_scale needs a writer (and the history arrays when n > 0)");
  w->meta.lossScale.scale = scale;
  w->meta.lossScale.growthTracker = growth_tracker;
  w->meta.lossScale.history.clear();
  for (uint64_t i = 0; i < n; ++i)
    w->meta.lossScale.history.push_back({steps[i], scales[i]});
  return 0;
}

int msc_snap_commit(msc_snap_writer *w, int tiers) {
  if (!w)
    return invalid("msc_snap_commit needs a writer");
  Status s = w->store->store->save(w->meta, w->blobs, static_cast<uint32_t>(tiers));
  delete w;
  return s ? 0 : fail(s);
}

void msc_snap_abort(msc_snap_writer *w) { delete w; }

int msc_snap_restore(msc_snap_store *store, msc_snap_restored **out) {
  return msc_snap_restore_at_most(store, UINT64_MAX, out);
}

uint64_t msc_snap_list_steps(msc_snap_store *store, uint64_t *steps, uint64_t capacity) {
  if (!store)
    return 0;
  std::vector<msc::snapshot::SnapshotInfo> all = store->store->list();
  for (uint64_t i = 0; i < all.size() && i < capacity && steps; ++i)
    steps[i] = all[i].step;
  return all.size();
}

int msc_snap_restore_at_most(msc_snap_store *store, uint64_t max_step, msc_snap_restored **out) {
  if (!store || !out)
    return invalid("msc_snap_restore needs a store and an output pointer");
  auto *r = new msc_snap_restored();
  Status s = store->store->restoreAtMost(max_step, r->r);
  if (!s) {
    delete r;
    return fail(s);
  }
  for (const auto &k : r->r.skipped)
    r->reasons.push_back(k.reason.str());
  *out = r;
  return 0;
}

uint64_t msc_snap_restored_step(const msc_snap_restored *r) { return r ? r->r.meta.step : 0; }
const char *msc_snap_restored_tier(const msc_snap_restored *r) { return r ? tierName(r->r.tier) : ""; }
const char *msc_snap_restored_source(const msc_snap_restored *r) { return r ? r->r.source.c_str() : ""; }
uint64_t msc_snap_restored_skipped(const msc_snap_restored *r) { return r ? r->reasons.size() : 0; }
const char *msc_snap_restored_skipped_reason(const msc_snap_restored *r, uint64_t i) {
  return r && i < r->reasons.size() ? r->reasons[i].c_str() : "";
}

int msc_snap_restored_blob(const msc_snap_restored *r, const char *name, const void **data, uint64_t *size) {
  if (!r || !name || !data || !size)
    return invalid("msc_snap_restored_blob needs a snapshot, a name and output pointers");
  const RestoredBlob *b = r->r.find(name);
  if (!b)
    return fail(Status::make(ErrorCode::ERR_SNAP_011, {std::to_string(r->r.meta.step), name}));
  *data = b->data;
  *size = b->size;
  return 0;
}

int msc_snap_restored_loader(const msc_snap_restored *r, const char **file, uint64_t *byte_offset,
                             uint64_t *shuffle_seed, uint64_t *epoch, uint64_t *file_index, uint64_t *samples_seen) {
  if (!r)
    return invalid("msc_snap_restored_loader needs a snapshot");
  const LoaderState &l = r->r.meta.loader;
  if (file)
    *file = l.file.c_str();
  if (byte_offset)
    *byte_offset = l.byteOffset;
  if (shuffle_seed)
    *shuffle_seed = l.shuffleSeed;
  if (epoch)
    *epoch = l.epoch;
  if (file_index)
    *file_index = l.fileIndex;
  if (samples_seen)
    *samples_seen = l.samplesSeen;
  return 0;
}

int msc_snap_restored_lr(const msc_snap_restored *r, double *base_lr, double *current_lr, uint64_t *last_step) {
  if (!r)
    return invalid("msc_snap_restored_lr needs a snapshot");
  if (base_lr)
    *base_lr = r->r.meta.lr.baseLr;
  if (current_lr)
    *current_lr = r->r.meta.lr.currentLr;
  if (last_step)
    *last_step = r->r.meta.lr.lastStep;
  return 0;
}

int msc_snap_restored_loss_scale(const msc_snap_restored *r, double *scale, uint64_t *growth_tracker,
                                 uint64_t *n_history) {
  if (!r)
    return invalid("msc_snap_restored_loss_scale needs a snapshot");
  if (scale)
    *scale = r->r.meta.lossScale.scale;
  if (growth_tracker)
    *growth_tracker = r->r.meta.lossScale.growthTracker;
  if (n_history)
    *n_history = r->r.meta.lossScale.history.size();
  return 0;
}

void msc_snap_restored_free(msc_snap_restored *r) { delete r; }

} // extern "C"

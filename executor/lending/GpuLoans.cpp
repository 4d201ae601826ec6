#include "executor/lending/GpuLoans.h"

#include "worker/ControlPage.h"

namespace msc::exec::lending {

bool BackendGpuLoans::addShare(const std::string &owner, unsigned share, GpuBackend &backend, SliceId id,
                               unsigned units, unsigned gpuIndex, std::string &error) {
  std::optional<SliceSample> now = backend.sample(id);
  if (!now || !now->sms) {
    error = "GPU slice " + std::to_string(id) + " of '" + owner + "' (" + std::string(backend.name()) +
            ") cannot be read";
    return false;
  }
  shares_[{owner, share}] = Share{&backend, id, std::max(1u, units), now->sms, gpuIndex, 0};
  return true;
}

void BackendGpuLoans::removeOwner(const std::string &owner) {
  std::erase_if(shares_, [&](const auto &s) { return s.first.first == owner; });
}

void BackendGpuLoans::setPage(const std::string &borrower, mscale::worker::ControlPage *page) {
  // A new page is a new worker: it holds nothing it could let go of, and is told what is lent now
  // (a loan made before its page was known, or one a worker before it was told of).
  releasing_.erase(borrower);
  if (!page) {
    pages_.erase(borrower);
    return;
  }
  pages_[borrower] = page;
  if (auto it = lent_.find(borrower); it != lent_.end())
    tell(borrower, it->second.told);
}

uint64_t BackendGpuLoans::tell(const std::string &borrower, const std::string &slices) {
  auto page = pages_.find(borrower);
  return page == pages_.end() ? 0 : worker::publishSlices(*page->second, slices);
}

bool BackendGpuLoans::lend(const std::string &borrower, const ShareLoan &loan, std::string &error) {
  auto it = shares_.find({loan.owner, loan.share});
  if (it == shares_.end()) {
    error = "'" + loan.owner + "' has no GPU slice " + std::to_string(loan.share) + " here";
    return false;
  }
  if (lent_.count(borrower)) {
    error = "'" + borrower + "' is lent a GPU slice already";
    return false;
  }
  Share &s = it->second;
  unsigned sms = smsFor(s, loan.units);
  if (!sms || s.lentUnits + loan.units > s.units) {
    error = "'" + loan.owner + "' GPU slice " + std::to_string(loan.share) + " has " +
            std::to_string(s.units - s.lentUnits) + " of " + std::to_string(loan.units) + " units free";
    return false;
  }
  // The owner's slice gives the SMs up first: the borrower's is made of SMs nobody holds.
  unsigned ownerSms = smsFor(s, s.units - s.lentUnits - loan.units);
  if (ownerSms && !s.backend->resizeSlice(s.id, ownerSms, error))
    return false;
  plan::GpuSlice slice;
  slice.set_role("lent:" + loan.owner);
  slice.set_gpu_index(s.gpuIndex);
  slice.set_sm_count(sms);
  slice.set_slices(1);
  slice.set_stream_priority(0); // CUDA's least urgent: the owner's streams go first
  slice.set_mechanism(plan::GpuSlice::GREEN_CONTEXT);
  std::optional<SliceId> id = ownerSms == 0 ? std::nullopt : s.backend->createSlice(slice, error);
  if (ownerSms == 0) {
    // A whole share lent: the owner's slice cannot be empty, so it is the borrower's from now on
    // (the backend's book-keeping keeps its SMs held) and made again when it comes back.
    id = s.id;
  }
  if (!id) {
    std::string undo;
    s.backend->resizeSlice(s.id, smsFor(s, s.units - s.lentUnits), undo);
    return false;
  }
  s.lentUnits += loan.units;
  std::string told = "lent@" + std::to_string(s.gpuIndex) + ":" + std::to_string(sms) + ":0:0";
  lent_[borrower] = Lent{loan, *id, sms, told};
  releasing_.erase(borrower);
  tell(borrower, told);
  return true;
}

bool BackendGpuLoans::takeBack(const std::string &borrower, std::string &error) {
  auto it = lent_.find(borrower);
  if (it == lent_.end())
    return true;
  Lent l = it->second;
  lent_.erase(it);
  if (uint64_t generation = tell(borrower, ""))
    releasing_[borrower] = generation;
  auto share = shares_.find({l.loan.owner, l.loan.share});
  if (share == shares_.end())
    return true; // the owner is gone with its slices
  Share &s = share->second;
  s.lentUnits -= std::min(s.lentUnits, l.loan.units);
  if (l.id != s.id)
    s.backend->destroySlice(l.id);
  if (!s.backend->resizeSlice(s.id, smsFor(s, s.units - s.lentUnits), error)) {
    error = "'" + l.loan.owner + "' GPU slice " + std::to_string(l.loan.share) + " not made whole again: " + error;
    return false;
  }
  return true;
}

bool BackendGpuLoans::released(const std::string &borrower) {
  auto it = releasing_.find(borrower);
  if (it == releasing_.end())
    return true;
  auto page = pages_.find(borrower);
  if (page == pages_.end() || page->second->ackGeneration.load(std::memory_order_acquire) >= it->second) {
    releasing_.erase(it);
    return true;
  }
  return false;
}

unsigned BackendGpuLoans::smsOf(const std::string &borrower) const {
  auto it = lent_.find(borrower);
  return it == lent_.end() ? 0 : it->second.sms;
}

unsigned BackendGpuLoans::ownerSms(const std::string &owner, unsigned share) const {
  auto it = shares_.find({owner, share});
  return it == shares_.end() ? 0 : smsFor(it->second, it->second.units - it->second.lentUnits);
}

} // namespace msc::exec::lending

#include "worker/ControlPage.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace msc::worker {

std::unique_ptr<ControlPageHost> ControlPageHost::create(std::string &error) {
  std::unique_ptr<ControlPageHost> h(new ControlPageHost());
  h->fd_ = ::memfd_create("mscale-control", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (h->fd_ < 0 || ::ftruncate(h->fd_, 4096) != 0) {
    error = std::string("control page: ") + std::strerror(errno);
    return nullptr;
  }
  // The worker may write the page but never resize it under us.
  ::fcntl(h->fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void *p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd_, 0);
  if (p == MAP_FAILED) {
    error = std::string("control page: mmap: ") + std::strerror(errno);
    return nullptr;
  }
  h->page_ = new (p) mscale::worker::ControlPage{};
  h->page_->magic = mscale::worker::ControlPage::kMagic;
  return h;
}

ControlPageHost::~ControlPageHost() {
  if (page_)
    ::munmap(page_, 4096);
  if (fd_ >= 0)
    ::close(fd_);
}

namespace {
// Writes `text` under `seqlock` into `buffer`, then bumps `generation`: its new value, 0 when the
// text does not fit.
template <size_t N>
uint64_t publishHandOver(std::atomic<uint64_t> &seqlock, std::atomic<uint64_t> &generation, char (&buffer)[N],
                         const std::string &text) {
  if (text.size() >= N)
    return 0;
  seqlock.fetch_add(1, std::memory_order_acq_rel); // odd: readers retry
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = 0;
  seqlock.fetch_add(1, std::memory_order_release); // even again
  return generation.fetch_add(1, std::memory_order_acq_rel) + 1;
}
} // namespace

uint64_t publishSlices(mscale::worker::ControlPage &page, const std::string &slices) {
  return publishHandOver(page.slicesSeq, page.sliceGeneration, page.slices, slices);
}

uint64_t publishQueuePairs(mscale::worker::ControlPage &page, const std::string &queuePairs) {
  return publishHandOver(page.queuePairsSeq, page.queuePairGeneration, page.queuePairs, queuePairs);
}

mscale::worker::Failure ControlPageHost::failure() const {
  uint32_t said = page_->failure.load(std::memory_order_acquire);
  using mscale::worker::Failure;
  return said <= uint32_t(Failure::RetryCannotFix) ? Failure(said) : Failure::Retryable; // a word of a newer worker
}

std::string ControlPageHost::failureLine() const {
  if (page_->failure.load(std::memory_order_acquire) == 0)
    return {};
  // The worker is gone or going: nothing writes the line now, but it may have left it unended.
  return std::string(page_->failureLine, strnlen(page_->failureLine, sizeof page_->failureLine));
}

void ControlPageHost::resetForNewWorker() {
  page_->beats.store(0, std::memory_order_relaxed);
  page_->milliTflops.store(0, std::memory_order_relaxed);
  page_->finishing.store(0, std::memory_order_relaxed);
  page_->failure.store(0, std::memory_order_relaxed);
  std::memset(page_->failureLine, 0, sizeof page_->failureLine);
  page_->standbyWaiting.store(0, std::memory_order_relaxed);
  page_->takeOver.store(0, std::memory_order_relaxed);
  page_->standbyRuntimes.store(0, std::memory_order_relaxed);
  std::memset(page_->takeOverEnvironment, 0, sizeof page_->takeOverEnvironment);
  page_->ackGeneration.store(page_->sliceGeneration.load(std::memory_order_relaxed), std::memory_order_release);
  // Nor does it hold queue pairs it was lent: the node tells it afresh what it is lent now.
  page_->queuePairAck.store(page_->queuePairGeneration.load(std::memory_order_relaxed), std::memory_order_release);
  // A new worker starts before its first phase, where the owner keeps everything: the node's lending
  // loop, woken here, takes back what the last worker's phase lent before the new one runs.
  page_->phase.store(0, std::memory_order_release);
  // A borrower's new worker has not said yet that it cooperates, nor acknowledged anything.
  page_->cooperates.store(0, std::memory_order_relaxed);
  page_->yieldAck.store(0, std::memory_order_relaxed);
  // A stop was asked of (or done by) the previous worker; the executor asks the new one afresh.
  page_->stopAfterStep.store(0, std::memory_order_relaxed);
  page_->stoppedAtStep.store(0, std::memory_order_relaxed);
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&page_->phase), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

namespace {
// The entries of `environment` as the page holds them, or nullopt where they do not fit.
std::optional<std::string> encode(const ControlPageHost::Environment &environment) {
  std::string block;
  for (const auto &[key, value] : environment) {
    if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos ||
        (value && value->find('\0') != std::string::npos))
      return std::nullopt;
    block += value ? key + "=" + *value : key;
    block += '\0';
  }
  block += '\0';
  if (block.size() + 1 > sizeof mscale::worker::ControlPage::takeOverEnvironment)
    return std::nullopt;
  return block;
}
} // namespace

bool ControlPageHost::fits(const Environment &environment) { return encode(environment).has_value(); }

void ControlPageHost::handOverToStandby(const Environment &environment) {
  std::optional<std::string> block = encode(environment);
  std::memset(page_->takeOverEnvironment, 0, sizeof page_->takeOverEnvironment);
  if (block)
    std::memcpy(page_->takeOverEnvironment, block->data(), block->size());
  page_->takeOver.store(1, std::memory_order_release); // publishes the environment with it
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&page_->takeOver), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void ControlPageHost::continueFrom(const ControlPageHost &previous) {
  const mscale::worker::ControlPage &old = *previous.page_;
  page_->step.store(old.step.load(std::memory_order_relaxed), std::memory_order_relaxed);
  uint64_t generation = old.sliceGeneration.load(std::memory_order_acquire);
  page_->sliceGeneration.store(generation, std::memory_order_relaxed);
  page_->ackGeneration.store(generation, std::memory_order_release);
}

} // namespace msc::worker

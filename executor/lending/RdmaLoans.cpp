#include "executor/lending/RdmaLoans.h"

#include "worker/ControlPage.h"

#include <algorithm>

namespace msc::exec::lending {

namespace {
unsigned queuePairsOf(const plan::RdmaSetting &s) { return std::max(1u, s.queue_pairs()); }
} // namespace

bool BackendRdmaLoans::addShare(const std::string &owner, unsigned share, RdmaBackend &backend, QpGroupId id,
                                const plan::RdmaSetting &setting, std::string &error) {
  if (!id) {
    error = "queue-pair group of role '" + setting.role() + "' of '" + owner + "' is not held";
    return false;
  }
  shares_[{owner, share}] = Share{&backend, id, setting, 0};
  return true;
}

void BackendRdmaLoans::removeOwner(const std::string &owner) {
  std::erase_if(shares_, [&](const auto &s) { return s.first.first == owner; });
}

void BackendRdmaLoans::setPage(const std::string &borrower, mscale::worker::ControlPage *page) {
  // A new page is a new worker: it holds nothing it could let go of, and is told what is lent now.
  releasing_.erase(borrower);
  if (!page) {
    pages_.erase(borrower);
    return;
  }
  pages_[borrower] = page;
  if (auto it = lent_.find(borrower); it != lent_.end())
    tell(borrower, it->second.told);
}

uint64_t BackendRdmaLoans::tell(const std::string &borrower, const std::string &queuePairs) {
  auto page = pages_.find(borrower);
  return page == pages_.end() ? 0 : worker::publishQueuePairs(*page->second, queuePairs);
}

bool BackendRdmaLoans::lend(const std::string &borrower, const ShareLoan &loan, std::string &error) {
  auto it = shares_.find({loan.owner, loan.share});
  if (it == shares_.end()) {
    error = "'" + loan.owner + "' has no queue-pair group " + std::to_string(loan.share) + " here";
    return false;
  }
  if (lent_.count(borrower)) {
    error = "'" + borrower + "' is lent queue pairs already";
    return false;
  }
  Share &s = it->second;
  unsigned total = queuePairsOf(s.setting);
  // A group keeps one queue pair (RdmaShare::units): the owner's own stays connected across loans.
  if (!loan.units || s.lent + loan.units >= total) {
    error = "'" + loan.owner + "' queue-pair group " + std::to_string(loan.share) + " has " +
            std::to_string(total - 1 - std::min(total - 1, s.lent)) + " of " + std::to_string(loan.units) +
            " queue pairs free";
    return false;
  }
  // The owner's group gives them up first: the borrower's is made of queue pairs nobody holds.
  if (!s.backend->resizeQueuePairs(s.id, total - s.lent - loan.units, error))
    return false;
  plan::RdmaSetting borrowed = s.setting;
  borrowed.set_role("lent:" + loan.owner);
  borrowed.set_queue_pairs(loan.units);
  borrowed.clear_failover_device(); // a loan does not follow the owner's failover: it is taken back
  borrowed.set_failover_port(0);
  std::optional<QpGroupId> id = s.backend->createQueuePairs(borrowed, error);
  if (!id) {
    std::string undo;
    s.backend->resizeQueuePairs(s.id, total - s.lent, undo);
    return false;
  }
  s.lent += loan.units;
  std::string told = "lent@" + s.setting.device() + ":" + std::to_string(s.setting.port() ? s.setting.port() : 1) +
                     ":" + std::to_string(loan.units) + ":" + std::to_string(s.setting.max_outstanding());
  lent_[borrower] = Lent{loan, *id, told};
  releasing_.erase(borrower);
  tell(borrower, told);
  return true;
}

bool BackendRdmaLoans::takeBack(const std::string &borrower, std::string &error) {
  auto it = lent_.find(borrower);
  if (it == lent_.end())
    return true;
  Lent l = it->second;
  lent_.erase(it);
  if (uint64_t generation = tell(borrower, ""))
    releasing_[borrower] = generation;
  auto share = shares_.find({l.loan.owner, l.loan.share});
  if (share == shares_.end())
    return true; // the owner is gone with its groups; the borrower's goes with its loan
  Share &s = share->second;
  s.backend->destroyQueuePairs(l.id);
  s.lent -= std::min(s.lent, l.loan.units);
  if (!s.backend->resizeQueuePairs(s.id, queuePairsOf(s.setting) - s.lent, error)) {
    error = "'" + l.loan.owner + "' queue-pair group " + std::to_string(l.loan.share) + " not made whole again: " + error;
    return false;
  }
  return true;
}

bool BackendRdmaLoans::released(const std::string &borrower) {
  auto it = releasing_.find(borrower);
  if (it == releasing_.end())
    return true;
  auto page = pages_.find(borrower);
  if (page == pages_.end() || page->second->queuePairAck.load(std::memory_order_acquire) >= it->second) {
    releasing_.erase(it);
    return true;
  }
  return false;
}

QpGroupId BackendRdmaLoans::groupOf(const std::string &borrower) const {
  auto it = lent_.find(borrower);
  return it == lent_.end() ? 0 : it->second.id;
}

unsigned BackendRdmaLoans::ownerQueuePairs(const std::string &owner, unsigned share) const {
  auto it = shares_.find({owner, share});
  return it == shares_.end() ? 0 : queuePairsOf(it->second.setting) - it->second.lent;
}

} // namespace msc::exec::lending

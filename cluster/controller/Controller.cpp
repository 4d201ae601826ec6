#include "cluster/controller/Controller.h"

#include "cluster/keys/Keys.h"
#include "cluster/etcd/Election.h"
#include "cluster/etcd/Fencing.h"
#include "cluster/etcd/Lease.h"
#include "cluster/etcd/Watch.h"

#include <llvm/ADT/StringRef.h>

#include <chrono>
#include <thread>

namespace msc::cluster {

Controller::Controller(etcd::EtcdClient &client, ControllerOptions options)
    : client_(client), options_(std::move(options)) {
  if (!options_.log)
    options_.log = [](const std::string &) {};
}

std::optional<etcd::Fencing> Controller::currentTerm() const {
  std::lock_guard lock(termMutex_);
  if (!term_)
    return std::nullopt;
  return etcd::Fencing(client_, *term_);
}

etcd::Status Controller::run(const std::atomic<bool> &stop) {
  using namespace std::chrono_literals;
  // A controller that stops leading (deposed while it hung, its lease lost, etcd unreachable for a
  // while) stands by again under a fresh lease: the number of standbys does not shrink with every
  // failover. Only `stop` ends it.
  while (!stop) {
    etcd::Status why = serve(stop);
    if (stop)
      break;
    options_.log("stopped leading: " + why.str());
    for (auto until = std::chrono::steady_clock::now() + options_.retryDelay;
         !stop && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(50ms);
  }
  return {};
}

etcd::Status Controller::serve(const std::atomic<bool> &stop) {
  auto lease = client_.grantLease(options_.leaseTtlSeconds);
  if (!lease)
    return lease.status();
  std::unique_ptr<etcd::LeaseKeepAlive> keepAlive = client_.keepAlive(*lease);
  etcd::Election election = client_.election(kControllerElection);
  options_.log("campaigning as '" + options_.name + "'");
  // One campaign, however long another controller leads (see Election::campaignUntil).
  auto leader = election.campaignUntil(*keepAlive, electionValue(options_.name, serviceAddress_), stop);
  auto endTerm = [&] {
    // The lease goes with this term: its key, if etcd still holds it, must not stand in line.
    keepAlive.reset();
    client_.revokeLease(lease->id);
  };
  if (!leader || !*leader) {
    endTerm();
    return leader ? etcd::Status{} : leader.status();
  }
  options_.log("leading (leader revision " + std::to_string((*leader)->rev) + ")");
  {
    std::lock_guard lock(termMutex_);
    term_ = **leader;
  }
  etcd::Status why = lead(**leader, *keepAlive, stop);
  {
    std::lock_guard lock(termMutex_);
    term_.reset();
  }
  if (why.ok())
    election.resign(**leader);
  endTerm();
  return why;
}

etcd::Status Controller::lead(const etcd::LeaderKey &leader, etcd::LeaseKeepAlive &keepAlive,
                              const std::atomic<bool> &stop) {
  using namespace std::chrono_literals;
  etcd::Fencing fencing(client_, leader);
  int64_t seen = 0;
  ReconcileMemory memory;
  while (!stop) {
    if (keepAlive.lost())
      return keepAlive.lostStatus();
    auto report = reconcile(client_, fencing, options_.reconcile, memory, *options_.clock);
    if (!report)
      return report.status();
    for (const std::string &p : report->placed)
      options_.log("placed " + p);
    for (const std::string &p : report->replaced)
      options_.log("placed again after a lost node: " + p);
    for (const std::string &r : report->refused)
      options_.log("refused " + r);
    for (const std::string &u : report->unreadableNodes)
      options_.log("ignoring a node: " + u);
    for (const std::string &u : report->unreadableHealth)
      options_.log("placing nothing more on a node: " + u);
    for (const std::string &f : report->faults)
      options_.log("fault recorded: " + f);
    for (const std::string &u : report->unreadableFaults)
      options_.log("recording no fault of a node: " + u);
    for (const std::string &c : report->cordoned)
      options_.log("cordoned by policy: " + c);
    for (const std::string &d : report->drains)
      options_.log("drain: " + d);
    for (const std::string &u : report->unreadableDrains)
      options_.log("moving nothing off a node: " + u);
    for (const std::string &u : report->unreadableLending)
      options_.log("placing no borrower on a node: " + u);
    for (const std::string &r : report->released)
      options_.log("released " + r + ": it cannot be placed whole again, so it runs nowhere until it can");
    for (const std::string &w : report->withdrawn)
      options_.log("withdrawn " + w);
    for (const std::string &w : report->waiting)
      options_.log("waiting before placing again (a node of it is lost): " + w);
    seen = report->revision;
    // Then wait for the next change under /mscale/ (or a second, to notice `stop` and the lease).
    etcd::WatchOptions wo;
    wo.rangeEnd = etcd::prefixEnd(kRootPrefix);
    wo.startRevision = seen + 1;
    auto watch = client_.watch(kRootPrefix, wo);
    if (!watch)
      return watch.status();
    // A contract waiting out the lost-node grace is looked at again when the grace has passed.
    uint64_t graceNs = static_cast<uint64_t>(std::chrono::nanoseconds(options_.reconcile.lostNodeGrace).count());
    uint64_t again = after(options_.clock->monotonicNs(), graceNs);
    // So is a planned stop under way (a drain, a grow), whose deadline passes whether or not anything changes.
    bool lookAgain = !report->waiting.empty() || report->stopping;
    if (report->stopping)
      again = after(options_.clock->monotonicNs(), 1'000'000'000);
    while (!stop && !keepAlive.lost() && (!lookAgain || options_.clock->monotonicNs() < again)) {
      auto events = (*watch)->next(lookAgain ? 200ms : 1000ms);
      if (!events)
        return events.status();
      bool relevant = false;
      for (const etcd::WatchEvent &e : *events)
        // Its own status writes are not news; nodes, contracts and assignments are.
        relevant |= !llvm::StringRef(e.kv.key).starts_with(kContractStatusPrefix);
      if (relevant)
        break;
    }
    (*watch)->cancel();
  }
  return {};
}

} // namespace msc::cluster

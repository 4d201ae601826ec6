#include "tools/mscale-cli/DrainView.h"

#include "cluster/status/ClusterStatus.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <set>
#include <thread>

namespace msc::cli {
namespace {

constexpr std::chrono::milliseconds kPoll{250};

// Where `job` is now: "n2,n3", "pending" (being placed again) or "withdrawn".
std::string whereNow(const cluster::ClusterStatusView &view, const std::string &job) {
  for (const cluster::ContractView &c : view.contracts)
    if (c.name == job)
      return c.decision == "placed" ? llvm::join(c.nodes, ",") : c.decision;
  return "withdrawn";
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// An ending other than every job moved, as the coded line the CLI prints for it.
int notCompleted(llvm::raw_ostream &os, const std::string &node, const std::string &why) {
  os << "mscale-cli: " << etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_024, {node, why}).str() << "\n";
  return 1;
}

} // namespace

int waitForDrain(etcd::EtcdClient &client, const std::string &node, const cluster::DrainOutcome &drain,
                 std::chrono::milliseconds wait, llvm::raw_ostream &os) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> left = drain.jobs;
  std::string lastError;
  while (true) {
    auto view = cluster::readClusterStatus(client);
    if (view) {
      const cluster::ClusterStatusView &status = *view;
      std::vector<std::string> still = cluster::jobsStillOn(status, node, left);
      for (const std::string &job : left)
        if (!llvm::is_contained(still, job))
          os << "moved '" << job << "' off " << node << ": now " << whereNow(status, job) << "\n";
      os.flush();
      left = std::move(still);
      if (left.empty()) {
        os << "node '" << node << "' drained: " << drain.jobs.size() << " job" << (drain.jobs.size() == 1 ? "" : "s")
           << " moved in " << llvm::format("%.1f", secondsSince(start)) << " s\n";
        return 0;
      }
      auto n = std::find_if(status.nodes.begin(), status.nodes.end(),
                            [&](const cluster::NodeView &v) { return v.name == node; });
      if (n == status.nodes.end() || (!n->drain && n->drainUnreadable.empty())) {
        return notCompleted(os, node, "it ended before its jobs moved (the node was uncordoned); still there: " +
                                          llvm::join(left, ", "));
      }
      if (n->drain && n->drain->timedOut)
        return notCompleted(os, node, "it timed out; still there, running on: " + llvm::join(left, ", ") +
                                          " (drain it again with --force to move them from their newest snapshot)");
      lastError.clear();
    } else {
      lastError = view.status().str(); // etcd briefly unreachable: the drain goes on without us
    }
    if (std::chrono::steady_clock::now() - start >= wait) {
      return notCompleted(os, node,
                          "gave up waiting after " + llvm::formatv("{0:f1}", secondsSince(start)).str() +
                              " s; still there: " + llvm::join(left, ", ") +
                              (lastError.empty() ? "" : " (last read: " + lastError + ")") +
                              "; the leader goes on with it (cluster nodes shows it)");
    }
    std::this_thread::sleep_for(kPoll);
  }
}

} // namespace msc::cli

// One ledger per node: what every way onto the node holds (`mscale-exec run`, the agent's
// admissions, and through the agent the cluster's assignments and Slurm steps), in one directory
// that each of them reads and writes under one lock, so that a run beside another run or beside an
// agent is judged against all of them by the same re-check (admission::recheckPlan):
//   DIR/.lock              flock(2), held across read, check and write: of two racing runs for one
//                          core exactly one claims it, and the other's re-check names the holder
//   DIR/<contract>.msp     the plan it holds (plan/PlanFile.h)
//   DIR/<contract>.holder  one line: "PID START_TICKS UNIX_MS WHAT" (WHAT: "mscale-exec run", ...)
// A claim whose holder is gone (no such process, or one started at another time: a reused pid) is
// stale: the next reader drops it and says so. DIR is the node config's claims_dir, else
// $MSCALE_CLAIMS_DIR, else /run/mscale/claims.
#pragma once

#include "plan/plan.pb.h"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

struct NodeClaim {
  std::string contract;
  plan::Plan plan;
  pid_t pid = 0;
  std::string holder; // "mscale-exec run"
  int64_t sinceUnixMs = 0;
  std::string describe() const; // "contract 'a' (mscale-exec run, pid 4242)"
};

class NodeClaims {
public:
  // `configured`: the node config's claims_dir (empty: not set).
  static std::string dirFor(const std::string &configured);
  // Whether an mscale-exec with this config claims in the node's ledger: one that acts on this
  // machine (the real host backend), or one given a claims_dir. A `sim` host backend serves a
  // simulated node, whose resources are not this machine's.
  static bool used(bool simulatedHost, const std::string &configured) { return !simulatedHost || !configured.empty(); }
  // Takes the node's lock (the directory made when missing); nullopt with `error`.
  static std::optional<NodeClaims> lock(const std::string &dir, std::string &error);
  NodeClaims(NodeClaims &&other) noexcept : dir_(std::move(other.dir_)), fd_(std::exchange(other.fd_, -1)) {}
  NodeClaims &operator=(NodeClaims &&other) noexcept;
  NodeClaims(const NodeClaims &) = delete;
  NodeClaims &operator=(const NodeClaims &) = delete;
  ~NodeClaims(); // unlocks

  // Every live claim, in contract order; stale ones are removed and said in `dropped`.
  std::vector<NodeClaim> read(std::vector<std::string> &dropped);
  // Claims `plan` for this process as `holder`. False with `error` (nothing left behind).
  bool claim(const plan::Plan &plan, const std::string &holder, std::string &error);
  // Drops this process's claim of `contract`.
  void release(const std::string &contract);
  const std::string &dir() const { return dir_; }

  // Without the lock, for people (`contract status` of a run): the live claims as they are now.
  static std::vector<NodeClaim> look(const std::string &dir);

private:
  NodeClaims(std::string dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::string dir_;
  int fd_ = -1;
};

} // namespace msc::exec

// The ranks of an elastic mscale-train-sim job (--elastic), joined over TCP as a DDP job's are
// (MASTER_ADDR, MASTER_PORT): rank 0 listens, every other rank connects and says who it is. The job
// resumes from the step rank 0 restored, which it tells the others, and each step's gradients are
// reduced in one canonical order, micro-batch by micro-batch, whatever the world size: the sum of a
// step is the same bits at 1, 2 or 4 ranks, so a job that changes size keeps the history of one
// that did not (issue 29's deterministic_reduction, as the workload keeps it).
//
// A rank that goes away (killed, its node lost) ends the step for every other: a read of its socket
// ends, and so does the job's attempt, as an all-reduce over a lost peer does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace msc::workload {

// The micro-batches of a step that `rank` of `world` computes: a contiguous run, [first, last).
std::pair<uint32_t, uint32_t> microBatchesOf(uint32_t rank, uint32_t world, uint32_t microBatches);

struct MicroBatchGradient {
  uint32_t index = 0;       // its place in the step's global batch
  float loss = 0;           // its share of the step's mean loss
  std::vector<float> grad;  // its share of the step's mean gradient
};

class Collective {
public:
  // Joins the job: rank 0 listens on `address`:`port` and accepts the other world - 1 ranks; any
  // other connects, retrying until it is accepted. Each waits at most `timeoutMs`; a rank that does
  // not come, or says another world size or a rank taken, fails the rendezvous (null, `error`).
  // `params`: floats in a gradient; `microBatches`: a step's.
  static std::unique_ptr<Collective> join(uint32_t rank, uint32_t world, const std::string &address, uint16_t port,
                                          uint32_t params, uint32_t microBatches, uint32_t timeoutMs,
                                          std::string &error);
  ~Collective();
  Collective(const Collective &) = delete;
  Collective &operator=(const Collective &) = delete;

  // Rank 0 tells the step it resumes from (0: a fresh start); the others learn it.
  bool agreeOnResume(uint64_t &step, std::string &error);
  // Returns once every rank has restored that step (the others tell rank 0, which tells them).
  bool restored(std::string &error);
  // This rank's micro-batches of `step` (microBatchesOf) in, the step's sums out: the loss and the
  // gradient over every micro-batch, added in index order.
  bool reduce(uint64_t step, const std::vector<MicroBatchGradient> &mine, float &loss, std::vector<float> &grad,
              std::string &error);
  // Returns once every rank has logged `step`: rank 0 commits a step (its snapshot) only after
  // that, so that a step the job resumes after is in every rank's log, as its samples are in the
  // state (a rank killed between the sum and its log line would otherwise leave a committed step
  // that its log does not show).
  bool logged(uint64_t step, std::string &error);

private:
  Collective(uint32_t rank, uint32_t world, uint32_t params, uint32_t microBatches)
      : rank_(rank), world_(world), params_(params), microBatches_(microBatches) {}
  bool lead(const std::string &address, uint16_t port, uint32_t timeoutMs, std::string &error);
  bool follow(const std::string &address, uint16_t port, uint32_t timeoutMs, std::string &error);

  uint32_t rank_, world_, params_, microBatches_;
  std::vector<int> peers_; // rank 0: the socket of rank r at r (peers_[0] unused); else: rank 0's at 0
  std::vector<MicroBatchGradient> received_; // rank 0: the other ranks' micro-batches of a step, by index
};

} // namespace msc::workload

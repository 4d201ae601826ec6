// Whether each rank of a job still makes progress: kubelet's liveness probe, read from the rank's
// control page. A rank that has beaten and then stays silent for the plan's heartbeat x misses is
// hung. Silence before the first beat is start-up (an interpreter importing torch, a rendezvous
// waiting for the other ranks): a hang only past the plan's `start_within`, when it sets one.
//
// The room keeps when each rank last beat; the ranks' pages are read through a BeatSource (the
// WorkerGroup on a node, a model in tests and in the simulator), so the rule runs in virtual time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace msc::exec {

// How long a worker that said it is finishing may take to exit before its silence is a hang: data
// loader processes, a process group and files torn down on a busy node.
inline constexpr uint64_t kExitGraceNs = 30'000'000'000ull;

// Whether a worker that has beaten and then stayed silent for `silenceNs` is hung: past `hangAfterNs`
// (at least kExitGraceNs once it said it is finishing: mscale::worker::finishing), unless the kernel
// is still tearing it down (`exiting`, asked only then: a crash whose exit status is on the way),
// and always past kExitGraceNs. The one rule for the ranks of a job and for processes attached to a
// contract (agent/).
bool silentTooLong(uint64_t silenceNs, uint64_t hangAfterNs, bool finishing, const std::function<bool()> &exiting);

// What the liveness room reads of the ranks of the running attempt.
class BeatSource {
public:
  virtual ~BeatSource() = default;
  virtual unsigned ranks() const = 0;
  // The beats rank `r` has counted on its page; nullopt when it does not run or has no page.
  virtual std::optional<uint64_t> beats(unsigned r) const = 0;
  // It said it is finishing (its work done, tearing down).
  virtual bool finishing(unsigned r) const = 0;
  // The kernel is tearing it down (killed, its exit status on the way).
  virtual bool exiting(unsigned r) const = 0;
};

class Liveness {
public:
  struct Hang {
    unsigned rank = 0;
    uint64_t lastBeatNs = 0; // never beaten: when its attempt started
    bool neverBeat = false;  // silent since its start for `startWithinNs`
  };

  // A new attempt started at `now` with `ranks` ranks: none has beaten yet.
  void restart(unsigned ranks, uint64_t now);
  // Reads every running rank's beats at `now`. True when some rank beat since the last call.
  bool observe(const BeatSource &source, uint64_t now);
  // The first rank, in rank order, that beat and then not for `hangAfterNs` (see silentTooLong),
  // or that has not beaten `startWithinNs` after its attempt started (0: never for that).
  std::optional<Hang> hung(const BeatSource &source, uint64_t now, uint64_t hangAfterNs,
                           uint64_t startWithinNs = 0) const;
  // Some rank of this contract has used its control page, in any attempt.
  bool everBeat() const { return everBeat_; }
  uint64_t lastBeatNs(unsigned r) const { return r < ranks_.size() ? ranks_[r].lastBeatNs : 0; }

private:
  struct Rank {
    uint64_t beats = 0, lastBeatNs = 0;
  };
  std::vector<Rank> ranks_;
  bool everBeat_ = false;
};

} // namespace msc::exec

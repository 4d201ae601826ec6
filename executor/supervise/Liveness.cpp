#include "executor/supervise/Liveness.h"

#include <algorithm>

namespace msc::exec {

bool silentTooLong(uint64_t silenceNs, uint64_t hangAfterNs, bool finishing, const std::function<bool()> &exiting) {
  uint64_t limit = finishing ? std::max(hangAfterNs, kExitGraceNs) : hangAfterNs;
  return silenceNs >= limit && (silenceNs >= kExitGraceNs || !exiting());
}

void Liveness::restart(unsigned ranks, uint64_t now) { ranks_.assign(ranks, Rank{0, now}); }

bool Liveness::observe(const BeatSource &source, uint64_t now) {
  if (ranks_.size() < source.ranks())
    ranks_.resize(source.ranks(), Rank{0, now});
  bool beat = false;
  for (unsigned r = 0; r < source.ranks(); ++r) {
    std::optional<uint64_t> beats = source.beats(r);
    if (!beats || *beats == ranks_[r].beats)
      continue;
    ranks_[r] = {*beats, now};
    beat = true;
  }
  everBeat_ |= beat;
  return beat;
}

std::optional<Liveness::Hang> Liveness::hung(const BeatSource &source, uint64_t now, uint64_t hangAfterNs,
                                             uint64_t startWithinNs) const {
  for (unsigned r = 0; r < source.ranks() && r < ranks_.size(); ++r) {
    if (!source.beats(r))
      continue;
    if (ranks_[r].beats == 0) { // still starting: lastBeatNs is when its attempt began
      if (startWithinNs && silentTooLong(now - ranks_[r].lastBeatNs, startWithinNs, source.finishing(r),
                                         [&] { return source.exiting(r); }))
        return Hang{r, ranks_[r].lastBeatNs, true};
      continue;
    }
    if (silentTooLong(now - ranks_[r].lastBeatNs, hangAfterNs, source.finishing(r), [&] { return source.exiting(r); }))
      return Hang{r, ranks_[r].lastBeatNs};
  }
  return std::nullopt;
}

} // namespace msc::exec

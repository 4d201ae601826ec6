// What the node lends now: from each owner's phases (what each keeps exclusively), where the owner
// is on its demand curve (the worker's phase, its step, the time since it started) and where it will
// be soon (its rhythm, PhaseRhythm.h), decide which CPUs each borrower runs on, which it must give
// back, and which phase entries must wake the node. Kubernetes' sync handlers: read, decide purely,
// write; the node reads the control pages, calls decide() and reconciles the borrowers' cgroups to
// the decision (BorrowerCgroup.h). Pure and deterministic, so it runs in virtual time.
//
// The rules:
//   - Before an owner enters any phase, and between phases, it keeps everything: lending starts with
//     the demand curve. A phase lasts until the next is entered.
//   - In a phase, the owner lends its CPUs that no active phase keeps (the worker's, and those its
//     step schedule or wall-time window makes active) and no phase expected within its lead keeps:
//     `lead = auto` takes the rhythm's lead plus the measured reclaim cost, a fixed lead that time.
//   - Borrowers, in admission order, keep the lent CPUs they have as far as they are still lent and
//     asked for, then take more from the lowest numbers up; one that gets none is frozen.
//   - An owner's phase whose kept CPUs are lent wakes the node when entered (ControlPage::phaseWake).
//   - IO: while an owner keeps a role's `io` (the same rules as its CPUs: active, expected within
//     the lead, or outside phases), every borrower's IO to that role's block device is throttled.
//   - GPU: an owner's GPU slices (a plan's gpu_slices, one share each) are lent by the same rules,
//     in the share's own units (its slices: SMs / slices each). A borrower asking for N units gets
//     them on one GPU (one green context), from one share: it keeps the share it has while it is
//     still lent and has room, else takes the first share with room, in owner and plan order. One
//     frozen off every CPU is lent no GPU units (it could not use them).
#pragma once

#include "executor/lending/PhaseRhythm.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::exec::lending {

using CpuSet = std::vector<unsigned>; // sorted, unique

struct PhaseSpec {
  enum class Trigger { Worker, Steps, WallTime };
  std::string name;
  CpuSet keptCpus; // the CPUs of the roles that keep `cpu` in this phase
  Trigger trigger = Trigger::Worker;
  uint64_t everySteps = 0, forSteps = 0; // Steps
  uint64_t fromNs = 0, toNs = 0;         // WallTime, since the job started
  std::vector<std::string> keptDevices = {}; // block devices of the roles that keep `io` (sorted)
  std::vector<unsigned> keptShares = {};     // indexes into Owner::gpuShares of the roles that keep `gpu` (sorted)
};

// One GPU slice an owner holds (a plan's gpu_slices entry), lendable in whole units of its slices.
struct GpuShare {
  std::string role;
  unsigned gpuIndex = 0;   // the node's GPU (plan gpu_index)
  std::string gpu;         // its PCI address
  unsigned units = 0;      // slices the role holds on it
  unsigned smsPerUnit = 0; // SMs of one (0: not known)
};

// A borrower's GPU loan: `units` of one owner's share. Empty (no owner): none.
struct GpuLoan {
  std::string owner;
  unsigned share = 0; // index into the owner's gpuShares
  unsigned units = 0;
  bool empty() const { return owner.empty(); }
  friend bool operator==(const GpuLoan &, const GpuLoan &) = default;
};

struct Owner {
  std::string contract;
  CpuSet cpus;                   // every CPU its plan holds: the most it can lend
  std::vector<std::string> ioDevices = {}; // every block device its roles use (sorted): kept, as its CPUs, outside phases
  std::vector<GpuShare> gpuShares = {};    // its GPU slices: kept, as its CPUs, outside phases
  std::vector<PhaseSpec> phases; // index: phase number - 1
  uint64_t reclaimWithinNs = 2'000'000;
  bool leadAuto = true;
  uint64_t leadNs = 0;
  // What the node reads of it:
  unsigned workerPhase = 0; // the control page's phase (0: none yet, or between phases)
  uint64_t step = 0;        // its last completed step (heartbeats)
  uint64_t nsPerStep = 0;   // its measured step time (0: not known yet)
  uint64_t startedNs = 0;   // when its worker started (wall-time phases count from here)
  const PhaseRhythm *rhythm = nullptr; // its worker phases' rhythm (null: none learnt)
  uint64_t reclaimCostNs = 0;          // what a reclaim takes on this node, measured
};

struct Borrower {
  std::string contract;
  unsigned cpuCores = 0; // CPUs it asks for
  CpuSet current;        // the CPUs it runs on now (its cgroup), for stability
  unsigned gpuUnits = 0; // GPU slices it asks for (gpu_sm_slices), all on one GPU
  GpuLoan currentGpu = {};
};

struct Decision {
  std::map<std::string, CpuSet> borrowerCpus; // every borrower; empty: frozen
  std::map<std::string, CpuSet> lent;         // per owner: its CPUs that borrowers run on
  std::map<std::string, CpuSet> kept;         // per owner: what it keeps now (active or soon)
  std::map<std::string, CpuSet> keptNow;      // per owner: of those, what its active phases keep (all between phases)
  std::map<std::string, uint32_t> wakeMask;   // per owner: bit N-1 when phase N's kept CPUs are lent
  // Block devices some owner keeps now or soon (its phases' `io`): every borrower's IO to them is
  // throttled (BorrowerCgroup::throttleIo). Sorted.
  std::vector<std::string> throttledDevices;
  std::map<std::string, GpuLoan> borrowerGpu;              // every borrower asking for GPU units; empty: none
  std::map<std::string, std::vector<unsigned>> sharesKeptNow; // per owner: shares its active phases keep (all between phases)
};
// Whether any borrower's GPU loan in `d` is of a share of `owner` in `shares` (sorted).
bool gpuLentFrom(const Decision &d, const std::string &owner, const std::vector<unsigned> &shares);

// The phases of `o` active at `nowNs` (numbers, ascending): the worker's and the node-triggered ones.
std::vector<unsigned> activePhases(const Owner &o, uint64_t nowNs);
// When phase `number` of `o` is next entered, at or after `nowNs`; nullopt when it cannot be said
// (a worker phase without a rhythm yet, a step phase without a step time, a window passed).
std::optional<uint64_t> nextStart(const Owner &o, unsigned number, uint64_t nowNs);
// How far ahead of phase `number`'s start `o` takes back what it keeps: `lead = auto`, its rhythm's
// lead over the measured reclaim cost (the node's own triggers: the cost, and a quarter step for a
// step schedule); a fixed lead, that.
uint64_t leadOf(const Owner &o, unsigned number);
// `lead = 0ms` does not anticipate: what a phase keeps is taken back when it is entered (the entry
// wakes the node), within the bound; any other lead starts the reclaim ahead of the expected start.
inline bool anticipates(const Owner &o) { return o.leadAuto || o.leadNs != 0; }
Decision decide(const std::vector<Owner> &owners, const std::vector<Borrower> &borrowers, uint64_t nowNs);
// When `decided` must be decided again at the latest, for the time alone to change it: the earliest
// reclaim a lead starts (a phase keeping lent CPUs, at its next start less its lead), or the end of
// a step or wall-time window. UINT64_MAX when only a worker's phase entry can change it.
uint64_t nextDecisionNs(const std::vector<Owner> &owners, const Decision &decided, uint64_t nowNs);

} // namespace msc::exec::lending

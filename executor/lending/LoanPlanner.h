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
//   - Shares: an owner's GPU slices (a plan's gpu_slices, one share each, in units of its slices:
//     SMs / slices each) and its RDMA queue-pair groups (a plan's rdma settings, one share each, in
//     queue pairs) are lent by the same rules, kept by phases naming the role's `gpu` or `rdma`. A
//     borrower asking for N units of a kind gets them from one share (one GPU's green context, one
//     port): it keeps the share it has while it is still lent and has room, else takes the first
//     share with room, in owner and plan order. One frozen off every CPU is lent no units (it could
//     not use them).
#pragma once

#include "executor/lending/PhaseRhythm.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::exec::lending {

using CpuSet = std::vector<unsigned>; // sorted, unique

// Devices lent in whole units of one share an owner holds: a GPU slice's SM slices, an RDMA
// queue-pair group's queue pairs. Indexes the per-kind arrays below.
enum ShareKind : unsigned { kGpuShare, kRdmaShare, kShareKinds };
template <class T> using PerShareKind = std::array<T, kShareKinds>;
// "GPU units", "RDMA queue pairs": what a kind's units are called in messages.
const char *shareUnitsName(ShareKind kind);
// The contract's resource kind a phase names to keep a share of this kind: "gpu", "rdma".
const char *shareResourceName(ShareKind kind);

struct PhaseSpec {
  enum class Trigger { Worker, Steps, WallTime };
  std::string name;
  CpuSet keptCpus; // the CPUs of the roles that keep `cpu` in this phase
  Trigger trigger = Trigger::Worker;
  uint64_t everySteps = 0, forSteps = 0; // Steps
  uint64_t fromNs = 0, toNs = 0;         // WallTime, since the job started
  std::vector<std::string> keptDevices = {}; // block devices of the roles that keep `io` (sorted)
  // Per kind, indexes into the owner's shares of that kind (Owner::gpuShares, rdmaShares) of the
  // roles that keep `gpu` / `rdma` (sorted).
  PerShareKind<std::vector<unsigned>> keptShares = {};
};

// One GPU slice an owner holds (a plan's gpu_slices entry), lendable in whole units of its slices.
struct GpuShare {
  std::string role;
  unsigned gpuIndex = 0;   // the node's GPU (plan gpu_index)
  std::string gpu;         // its PCI address
  unsigned units = 0;      // slices the role holds on it
  unsigned smsPerUnit = 0; // SMs of one (0: not known)
};

// One RDMA queue-pair group an owner holds (a plan's rdma setting), lendable in queue pairs.
struct RdmaShare {
  std::string role;
  std::string device; // the HCA and port its queue pairs are on
  unsigned port = 1;
  // Queue pairs it lends at most: all but one. A group keeps one, so that the owner's connection
  // over it stays up across loans and a take-back never costs it a connection set-up with its peers.
  unsigned units = 0;
};

// A borrower's loan of one kind: `units` of one owner's share. Empty (no owner): none.
struct ShareLoan {
  std::string owner;
  unsigned share = 0; // index into the owner's shares of the kind
  unsigned units = 0;
  bool empty() const { return owner.empty(); }
  friend bool operator==(const ShareLoan &, const ShareLoan &) = default;
};

struct Owner {
  std::string contract;
  CpuSet cpus;                   // every CPU its plan holds: the most it can lend
  std::vector<std::string> ioDevices = {}; // every block device its roles use (sorted): kept, as its CPUs, outside phases
  std::vector<GpuShare> gpuShares = {};    // its GPU slices: kept, as its CPUs, outside phases
  std::vector<RdmaShare> rdmaShares = {};  // its queue-pair groups: kept, as its CPUs, outside phases
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
  // Units of each kind it asks for (gpu_sm_slices on one GPU, rdma_qps on one port), and what it
  // is lent of them now, for stability.
  PerShareKind<unsigned> units = {};
  PerShareKind<ShareLoan> currentShares = {};
};
// Shares of `kind` `o` holds, and the units of one.
size_t shareCount(const Owner &o, ShareKind kind);
unsigned shareUnits(const Owner &o, ShareKind kind, unsigned share);

struct Decision {
  std::map<std::string, CpuSet> borrowerCpus; // every borrower; empty: frozen
  std::map<std::string, CpuSet> lent;         // per owner: its CPUs that borrowers run on
  std::map<std::string, CpuSet> kept;         // per owner: what it keeps now (active or soon)
  std::map<std::string, CpuSet> keptNow;      // per owner: of those, what its active phases keep (all between phases)
  std::map<std::string, uint32_t> wakeMask;   // per owner: bit N-1 when phase N's kept CPUs are lent
  // Block devices some owner keeps now or soon (its phases' `io`): every borrower's IO to them is
  // throttled (BorrowerCgroup::throttleIo). Sorted.
  std::vector<std::string> throttledDevices;
  // Per kind: every borrower asking for units of it (empty: none lent), and per owner the shares
  // its active phases keep (all between phases).
  PerShareKind<std::map<std::string, ShareLoan>> borrowerShares;
  PerShareKind<std::map<std::string, std::vector<unsigned>>> sharesKeptNow;
  // Per kind: the most units of one share no owner keeps now or soon, borrowers or not (what one
  // borrower of the kind could be lent now), as lendableCores is for CPUs.
  PerShareKind<unsigned> lendableUnits = {};
};
// Whether any borrower's loan of `kind` in `d` is of a share of `owner` in `shares` (sorted).
bool sharesLentFrom(const Decision &d, ShareKind kind, const std::string &owner, const std::vector<unsigned> &shares);
// Whether any borrower's loan of any kind in `d` is of a share `phase` of `owner` keeps.
bool sharesLentFrom(const Decision &d, const std::string &owner, const PhaseSpec &phase);

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

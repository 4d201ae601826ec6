// Where the cluster keeps what controllers and node agents say to each other in etcd: the one place
// that spells the keys and their values, so the controller, the agents and the tests cannot drift.
//
//   /mscale/nodes/<node>                  a node's registration: its topology (YAML) and agent version,
//                                         put under the agent's lease, gone when the agent is
//   /mscale/assignments/<node>/<contract> a plan assigned by the controller leader (assignment.proto)
//   /mscale/status/<node>/<contract>      what the agent made of it: applied / refused with a code,
//                                         the worker's state (text, for people and controllers)
//   /mscale/contracts/<contract>          a submitted contract: source, worker command (submission.proto),
//                                         what should run; written by the leading controller only
//   /mscale/contract-status/<contract>    the leading controller's decision on it
//   /mscale/config                        the cluster config (YAML), what mscale-deploy published;
//                                         written by the leading controller only
//   /mscale/cordons/<node>                a cordon: the node takes no new placement (why, by whom);
//                                         written by the leading controller only, under no lease, so
//                                         it outlives the node's agent and every controller
//   /mscale/drains/<node>                 a drain: the node's jobs move at a snapshot boundary
//   /mscale/faults/<node>                 the faults the leaders saw on the node
#pragma once

#include "cluster/etcd/Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

inline constexpr const char *kRootPrefix = "/mscale/";
inline constexpr const char *kNodesPrefix = "/mscale/nodes/";
inline constexpr const char *kAssignmentsPrefix = "/mscale/assignments/";
inline constexpr const char *kStatusPrefix = "/mscale/status/";
inline constexpr uint32_t kAssignmentFormat = 1;
inline constexpr uint32_t kSubmissionFormat = 1;
// etcd refuses requests over 1.5 MiB by default; a submission stays well below, with its key.
inline constexpr size_t kMaxSubmissionBytes = 1u << 20;
// /mscale/contracts/<name>: a Submission, what the cluster should run (written by the leader when
// `mscale-cli cluster submit` asks it); /mscale/contract-status/<name>: what the leading controller
// made of it, lines "placed NODE,NODE leader-rev N" or "refused leader-rev N", then
// "defaults from cluster config 'NAME': FIELD = VALUE, ..." when the cluster config filled in
// scaling defaults, then (refused) the diagnostics as printed.
inline constexpr const char *kContractsPrefix = "/mscale/contracts/";
inline constexpr const char *kContractStatusPrefix = "/mscale/contract-status/";
// /mscale/contract-events/<contract>: what happened to a contract as the leaders decided it, oldest
// first, the newest kContractEventsKept: one line each, "UNIX_MS TEXT" ("placed on n1,n2", "node n2
// lost: placed again on n1,n3", "refused: error[ERR_PLACE_002]: ..."). Written with the status, in
// the same fenced transaction; what `mscale-cli cluster status` shows, like `kubectl describe`.
inline constexpr const char *kContractEventsPrefix = "/mscale/contract-events/";
inline constexpr size_t kContractEventsKept = 20;
struct ContractEvent {
  int64_t unixMs = 0;
  std::string text;
  bool operator==(const ContractEvent &) const = default;
};
std::string encodeEvents(const std::vector<ContractEvent> &events);
// The events of a stored value; a line that does not read is skipped (the rest still tell).
std::vector<ContractEvent> decodeEvents(const std::string &value);

// /mscale/config: the cluster config (cluster/config/ClusterConfig.h) as the operator wrote it,
// comments included (they say why a domain is reserved), after a header line that says which
// controller wrote it. YAML, like the registrations: people read it with etcdctl, the leader reads
// it on every reconciliation, and the header is a YAML comment.
inline constexpr const char *kConfigKey = "/mscale/config";

inline std::string nodeKey(const std::string &node) { return kNodesPrefix + node; }
// Ends with '/': a watch on [prefix, etcd::prefixEnd(prefix)) sees one node's assignments only
// (without the slash, node "a1" would also see node "a10").
inline std::string assignmentsPrefix(const std::string &node) { return kAssignmentsPrefix + node + "/"; }
inline std::string assignmentKey(const std::string &node, const std::string &contract) {
  return assignmentsPrefix(node) + contract;
}
inline std::string statusPrefix(const std::string &node) { return kStatusPrefix + node + "/"; }
inline std::string statusKey(const std::string &node, const std::string &contract) {
  return statusPrefix(node) + contract;
}
// The contract of an assignment or status key under `prefix`; empty when the key is not one.
std::string contractOfKey(const std::string &key, const std::string &prefix);

// The controllers' election (etcd's server-side election, cluster/etcd/Election.h) and a
// controller's value in it: "NAME ADDRESS" (the address of its service; empty when it serves none).
// The one place that spells and reads it, for the controllers and for whoever looks for the leader.
inline constexpr const char *kControllerElection = "mscale/controllers";
std::string electionValue(const std::string &name, const std::string &address);
void parseElectionValue(const std::string &value, std::string &name, std::string &address);

// A node's health as its agent judged it (health/Judge.h), published with its registration. The
// keys know the verdict's words, not the judge: the controller and the readers link no sampler.
enum class HealthLevel { Healthy, Degraded, Failed };
const char *healthLevelName(HealthLevel level); // "healthy", "degraded", "failed"
std::optional<HealthLevel> healthLevelOf(const std::string &name);
struct HealthReason {
  std::string code;    // "ERR_HEALTH_001" (a failing reason) or "WRN_HEALTH_001" (a degrading one)
  std::string message; // the diagnostic's message, one line
  bool operator==(const HealthReason &) const = default;
};
struct NodeHealth {
  HealthLevel level = HealthLevel::Healthy;
  std::vector<HealthReason> reasons; // worst first, as judged
  bool operator==(const NodeHealth &) const = default;
};

// /mscale/nodes/<node>: YAML, so that `etcdctl get` is readable and placement reads it with
// hal::readTopologyYaml. The agent's version line comes first, then "# address ADDR" when the
// agent advertises one, then "# http HOST:PORT" when it serves HTTP, then "# health LEVEL" and one
// "# health-reason CODE MESSAGE" per reason when the agent judges its health, then the topology
// document.
struct Registration {
  std::string agentVersion;
  std::string topologyYaml; // hal::writeTopologyYaml
  // Where the workers of this node are reached from other nodes (a host name or an IP address):
  // MASTER_ADDR of a job whose rank 0 runs here. Empty: not said (the node's name stands in).
  std::string address = {};
  // The agent's HTTP endpoint as other machines reach it (metrics, and worker output for
  // `mscale-cli cluster logs`). Empty: it serves none there.
  std::string http = {};
  // The agent's last verdict; absent when it judges none (an older agent, or a node served from a
  // recorded topology file, which holds no values to re-read): placeable, as before health existed.
  std::optional<NodeHealth> health = {};
  // Set by decodeRegistration when the health lines are there but do not read (ERR_CLUSTER_016 is
  // the reader's to report): the topology still reads, the verdict is unknown.
  std::string healthUnreadable = {};
};
// Whether `address` can be advertised: non-empty, printable, without blanks (it is one YAML comment
// word and one environment value).
bool validNodeAddress(const std::string &address);
std::string encodeRegistration(const Registration &r);
// ERR_CLUSTER_004 style failures are the caller's: nullopt with `why` when the value is not one.
// Health lines that do not read leave `healthUnreadable` set and `health` absent, not a failure:
// the node's topology (and so what already runs there) does not depend on them.
std::optional<Registration> decodeRegistration(const std::string &value, std::string &why);
// A verdict stands only under the lease of the agent that judged it (the agent writes its
// registration under its lease, and keeps the verdict current while it lives). One written under
// no lease (`lease` 0: by hand, or by a tool) has no agent behind it: it is moved to
// healthUnreadable, so that it cordons nothing and the node takes no new placement on its word.
void requireLeaseForHealth(Registration &r, int64_t lease);

// /mscale/cordons/<node>: lines "by operator|policy", "leader-rev N", "since-ms UNIX_MS", then
// "reason TEXT" (one line). Text, like the statuses: people read it with etcdctl.
inline constexpr const char *kCordonsPrefix = "/mscale/cordons/";
inline std::string cordonKey(const std::string &node) { return kCordonsPrefix + node; }
struct Cordon {
  std::string by;     // "operator" (mscale-cli cluster cordon) or "policy" (the cluster config's cordon_on)
  std::string reason; // one line, not empty
  int64_t leaderRevision = 0;
  int64_t sinceUnixMs = 0;
  bool operator==(const Cordon &) const = default;
};
std::string encodeCordon(const Cordon &c);
// nullopt with `why` when a line is missing or does not read, or the reason is empty.
std::optional<Cordon> decodeCordon(const std::string &value, std::string &why);
// Whether `name` can be a node's name in a key: not empty, at most 253 characters, printable,
// without blanks or '/'. False with `why`.
bool isNodeName(const std::string &name, std::string &why);

// /mscale/faults/<node>: the faults the leaders saw on a node, oldest first, the newest
// kNodeFaultsKept, one line each: "UNIX_MS ID TEXT". The history is the machine's, not a
// registration's: it stays while the node is away and when it registers again, so that a lemon
// (health.lemon in the cluster config) is found across restarts and controller failovers. The ID
// names a fault once, so that a leader that sees it again adds nothing:
//   worker:<contract>:<leader-rev>:<n>  the n-th fault of the workers of the contract's assignment
//                                       from that leader revision, as its agent counts them;
//   lost:<contract>:<leader-rev>:<rev>  the node lost under that assignment (its workers with it),
//                                       the assignment written at store revision <rev>.
// One more kind of line is no fault but a mark: an operator uncordoned the node, and the lemon rule
// counts the faults after it (else the next round would cordon the node again at once):
//   uncordoned:<leader-rev>:<history-rev>  written by Uncordon with the cordon's removal.
inline constexpr const char *kNodeFaultsPrefix = "/mscale/faults/";
inline constexpr const char *kUncordonedMark = "uncordoned:";
inline constexpr size_t kNodeFaultsKept = 64;
inline std::string nodeFaultsKey(const std::string &node) { return kNodeFaultsPrefix + node; }
struct NodeFault {
  int64_t unixMs = 0;
  std::string id;   // printable, without blanks
  std::string text; // one line
  bool operator==(const NodeFault &) const = default;
  bool isUncordonMark() const { return id.rfind(kUncordonedMark, 0) == 0; }
};
std::string encodeFaults(const std::vector<NodeFault> &faults);
// nullopt with `why` when a line does not read: the history is not rewritten then (what it held
// would be lost), and the leader says so (ERR_CLUSTER_019).
std::optional<std::vector<NodeFault>> decodeFaults(const std::string &value, std::string &why);

// /mscale/drains/<node>: an operator's drain (`mscale-cli cluster drain`), written by the leading
// controller with the node's cordon, under no lease: lines "leader-rev N", "since-ms UNIX_MS",
// "deadline-ms UNIX_MS", "force yes|no", "state draining|timed-out". The leader moves every job off
// the node at a snapshot boundary (PlannedStop) until the deadline; then, with force, it moves what
// is left as a lost node's jobs are moved (from their newest snapshot), and without, it gives up
// ("timed-out": the asks are withdrawn, the jobs run on, the node stays cordoned). The drain's id
// is the revision the record was written at (a drain again after a time-out is a new one). Uncordon
// removes the record with the cordon.
inline constexpr const char *kDrainsPrefix = "/mscale/drains/";
inline std::string drainKey(const std::string &node) { return kDrainsPrefix + node; }
struct Drain {
  int64_t leaderRevision = 0;
  int64_t sinceUnixMs = 0;
  int64_t deadlineUnixMs = 0;
  bool force = false;
  bool timedOut = false;
  bool operator==(const Drain &) const = default;
};
std::string encodeDrain(const Drain &d);
// nullopt with `why` when a line is missing or does not read, or the deadline is before the start.
std::optional<Drain> decodeDrain(const std::string &value, std::string &why);

// /mscale/lending/<node>: what the owners on a node lend (contracts with phases), published by its
// agent under its lease (gone with the agent) and rewritten only when it changes, so that the leader
// places borrowers (class = opportunistic) where lendable capacity is. Per resource, what the owners
// lend at their most, the share of the agent's last window that much was lendable (as the owners'
// phase rhythm gives it; 0 when they lend none) and what was lent to borrowers as the window ended:
//   CPUs         "cpus N" (summed: the largest borrower the node admits), "share-permille N",
//                "lent-cpus N";
//   GPU units    "gpu-units N" (the most one owner lends on one GPU), "gpu-share-permille N",
//                "lent-gpu-units N";
//   queue pairs  "rdma-queue-pairs N" (the most one owner lends on one port),
//                "rdma-share-permille N", "lent-queue-pairs N";
// and "owners N". The queue-pair lines and the GPU share and lent lines came later: a record
// without them (an older agent's) lends no queue pairs, none lent, and its GPU units share the CPUs'
// share.
inline constexpr const char *kLendingPrefix = "/mscale/lending/";
inline std::string lendingKey(const std::string &node) { return kLendingPrefix + node; }
struct LendingRecord {
  uint32_t owners = 0, cpus = 0, gpuUnits = 0, sharePermille = 0, lentCpus = 0, rdmaQueuePairs = 0;
  uint32_t gpuSharePermille = 0, lentGpuUnits = 0, rdmaSharePermille = 0, lentQueuePairs = 0;
  bool operator==(const LendingRecord &) const = default;
};
std::string encodeLending(const LendingRecord &r);
// nullopt with `why` when a line is missing, there twice or does not read, a share is above 1000,
// or a node without owners says it lends something.
std::optional<LendingRecord> decodeLending(const std::string &value, std::string &why);

struct PublishedConfig {
  std::string writtenBy; // "controller 'A' (leader-rev 17)"
  std::string yaml;      // the config as given to mscale-deploy
};
std::string encodeConfig(const PublishedConfig &c);
// nullopt with `why` when the value does not start with the header line.
std::optional<PublishedConfig> decodeConfig(const std::string &value, std::string &why);

// A planned stop of a contract's workers, asked by the leader while it drains a node (`mscale-cli
// cluster drain`) or to grow an elastic job (cluster/controller/Grow.h): every rank stops after the same step with that step's snapshot on the disk
// tier, so the job resumes elsewhere replaying no step. Asked in two rounds: first with no step
// (each agent answers the step its job is at and how long a step takes: AssignmentStatus::stop),
// then with the step the leader chose from the answers, far enough ahead that the ask reaches
// every rank before it gets there (ranks in lockstep must not stop at different steps).
struct PlannedStop {
  enum class Cause { Drain, Grow };
  // The stop's id, a store revision: a drain's is the revision its record was written at
  // (drainKey), a grow's the revision of the read that decided it. The agent answers an id.
  int64_t id = 0;
  uint32_t attempt = 1;   // a new attempt when a worker passed the step before the ask reached it
  uint64_t afterStep = 0; // 0: not chosen yet
  Cause cause = Cause::Drain;
  bool operator==(const PlannedStop &) const = default;
};

struct Assignment {
  int64_t leaderRevision = 0;
  std::string plan; // plan file bytes
  std::vector<std::string> command;
  std::map<std::string, std::string> environment;
  std::optional<PlannedStop> stop = {};
};
std::string encodeAssignment(const Assignment &a);
// nullopt with `why` for bytes that are not an assignment, a format this agent does not know, a
// leader revision that is not positive, or no plan.
std::optional<Assignment> decodeAssignment(const std::string &value, std::string &why);

// The variables an assignment carries for the leader's placement of the job rather than from its
// submission (controller/Rendezvous.h): the rank's place in the world and its share of the global
// batch at the size placed.
bool isPlacementVariable(const std::string &name);
// Whether `next` is `previous` placed anew on the same node: the same plan and command, and an
// environment that differs in placement variables alone (a world-size change the node survives).
// Planned stops and leader revisions are not compared.
bool samePlacedJob(const Assignment &previous, const Assignment &next);

// A contract as submitted: what /mscale/contracts/<contract> holds.
struct Submission {
  std::string contract;
  std::string source;
  std::vector<std::string> command;
  std::map<std::string, std::string> environment;
  // `mscale-cli cluster submit --class`: "", "guaranteed" or "opportunistic", the class a contract
  // without a class line of its own takes (FrontendOptions::defaultClass); one of its own must agree.
  std::string contractClass = {};
};
// Whether `name` is a contract class a submission may give ("" stands for none).
bool isSubmittedClass(const std::string &name);
// Why a submission cannot give its contract the class `submitted` when the contract says `own` (its
// class as compiled with `submitted` for a default: FrontendOptions::defaultClass; "" for none):
// ERR_CLUSTER_023's last words, the same in the CLI, the client and the leader. Empty when it can.
std::string submittedClassProblem(const std::string &submitted, const std::string &own = {});
// The name must be a contract identifier of the language ([A-Za-z_][A-Za-z0-9_]*, at most 128
// characters): it is a key component and a name in diagnostics. False with `why` otherwise.
bool isContractName(const std::string &name, std::string &why);
// Everything a controller checks before it writes or reads a submission, other than compiling it:
// the name, a source that is not empty, the size, environment names. False with `why`.
bool checkSubmission(const Submission &s, std::string &why);
std::string encodeSubmission(const Submission &s);
// nullopt with `why` for bytes that are not a submission, a format this controller does not know,
// or one that fails checkSubmission.
std::optional<Submission> decodeSubmission(const std::string &value, std::string &why);

// The agent's answer to a planned stop (Assignment::stop), lines of the status: "stop-asked ID
// ATTEMPT" once it has answered that ask, with "stop-step N" (the step every rank had completed)
// and "stop-step-ms M" (the job's recent time a step, 0 unknown); "stopped-at S" once every rank
// stopped after step S with its snapshot and exited; "stop-missed N" when the job went past the
// step asked (at step N) without stopping, so that the leader asks again.
struct StopAnswer {
  int64_t id = 0; // PlannedStop::id
  uint32_t attempt = 0;
  uint64_t step = 0;
  uint64_t stepMs = 0;
  uint64_t stoppedAt = 0; // 0: not stopped
  uint64_t missedAt = 0;  // 0: not missed
  bool operator==(const StopAnswer &) const = default;
};

// /mscale/status/<node>/<contract>: lines "state applied|refused|not-applied", "code ERR_...",
// "leader-rev N", "worker none|running|exited|killed", "pid N", "exit N", "faults N" and "last-fault
// TEXT" (the supervisor's faults of this assignment's workers, restarts included), the answer to a
// planned stop (StopAnswer), then "message ..." lines (the diagnostics as printed). Text: people read
// it with etcdctl, and a controller needs a few fields.
struct AssignmentStatus {
  std::string state; // applied | refused | not-applied
  std::string code;  // the first error's code when refused
  int64_t leaderRevision = 0;
  std::string worker = "none";
  int64_t pid = 0;
  int exitStatus = 0;
  std::vector<std::string> messages;
  int64_t faults = 0;         // the leader's record of the node's faults reads these (NodeFaults.h)
  std::string lastFault = {}; // "worker-crashed at step 40 (SIGKILL)"
  std::optional<StopAnswer> stop = {};
};
std::string encodeStatus(const AssignmentStatus &s);
std::optional<AssignmentStatus> decodeStatus(const std::string &value);

} // namespace msc::cluster

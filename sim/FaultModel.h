// What interrupts a training job on a cluster, and when, in virtual time (issue 30). Each cause of
// FaultCauses.def is a Poisson process at the rate its source observed, scaled to the cluster by its
// scope: a GPU cause by the cluster's GPUs, a node cause by its nodes, a cause of the job's own as it
// is. The harness draws the next interruption from here; nothing in this file knows of a job's
// policies or of what an interruption costs.
#pragma once

#include "executor/supervise/Fault.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace msc::sim {

enum class Scope { Gpu, Node, Job };
const char *scopeName(Scope scope);
// Whether a fault of this class takes its GPU or node out of the job until it is repaired (a lost
// GPU or node, a port down, a failing drive), rather than ending the worker alone.
bool takesNodeOut(exec::FaultClass c);

struct FaultCause {
  std::string id;          // FaultCauses.def's Id: "GpuHbm3"
  std::string name;        // "GPU HBM3 memory"
  Scope scope = Scope::Job;
  exec::FaultClass faultClass = exec::FaultClass::WorkerCrashed; // how the node's supervisor sees it
  double perComponentHour = 0; // interruptions per component (GPU, node, job) per hour
  std::string source;      // where the rate was published
};

// The published tables of FaultCauses.def.
enum class RateTable { Llama3, Seed };
std::vector<FaultCause> faultCauses(RateTable table);
const char *rateTableName(RateTable table); // "llama3", "seed"
std::optional<RateTable> rateTableNamed(std::string_view name);

struct ClusterShape {
  unsigned nodes = 0;
  unsigned gpusPerNode = 8;
  uint64_t gpus() const { return uint64_t(nodes) * gpusPerNode; }
};

struct Fault {
  uint64_t atNs = 0;
  size_t cause = 0;  // index in FaultModel::causes()
  unsigned node = 0; // the node struck (a GPU or node cause); 0 for a cause of the job
  unsigned gpu = 0;  // the GPU struck on that node (a GPU cause); 0 otherwise
};

class FaultModel {
public:
  FaultModel(std::vector<FaultCause> causes, ClusterShape shape);

  const std::vector<FaultCause> &causes() const { return causes_; }
  const ClusterShape &shape() const { return shape_; }
  // The interruptions per hour of a job on the whole cluster: of one cause, and of all.
  double perHour(size_t cause) const;
  double perHour() const { return total_; }
  // The next interruption after `nowNs`: the time to it exponential at perHour(), its cause drawn
  // by its share of that rate, the GPU or node it struck uniform among the cluster's. The same
  // sequence for the same seed on every platform (the draws are this file's, not the standard
  // library's distributions, whose algorithms are the implementation's).
  Fault next(uint64_t nowNs, std::mt19937_64 &rng) const;

private:
  size_t components(Scope scope) const;

  std::vector<FaultCause> causes_;
  ClusterShape shape_;
  std::vector<double> cumulative_; // per cause, the rate of it and every cause before it
  double total_ = 0;
};

} // namespace msc::sim

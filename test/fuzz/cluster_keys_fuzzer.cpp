// Fuzzes what node agents and controllers decode from etcd values that any etcd client can write:
// an assignment and a submission (protobuf), a node's registration (a header line, then topology YAML, which the
// topology_yaml fuzzer covers), the cluster config (a header line, then YAML, which the cluster_config
// fuzzer covers), a status with its answer to a planned stop, a cordon, a drain and a node's lending record (text lines). None of it may crash or hang; whatever
// decodes must encode again to a value that decodes to the same thing.
#include "cluster/keys/Keys.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace msc::cluster;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string value(reinterpret_cast<const char *>(data), size);
  std::string why;
  if (std::optional<Assignment> a = decodeAssignment(value, why)) {
    std::optional<Assignment> again = decodeAssignment(encodeAssignment(*a), why);
    if (!again || again->leaderRevision != a->leaderRevision || again->plan != a->plan ||
        again->command != a->command || again->environment != a->environment || again->stop != a->stop)
      std::abort();
  }
  if (std::optional<Submission> sub = decodeSubmission(value, why)) {
    std::optional<Submission> again = decodeSubmission(encodeSubmission(*sub), why);
    if (!again || again->contract != sub->contract || again->source != sub->source || again->command != sub->command ||
        again->environment != sub->environment || again->contractClass != sub->contractClass)
      std::abort();
  }
  if (std::optional<Registration> r = decodeRegistration(value, why)) {
    std::optional<Registration> again = decodeRegistration(encodeRegistration(*r), why);
    if (!again || again->agentVersion != r->agentVersion || again->topologyYaml != r->topologyYaml)
      std::abort();
  }
  if (std::optional<PublishedConfig> c = decodeConfig(value, why)) {
    std::optional<PublishedConfig> again = decodeConfig(encodeConfig(*c), why);
    if (!again || again->writtenBy != c->writtenBy || again->yaml != c->yaml)
      std::abort();
  }
  if (std::optional<AssignmentStatus> s = decodeStatus(value)) {
    std::optional<AssignmentStatus> again = decodeStatus(encodeStatus(*s));
    if (!again || again->stop != s->stop)
      std::abort();
  }
  if (std::optional<Cordon> c = decodeCordon(value, why)) {
    std::optional<Cordon> again = decodeCordon(encodeCordon(*c), why);
    if (!again || *again != *c)
      std::abort();
  }
  if (std::optional<Drain> d = decodeDrain(value, why)) {
    std::optional<Drain> again = decodeDrain(encodeDrain(*d), why);
    if (!again || *again != *d)
      std::abort();
  }
  if (std::optional<LendingRecord> l = decodeLending(value, why)) {
    std::optional<LendingRecord> again = decodeLending(encodeLending(*l), why);
    if (!again || *again != *l)
      std::abort();
  }
  (void)contractOfKey(value, kAssignmentsPrefix);
  return 0;
}

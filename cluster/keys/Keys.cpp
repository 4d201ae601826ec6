// The cluster's key layout and value formats (see Keys.h).
#include "cluster/keys/Keys.h"

#include "cluster/keys/assignment.pb.h"
#include "cluster/keys/submission.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <set>
#include <sstream>

namespace msc::cluster {

namespace {
constexpr const char *kRegistrationHeader = "# mscale node registration; agent ";
constexpr const char *kConfigHeader = "# mscale cluster config; written by ";
constexpr const char *kAddressLine = "# address ";
constexpr const char *kHttpLine = "# http ";
constexpr const char *kHealthLine = "# health ";
constexpr const char *kHealthReasonLine = "# health-reason ";

// "ERR_HEALTH_001": upper-case words joined by '_', the last one three digits.
bool isDiagCode(llvm::StringRef code) {
  if (code.size() < 5 || code[code.size() - 4] != '_')
    return false;
  for (char c : code.take_back(3))
    if (c < '0' || c > '9')
      return false;
  for (char c : code.drop_back(4))
    if (!((c >= 'A' && c <= 'Z') || c == '_'))
      return false;
  return code.front() != '_';
}

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

template <class T> bool number(const std::string &text, T &out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}
} // namespace

std::string contractOfKey(const std::string &key, const std::string &prefix) {
  if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0)
    return {};
  std::string rest = key.substr(prefix.size());
  return rest.find('/') == std::string::npos ? rest : std::string();
}

const char *healthLevelName(HealthLevel level) {
  switch (level) {
  case HealthLevel::Healthy:
    return "healthy";
  case HealthLevel::Degraded:
    return "degraded";
  case HealthLevel::Failed:
    return "failed";
  }
  return "failed";
}

std::optional<HealthLevel> healthLevelOf(const std::string &name) {
  for (HealthLevel l : {HealthLevel::Healthy, HealthLevel::Degraded, HealthLevel::Failed})
    if (name == healthLevelName(l))
      return l;
  return std::nullopt;
}

std::string encodeRegistration(const Registration &r) {
  // YAML comments: the value stays one valid YAML document that hal::readTopologyYaml accepts whole.
  std::string health;
  if (r.health) {
    health = std::string(kHealthLine) + healthLevelName(r.health->level) + "\n";
    for (const HealthReason &reason : r.health->reasons)
      health += kHealthReasonLine + reason.code + " " + oneLine(reason.message) + "\n";
  }
  return kRegistrationHeader + r.agentVersion + "\n" + (r.address.empty() ? "" : kAddressLine + r.address + "\n") +
         (r.http.empty() ? "" : kHttpLine + r.http + "\n") + health + r.topologyYaml;
}

bool validNodeAddress(const std::string &address) {
  return !address.empty() && address.size() <= 255 &&
         std::all_of(address.begin(), address.end(), [](char c) { return c > ' ' && c < 127; });
}

void requireLeaseForHealth(Registration &r, int64_t lease) {
  if (lease || !r.health)
    return;
  r.healthUnreadable = "its verdict '" + std::string(healthLevelName(r.health->level)) +
                       "' is under no lease, so no agent stands behind it (an agent registers under its lease)";
  r.health.reset();
}

std::optional<Registration> decodeRegistration(const std::string &value, std::string &why) {
  std::string header = kRegistrationHeader;
  size_t eol = value.find('\n');
  if (value.compare(0, header.size(), header) != 0 || eol == std::string::npos) {
    why = "the value does not start with '" + header + "VERSION'";
    return std::nullopt;
  }
  Registration r{value.substr(header.size(), eol - header.size()), value.substr(eol + 1)};
  // The lines the agent writes after its version, in that order, each at most once.
  for (auto [line, field] : {std::pair{kAddressLine, &r.address}, std::pair{kHttpLine, &r.http}}) {
    if (r.topologyYaml.compare(0, std::strlen(line), line) != 0)
      continue;
    size_t end = r.topologyYaml.find('\n');
    std::string word = r.topologyYaml.substr(std::strlen(line), end == std::string::npos ? end : end - std::strlen(line));
    if (!validNodeAddress(word)) {
      why = "the line '" + std::string(line) + word + "' holds no usable address";
      return std::nullopt;
    }
    *field = std::move(word);
    r.topologyYaml = end == std::string::npos ? std::string() : r.topologyYaml.substr(end + 1);
  }
  // The health lines, taken off the topology when they read. When one does not, the verdict is
  // unknown and the lines stay where they were, at the head of the topology (YAML comments), so that
  // the value encodes again to itself: a line after them (an address) is the topology's, not ours.
  std::optional<NodeHealth> health;
  std::string bad, withHealthLines = r.topologyYaml;
  while (llvm::StringRef(r.topologyYaml).starts_with("# health")) {
    size_t end = r.topologyYaml.find('\n');
    llvm::StringRef line = llvm::StringRef(r.topologyYaml).take_front(end);
    if (bad.empty()) {
      if (line.starts_with(kHealthLine)) {
        std::optional<HealthLevel> level = healthLevelOf(line.drop_front(std::strlen(kHealthLine)).str());
        if (health)
          bad = "the health line is there twice";
        else if (!level)
          bad = "'" + line.str() + "' names no verdict (healthy, degraded or failed)";
        else
          health = NodeHealth{*level, {}};
      } else if (line.starts_with(kHealthReasonLine)) {
        auto [code, message] = line.drop_front(std::strlen(kHealthReasonLine)).split(' ');
        if (!health)
          bad = "a health reason comes before the health line";
        else if (!isDiagCode(code) || message.trim().empty())
          bad = "'" + line.str() + "' is not a coded reason (CODE MESSAGE)";
        else
          health->reasons.push_back({code.str(), message.str()});
      } else {
        bad = "'" + line.str() + "' is not a health line";
      }
    }
    r.topologyYaml = end == std::string::npos ? std::string() : r.topologyYaml.substr(end + 1);
  }
  // A verdict and its reasons must agree: a failed node says why, a healthy one has nothing to say.
  if (bad.empty() && health && (health->level == HealthLevel::Healthy) != health->reasons.empty())
    bad = std::string("verdict '") + healthLevelName(health->level) + "' with " + std::to_string(health->reasons.size()) +
          " reason(s)";
  if (!bad.empty()) {
    r.healthUnreadable = bad;
    r.topologyYaml = std::move(withHealthLines);
  } else
    r.health = std::move(health);
  return r;
}

std::string encodeCordon(const Cordon &c) {
  return "by " + c.by + "\nleader-rev " + std::to_string(c.leaderRevision) + "\nsince-ms " +
         std::to_string(c.sinceUnixMs) + "\nreason " + oneLine(c.reason) + "\n";
}

std::optional<Cordon> decodeCordon(const std::string &value, std::string &why) {
  Cordon c;
  bool by = false, rev = false, since = false, reason = false;
  std::istringstream in(value);
  for (std::string line; std::getline(in, line);) {
    size_t space = line.find(' ');
    std::string field = line.substr(0, space), rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (field == "by" && (rest == "operator" || rest == "policy"))
      c.by = rest, by = true;
    else if (field == "leader-rev" && number(rest, c.leaderRevision) && c.leaderRevision > 0)
      rev = true;
    else if (field == "since-ms" && number(rest, c.sinceUnixMs))
      since = true;
    else if (field == "reason" && oneLine(rest).find_first_not_of(' ') != std::string::npos)
      c.reason = oneLine(rest), reason = true; // a '\r' in it reads as the blank it is written as
    else {
      why = "the line '" + line + "' does not read";
      return std::nullopt;
    }
  }
  if (!by || !rev || !since || !reason) {
    why = std::string("no ") + (!by ? "'by operator|policy'" : !rev ? "'leader-rev N'" : !since ? "'since-ms N'" : "'reason TEXT'") +
          " line";
    return std::nullopt;
  }
  return c;
}

bool isNodeName(const std::string &name, std::string &why) {
  if (!name.empty() && name.size() <= 253 && name.find('/') == std::string::npos &&
      std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127; }))
    return true;
  why = "'" + name + "' is not a node name (printable, without blanks or '/', at most 253 characters)";
  return false;
}

std::string encodeEvents(const std::vector<ContractEvent> &events) {
  std::string out;
  size_t first = events.size() > kContractEventsKept ? events.size() - kContractEventsKept : 0;
  for (size_t i = first; i < events.size(); ++i) {
    std::string text = events[i].text;
    std::replace(text.begin(), text.end(), '\n', ' '); // one line an event
    out += std::to_string(events[i].unixMs) + " " + text + "\n";
  }
  return out;
}

std::vector<ContractEvent> decodeEvents(const std::string &value) {
  std::vector<ContractEvent> events;
  std::istringstream in(value);
  for (std::string line; std::getline(in, line);) {
    size_t space = line.find(' ');
    ContractEvent e;
    if (space == std::string::npos || !number(line.substr(0, space), e.unixMs))
      continue;
    e.text = line.substr(space + 1);
    events.push_back(std::move(e));
  }
  return events;
}

std::string encodeFaults(const std::vector<NodeFault> &faults) {
  std::string out;
  size_t first = faults.size() > kNodeFaultsKept ? faults.size() - kNodeFaultsKept : 0;
  for (size_t i = first; i < faults.size(); ++i)
    out += std::to_string(faults[i].unixMs) + " " + faults[i].id + " " + oneLine(faults[i].text) + "\n";
  return out;
}

std::optional<std::vector<NodeFault>> decodeFaults(const std::string &value, std::string &why) {
  std::vector<NodeFault> faults;
  std::istringstream in(value);
  for (std::string line; std::getline(in, line);) {
    size_t first = line.find(' '), second = first == std::string::npos ? first : line.find(' ', first + 1);
    NodeFault f;
    if (second == std::string::npos || !number(line.substr(0, first), f.unixMs) || f.unixMs < 0 ||
        second == first + 1) {
      why = "the line '" + line + "' is not 'UNIX_MS ID TEXT'";
      return std::nullopt;
    }
    f.id = line.substr(first + 1, second - first - 1);
    f.text = line.substr(second + 1);
    if (!std::all_of(f.id.begin(), f.id.end(), [](char c) { return c > ' ' && c < 127; })) {
      why = "the line '" + line + "' has an ID that is not printable";
      return std::nullopt;
    }
    faults.push_back(std::move(f));
  }
  return faults;
}

std::string encodeConfig(const PublishedConfig &c) { return kConfigHeader + c.writtenBy + "\n" + c.yaml; }

std::optional<PublishedConfig> decodeConfig(const std::string &value, std::string &why) {
  std::string header = kConfigHeader;
  size_t eol = value.find('\n');
  if (value.compare(0, header.size(), header) != 0 || eol == std::string::npos) {
    why = "the value does not start with '" + header + "...'";
    return std::nullopt;
  }
  return PublishedConfig{value.substr(header.size(), eol - header.size()), value.substr(eol + 1)};
}

// A message's bytes with its maps in key order: protobuf's default order of map entries is not
// specified (it follows the hash table), and the same assignment must encode to the same bytes so
// that an agent and the leader can tell a changed one from one written again.
namespace {
std::string deterministicBytes(const google::protobuf::MessageLite &m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}
} // namespace

std::string encodeAssignment(const Assignment &a) {
  proto::Assignment m;
  m.set_format(kAssignmentFormat);
  m.set_leader_revision(a.leaderRevision);
  m.set_plan(a.plan);
  for (const std::string &arg : a.command)
    m.add_command(arg);
  for (const auto &[k, v] : a.environment)
    (*m.mutable_environment())[k] = v;
  if (a.stop) {
    m.mutable_stop()->set_id(a.stop->id);
    m.mutable_stop()->set_cause(a.stop->cause == PlannedStop::Cause::Grow ? proto::PlannedStop::GROW
                                                                          : proto::PlannedStop::DRAIN);
    m.mutable_stop()->set_attempt(a.stop->attempt);
    m.mutable_stop()->set_after_step(a.stop->afterStep);
  }
  return deterministicBytes(m);
}

bool isPlacementVariable(const std::string &name) {
  static const std::set<std::string> kPlacement = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
      "MSCALE_GLOBAL_BATCH", "MSCALE_RANK_BATCH", "MSCALE_MICRO_BATCH", "MSCALE_ACCUMULATION_STEPS",
      "MSCALE_DETERMINISTIC_REDUCTION"};
  return kPlacement.count(name) != 0;
}

bool samePlacedJob(const Assignment &previous, const Assignment &next) {
  if (previous.plan != next.plan || previous.command != next.command)
    return false;
  auto submitted = [](const std::map<std::string, std::string> &environment) {
    std::map<std::string, std::string> out;
    for (const auto &[name, value] : environment)
      if (!isPlacementVariable(name))
        out.emplace(name, value);
    return out;
  };
  return submitted(previous.environment) == submitted(next.environment);
}

std::optional<Assignment> decodeAssignment(const std::string &value, std::string &why) {
  proto::Assignment m;
  if (value.empty() || !m.ParseFromString(value)) {
    why = "not an encoded assignment (" + std::to_string(value.size()) + " bytes)";
    return std::nullopt;
  }
  if (m.format() != kAssignmentFormat) {
    why = "assignment format " + std::to_string(m.format()) + ", this agent reads format " +
          std::to_string(kAssignmentFormat);
    return std::nullopt;
  }
  if (m.leader_revision() <= 0) {
    why = "leader revision " + std::to_string(m.leader_revision()) + " is not positive";
    return std::nullopt;
  }
  if (m.plan().empty()) {
    why = "the assignment carries no plan";
    return std::nullopt;
  }
  Assignment a;
  a.leaderRevision = m.leader_revision();
  a.plan = m.plan();
  a.command.assign(m.command().begin(), m.command().end());
  a.environment.insert(m.environment().begin(), m.environment().end());
  if (m.has_stop()) {
    if (m.stop().id() <= 0 || m.stop().attempt() == 0) {
      why = "its planned stop names id " + std::to_string(m.stop().id()) + " attempt " +
            std::to_string(m.stop().attempt()) + " (both must be positive)";
      return std::nullopt;
    }
    if (!proto::PlannedStop::Cause_IsValid(m.stop().cause())) {
      why = "its planned stop has cause " + std::to_string(m.stop().cause()) + ", which this agent does not know";
      return std::nullopt;
    }
    a.stop = PlannedStop{m.stop().id(), m.stop().attempt(), m.stop().after_step(),
                         m.stop().cause() == proto::PlannedStop::GROW ? PlannedStop::Cause::Grow
                                                                      : PlannedStop::Cause::Drain};
  }
  return a;
}

std::string encodeDrain(const Drain &d) {
  return "leader-rev " + std::to_string(d.leaderRevision) + "\nsince-ms " + std::to_string(d.sinceUnixMs) +
         "\ndeadline-ms " + std::to_string(d.deadlineUnixMs) + "\nforce " + (d.force ? "yes" : "no") + "\nstate " +
         (d.timedOut ? "timed-out" : "draining") + "\n";
}

std::optional<Drain> decodeDrain(const std::string &value, std::string &why) {
  Drain d;
  bool rev = false, since = false, deadline = false, force = false, state = false;
  std::istringstream in(value);
  for (std::string line; std::getline(in, line);) {
    size_t space = line.find(' ');
    std::string field = line.substr(0, space), rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (field == "leader-rev" && number(rest, d.leaderRevision) && d.leaderRevision > 0)
      rev = true;
    else if (field == "since-ms" && number(rest, d.sinceUnixMs) && d.sinceUnixMs >= 0)
      since = true;
    else if (field == "deadline-ms" && number(rest, d.deadlineUnixMs))
      deadline = true;
    else if (field == "force" && (rest == "yes" || rest == "no"))
      d.force = rest == "yes", force = true;
    else if (field == "state" && (rest == "draining" || rest == "timed-out"))
      d.timedOut = rest == "timed-out", state = true;
    else {
      why = "the line '" + line + "' does not read";
      return std::nullopt;
    }
  }
  if (!rev || !since || !deadline || !force || !state) {
    why = std::string("no ") +
          (!rev ? "'leader-rev N'" : !since ? "'since-ms N'" : !deadline ? "'deadline-ms N'" : !force ? "'force yes|no'"
                                                                                           : "'state draining|timed-out'") +
          " line";
    return std::nullopt;
  }
  if (d.deadlineUnixMs < d.sinceUnixMs) {
    why = "its deadline (" + std::to_string(d.deadlineUnixMs) + " ms) is before its start (" +
          std::to_string(d.sinceUnixMs) + " ms)";
    return std::nullopt;
  }
  return d;
}

namespace {
// The lending record's lines, in the order they are written; `optional` marks the lines an older
// agent's record lacks.
struct LendingLine {
  const char *name;
  uint32_t LendingRecord::*field;
  bool optional;
};
constexpr LendingLine kLendingLines[] = {
    {"owners", &LendingRecord::owners, false},
    {"cpus", &LendingRecord::cpus, false},
    {"gpu-units", &LendingRecord::gpuUnits, false},
    {"share-permille", &LendingRecord::sharePermille, false},
    {"lent-cpus", &LendingRecord::lentCpus, false},
    {"rdma-queue-pairs", &LendingRecord::rdmaQueuePairs, true},
    {"gpu-share-permille", &LendingRecord::gpuSharePermille, true},
    {"lent-gpu-units", &LendingRecord::lentGpuUnits, true},
    {"rdma-share-permille", &LendingRecord::rdmaSharePermille, true},
    {"lent-queue-pairs", &LendingRecord::lentQueuePairs, true},
};
} // namespace

std::string encodeLending(const LendingRecord &r) {
  std::string out;
  for (const LendingLine &l : kLendingLines)
    out += std::string(l.name) + " " + std::to_string(r.*l.field) + "\n";
  return out;
}

std::optional<LendingRecord> decodeLending(const std::string &value, std::string &why) {
  LendingRecord r;
  std::set<std::string> seen;
  std::istringstream in(value);
  for (std::string line; std::getline(in, line);) {
    size_t space = line.find(' ');
    std::string field = line.substr(0, space), rest = space == std::string::npos ? "" : line.substr(space + 1);
    auto known = std::find_if(std::begin(kLendingLines), std::end(kLendingLines),
                              [&](const LendingLine &l) { return field == l.name; });
    if (known == std::end(kLendingLines) || !number(rest, r.*known->field) || std::to_string(r.*known->field) != rest) {
      why = "the line '" + line + "' does not read";
      return std::nullopt;
    }
    if (!seen.insert(field).second) {
      why = "the '" + field + "' line is there twice";
      return std::nullopt;
    }
  }
  for (const LendingLine &l : kLendingLines)
    if (!seen.count(l.name) && !l.optional) {
      why = std::string("no '") + l.name + " N' line";
      return std::nullopt;
    }
  if (!seen.count("gpu-share-permille"))
    r.gpuSharePermille = r.sharePermille; // an older agent's: its GPU units were not timed apart
  for (uint32_t share : {r.sharePermille, r.gpuSharePermille, r.rdmaSharePermille})
    if (share > 1000) {
      why = "a share of " + std::to_string(share) + " permille is more than the whole";
      return std::nullopt;
    }
  if (r.owners == 0 && (r.cpus || r.gpuUnits || r.rdmaQueuePairs)) {
    why = "it lends " + std::to_string(r.cpus) + " CPUs, " + std::to_string(r.gpuUnits) + " GPU units and " +
          std::to_string(r.rdmaQueuePairs) + " queue pairs with no owner";
    return std::nullopt;
  }
  return r;
}

bool isContractName(const std::string &name, std::string &why) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || name.size() > 128 || !letter(name[0])) {
    why = "'" + name + "' is not a contract name (a letter or '_', then letters, digits or '_'; at most 128)";
    return false;
  }
  for (char c : name)
    if (!letter(c) && !digit(c)) {
      why = "'" + name + "' is not a contract name (a letter or '_', then letters, digits or '_'; at most 128)";
      return false;
    }
  return true;
}

bool isSubmittedClass(const std::string &name) {
  return name.empty() || name == "guaranteed" || name == "opportunistic";
}

std::string submittedClassProblem(const std::string &submitted, const std::string &own) {
  if (!isSubmittedClass(submitted))
    return "the class is not guaranteed or opportunistic";
  if (!submitted.empty() && !own.empty() && own != submitted)
    return "the contract says class = " + own;
  return {};
}

bool checkSubmission(const Submission &s, std::string &why) {
  if (!isContractName(s.contract, why))
    return false;
  if (!isSubmittedClass(s.contractClass)) {
    why = "class '" + oneLine(s.contractClass) + "' is not guaranteed or opportunistic";
    return false;
  }
  if (s.source.find_first_not_of(" \t\r\n") == std::string::npos) {
    why = "the source is empty";
    return false;
  }
  size_t bytes = s.contract.size() + s.source.size();
  for (const std::string &arg : s.command)
    bytes += arg.size() + 1;
  for (const auto &[k, v] : s.environment) {
    bytes += k.size() + v.size() + 2;
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos || v.find('\0') != std::string::npos) {
      why = "environment variable '" + k + "' is not NAME=VALUE without NUL bytes";
      return false;
    }
  }
  for (const std::string &arg : s.command)
    if (arg.find('\0') != std::string::npos) {
      why = "a command argument holds a NUL byte";
      return false;
    }
  if (!s.command.empty() && s.command.front().empty()) {
    why = "the command's program is empty";
    return false;
  }
  if (bytes > kMaxSubmissionBytes) {
    why = std::to_string(bytes) + " bytes, more than the " + std::to_string(kMaxSubmissionBytes) + " a submission may have";
    return false;
  }
  return true;
}

std::string encodeSubmission(const Submission &s) {
  proto::Submission m;
  m.set_format(kSubmissionFormat);
  m.set_contract(s.contract);
  m.set_source(s.source);
  for (const std::string &arg : s.command)
    m.add_command(arg);
  for (const auto &[k, v] : s.environment)
    (*m.mutable_environment())[k] = v;
  m.set_contract_class(s.contractClass);
  return deterministicBytes(m);
}

std::optional<Submission> decodeSubmission(const std::string &value, std::string &why) {
  proto::Submission m;
  if (value.empty() || !m.ParseFromString(value)) {
    why = "not an encoded submission (" + std::to_string(value.size()) + " bytes)";
    return std::nullopt;
  }
  if (m.format() != kSubmissionFormat) {
    why = "submission format " + std::to_string(m.format()) + ", this controller reads format " +
          std::to_string(kSubmissionFormat);
    return std::nullopt;
  }
  Submission s;
  s.contract = m.contract();
  s.source = m.source();
  s.command.assign(m.command().begin(), m.command().end());
  s.environment.insert(m.environment().begin(), m.environment().end());
  s.contractClass = m.contract_class();
  if (!checkSubmission(s, why))
    return std::nullopt;
  return s;
}

std::string encodeStatus(const AssignmentStatus &s) {
  std::string out = "state " + s.state + "\n";
  if (!s.code.empty())
    out += "code " + s.code + "\n";
  out += "leader-rev " + std::to_string(s.leaderRevision) + "\n";
  out += "worker " + s.worker + "\n";
  if (s.pid)
    out += "pid " + std::to_string(s.pid) + "\n";
  if (s.worker == "exited" || s.worker == "killed")
    out += "exit " + std::to_string(s.exitStatus) + "\n";
  if (s.faults) {
    out += "faults " + std::to_string(s.faults) + "\n";
    out += "last-fault " + oneLine(s.lastFault) + "\n";
  }
  if (s.stop) {
    out += "stop-asked " + std::to_string(s.stop->id) + " " + std::to_string(s.stop->attempt) + "\n";
    out += "stop-step " + std::to_string(s.stop->step) + "\nstop-step-ms " + std::to_string(s.stop->stepMs) + "\n";
    if (s.stop->stoppedAt)
      out += "stopped-at " + std::to_string(s.stop->stoppedAt) + "\n";
    if (s.stop->missedAt)
      out += "stop-missed " + std::to_string(s.stop->missedAt) + "\n";
  }
  for (const std::string &m : s.messages)
    out += "message " + m + "\n";
  return out;
}

std::optional<AssignmentStatus> decodeStatus(const std::string &value) {
  AssignmentStatus s;
  std::istringstream in(value);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    if (sp == std::string::npos)
      return std::nullopt;
    std::string field = line.substr(0, sp), rest = line.substr(sp + 1);
    bool ok = true;
    if (field == "state")
      s.state = rest;
    else if (field == "code")
      s.code = rest;
    else if (field == "leader-rev")
      ok = number(rest, s.leaderRevision);
    else if (field == "worker")
      s.worker = rest;
    else if (field == "pid")
      ok = number(rest, s.pid);
    else if (field == "exit")
      ok = number(rest, s.exitStatus);
    else if (field == "faults")
      ok = number(rest, s.faults) && s.faults >= 0;
    else if (field == "last-fault")
      s.lastFault = rest;
    else if (field == "message")
      s.messages.push_back(rest);
    else if (field == "stop-asked") {
      StopAnswer &a = s.stop.emplace();
      size_t space = rest.find(' ');
      ok = space != std::string::npos && number(rest.substr(0, space), a.id) &&
           number(rest.substr(space + 1), a.attempt) && a.id > 0 && a.attempt > 0;
    } else if (field == "stop-step" || field == "stop-step-ms" || field == "stopped-at" || field == "stop-missed") {
      // The answer's lines follow its "stop-asked" line.
      ok = s.stop && number(rest, field == "stop-step"      ? s.stop->step
                                  : field == "stop-step-ms" ? s.stop->stepMs
                                  : field == "stopped-at"   ? s.stop->stoppedAt
                                                            : s.stop->missedAt);
    }
    if (!ok)
      return std::nullopt;
    // Unknown fields are skipped: a newer agent may say more.
  }
  if (s.state.empty())
    return std::nullopt;
  return s;
}

std::string electionValue(const std::string &name, const std::string &address) {
  return address.empty() ? name : name + " " + address;
}

void parseElectionValue(const std::string &value, std::string &name, std::string &address) {
  size_t space = value.find(' ');
  name = value.substr(0, space);
  address = space == std::string::npos ? std::string() : value.substr(space + 1);
}

} // namespace msc::cluster

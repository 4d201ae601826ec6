// The cluster's key layout and value formats (see Keys.h).
#include "cluster/keys/Keys.h"

#include "cluster/keys/assignment.pb.h"
#include "cluster/keys/submission.pb.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <sstream>

namespace msc::cluster {

namespace {
constexpr const char *kRegistrationHeader = "# mscale node registration; agent ";
constexpr const char *kConfigHeader = "# mscale cluster config; written by ";
constexpr const char *kAddressLine = "# address ";
constexpr const char *kHttpLine = "# http ";

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

std::string encodeRegistration(const Registration &r) {
  // A YAML comment: the value stays one valid YAML document that hal::readTopologyYaml accepts whole.
  return kRegistrationHeader + r.agentVersion + "\n" + (r.address.empty() ? "" : kAddressLine + r.address + "\n") +
         (r.http.empty() ? "" : kHttpLine + r.http + "\n") + r.topologyYaml;
}

bool validNodeAddress(const std::string &address) {
  return !address.empty() && address.size() <= 255 &&
         std::all_of(address.begin(), address.end(), [](char c) { return c > ' ' && c < 127; });
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
  return r;
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

std::string encodeAssignment(const Assignment &a) {
  proto::Assignment m;
  m.set_format(kAssignmentFormat);
  m.set_leader_revision(a.leaderRevision);
  m.set_plan(a.plan);
  for (const std::string &arg : a.command)
    m.add_command(arg);
  for (const auto &[k, v] : a.environment)
    (*m.mutable_environment())[k] = v;
  std::string out;
  m.SerializeToString(&out);
  return out;
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
  return a;
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

bool checkSubmission(const Submission &s, std::string &why) {
  if (!isContractName(s.contract, why))
    return false;
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
  std::string out;
  m.SerializeToString(&out);
  return out;
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
    else if (field == "message")
      s.messages.push_back(rest);
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

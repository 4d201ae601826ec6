// The client side of the agent protocol, for mscale-cli and tests: connect, one request, one
// response; helpers that build each request and print responses for people.
#pragma once

#include "executor/client/Protocol.h"

#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>

namespace msc::exec {

// $MSCALE_AGENT_SOCKET, else /run/mscale/agent.sock.
std::string defaultAgentSocket();

class AgentClient {
public:
  // ERR_EXEC_015 when the agent cannot be reached.
  static std::optional<AgentClient> connect(const std::string &socketPath, DiagnosticEngine &diags);
  AgentClient(AgentClient &&other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }
  ~AgentClient();

  // Sends the request and waits for the response; the response's diagnostics are re-emitted into
  // `diags`. nullopt (ERR_EXEC_015, or the protocol error) when no response arrived.
  std::optional<agent::Response> call(agent::Request request, DiagnosticEngine &diags);

private:
  AgentClient(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  uint64_t nextId_ = 1;
};

agent::Request submitRequest(std::string planBytes, std::string planName, std::vector<std::string> command);
agent::Request statusRequest(const std::string &contract);
agent::Request releaseRequest(const std::string &contract);
agent::Request resizeRequest(const std::string &contract, const std::string &profile);
agent::Request listRequest();
agent::Request loansRequest(bool timeline = false);
agent::Request lookupRequest(const std::string &contract);
agent::Request attachRequest(const std::string &contract, int pid);

// "running", "exited", "killed", "none": the worker state as status, list and metrics print it.
const char *workerStateName(agent::Worker::State s);
void printStatus(const agent::ContractStatus &s, llvm::raw_ostream &os);
void printList(const agent::ListResponse &l, llvm::raw_ostream &os);
// A contract's part in the node's lending (contract status), and the node's loans (node loans).
void printLending(const agent::Lending &l, llvm::raw_ostream &os);
void printLoans(const agent::LoansResponse &r, llvm::raw_ostream &os);
// Where the answer came from and the worker, then the source as submitted.
void printClusterContract(const agent::ClusterContract &c, llvm::raw_ostream &os);

} // namespace msc::exec

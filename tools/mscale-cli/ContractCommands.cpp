// mscale-cli contract status ID | release ID | resize ID --profile NAME | submit PLAN [-- CMD] | list
// Talks to the node agent (mscale-exec serve) through executor/AgentClient.h; this file only parses.
#include "tools/mscale-cli/CommandGroup.h"

#include "executor/AgentClient.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand ContractCmd("contract", "Talk to the node agent: status, release, resize, submit, list");
cl::opt<std::string> Action(cl::Positional, cl::desc("<status|release|resize|submit|list>"), cl::Required,
                            cl::sub(ContractCmd));
cl::list<std::string> Args(cl::Positional, cl::desc("<contract id | plan.msp> [-- worker command]"),
                           cl::sub(ContractCmd));
cl::opt<std::string> Socket("socket", cl::desc("The agent's socket (default: $MSCALE_AGENT_SOCKET or "
                                               "/run/mscale/agent.sock)"),
                            cl::sub(ContractCmd));
cl::opt<std::string> Profile("profile", cl::desc("resize: the profile to resize to"), cl::sub(ContractCmd));

int run() {
  cli::Diagnostics diagnostics;
  DiagnosticEngine &diags = diagnostics.engine();
  std::string socket = Socket.empty() ? exec::defaultAgentSocket() : std::string(Socket);
  auto usage = [&](const std::string &what) {
    diags.report(DiagCode::ERR_DRV_005) << what;
    return 2;
  };
  std::optional<agent::Request> req;
  if (Action == "list") {
    req = exec::listRequest();
  } else if (Action == "status" || Action == "release" || Action == "resize") {
    if (Args.size() != 1)
      return usage("'contract " + Action + "' takes one contract id");
    if (Action == "status")
      req = exec::statusRequest(Args[0]);
    else if (Action == "release")
      req = exec::releaseRequest(Args[0]);
    else if (Profile.empty())
      return usage("'contract resize' needs --profile NAME");
    else
      req = exec::resizeRequest(Args[0], Profile);
  } else if (Action == "submit") {
    if (Args.empty())
      return usage("'contract submit' takes a plan file");
    auto buf = llvm::MemoryBuffer::getFile(Args[0], /*IsText=*/false);
    if (!buf) {
      diags.report(DiagCode::ERR_DRV_001) << Args[0] << buf.getError().message();
      return 2;
    }
    std::vector<std::string> command(Args.begin() + 1, Args.end());
    if (!command.empty() && command.front() == "--")
      command.erase(command.begin());
    req = exec::submitRequest((*buf)->getBuffer().str(), llvm::sys::path::filename(Args[0]).str(), command);
  } else {
    return usage("unknown contract action '" + Action + "' (expected status, release, resize, submit or list)");
  }
  std::optional<exec::AgentClient> client = exec::AgentClient::connect(socket, diags);
  if (!client)
    return 1;
  std::optional<agent::Response> resp = client->call(*req, diags);
  if (!resp || !resp->ok())
    return 1;
  if (resp->has_status())
    exec::printStatus(resp->status(), llvm::outs());
  else if (resp->has_list())
    exec::printList(resp->list(), llvm::outs());
  else if (Action == "release")
    llvm::outs() << "released " << Args[0] << "\n";
  return 0;
}

cli::Registration registration(ContractCmd, run);

} // namespace

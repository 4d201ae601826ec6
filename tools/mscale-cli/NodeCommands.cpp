// mscale-cli node loans [--socket PATH] [--timeline FILE.svg]: what this node lends now, asked of
// its agent (executor/client/AgentClient.h), and what it lent over time as a picture (LoansView.h);
// this file only parses.
#include "tools/mscale-cli/CommandGroup.h"
#include "tools/mscale-cli/LoansView.h"

#include "executor/client/AgentClient.h"
#include "support/Quantity.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand NodeCmd("node", "The node as its agent sees it (loans)");
cl::opt<std::string> Action(cl::Positional, cl::desc("<loans>"), cl::Required, cl::sub(NodeCmd));
cl::opt<std::string> Socket("socket", cl::desc("The agent's socket (default: $MSCALE_AGENT_SOCKET or "
                                               "/run/mscale/agent.sock)"),
                            cl::sub(NodeCmd));
cl::opt<std::string> Timeline("timeline",
                              cl::desc("loans: also draw what the node lent over time (each owner's phases, "
                                       "each CPU's borrower) as an SVG file"),
                              cl::sub(NodeCmd));

int run() {
  cli::Diagnostics d;
  DiagnosticEngine &diags = d.engine();
  if (Action != "loans") {
    diags.report(DiagCode::ERR_DRV_005) << "unknown node action '" + Action + "' (expected loans)";
    return 2;
  }
  std::optional<exec::AgentClient> client =
      exec::AgentClient::connect(Socket.empty() ? exec::defaultAgentSocket() : std::string(Socket), diags);
  if (!client)
    return 1;
  std::optional<agent::Response> resp = client->call(exec::loansRequest(!Timeline.empty()), diags);
  if (!resp || !resp->ok())
    return 1;
  exec::printLoans(resp->loans(), llvm::outs());
  if (Timeline.empty())
    return 0;
  std::error_code ec;
  llvm::raw_fd_ostream svg(Timeline, ec);
  if (ec) {
    diags.report(DiagCode::ERR_DRV_004) << Timeline << ec.message();
    return 2;
  }
  render::TimelineChart chart = cli::loansTimeline(resp->loans());
  render::writeTimelineSvg(chart, svg);
  llvm::outs() << "timeline of the last " << formatMeasuredNs(chart.endNs - chart.startNs) << " ("
               << resp->loans().timeline_size() << " changes) written to " << Timeline << "\n";
  return 0;
}

cli::Registration registration(NodeCmd, run);

} // namespace

// mscale-cli contract status ID [--watch] [--json] | logs ID [--rank R] [--attempt N] [-f]
//                   | release ID | resize ID --profile NAME
//                   | submit PLAN [--check] [-- CMD] | list | lookup ID | attach ID --pid PID
//                   | trace ID [--duration 60s] [--json]
// Talks to the node agent (mscale-exec serve) through executor/client/AgentClient.h, and traces a
// contract's cgroup with bpf/TraceSession.h; this file only parses.
#include "tools/mscale-cli/CommandGroup.h"
#include "tools/mscale-cli/LogsView.h"
#include "tools/mscale-cli/StatusView.h"

#include "bpf/Process.h"
#include "bpf/TraceResults.h"
#include "bpf/TraceSession.h"
#include "cluster/keys/Keys.h"
#include "support/Quantity.h"
#include "driver/Compile.h"
#include "executor/client/AgentClient.h"
#include "plan/PlanFile.h"

#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <map>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand ContractCmd("contract",
                           "Talk to the node agent (status, logs, release, resize, submit, list, lookup, attach); trace");
cl::opt<std::string> Action(cl::Positional, cl::desc("<status|logs|release|resize|submit|list|lookup|attach|trace>"),
                            cl::Required,
                            cl::sub(ContractCmd));
cl::list<std::string> Args(cl::Positional, cl::desc("<contract id | plan.msp> [-- worker command]"),
                           cl::sub(ContractCmd));
cl::opt<std::string> Socket("socket", cl::desc("The agent's socket (default: $MSCALE_AGENT_SOCKET or "
                                               "/run/mscale/agent.sock)"),
                            cl::sub(ContractCmd));
cl::opt<unsigned> Rank("rank", cl::desc("logs: the rank whose output to show (default 0)"), cl::init(0),
                       cl::sub(ContractCmd));
cl::opt<int> Attempt("attempt", cl::desc("logs: the attempt (0 the first run, 1 its first restart, ...; default the newest)"),
                     cl::init(-1), cl::sub(ContractCmd));
cl::opt<bool> Follow("follow", cl::desc("logs: follow the output as it is written, and the next attempts, like tail -f"),
                     cl::sub(ContractCmd));
cl::alias FollowShort("f", cl::desc("Alias for --follow"), cl::aliasopt(Follow));
cl::opt<std::string> Profile("profile", cl::desc("resize: the profile to resize to"), cl::sub(ContractCmd));
cl::opt<std::string> ContractFile("contract",
                                  cl::desc("resize: the contract file (default: the one the running plan was "
                                           "compiled from)"),
                                  cl::sub(ContractCmd));
cl::list<std::string> IncludeDirs("I", cl::desc("resize: import search directory"), cl::Prefix, cl::sub(ContractCmd));
cl::opt<std::string> TopologyArg("topology", cl::desc("resize: compile against this topology (default: live)"),
                                 cl::init("live"), cl::sub(ContractCmd));
cl::opt<std::string> StdlibDir("stdlib", cl::desc("resize: standard library directory"), cl::sub(ContractCmd));
cl::opt<std::string> Duration("duration", cl::desc("trace: how long to trace (e.g. 500ms, 60s, 2min)"),
                              cl::init("60s"), cl::sub(ContractCmd));
cl::opt<bool> Check("check", cl::desc("submit: only re-check the plan against the node and what its agent holds; "
                                      "apply nothing"),
                    cl::sub(ContractCmd));
cl::opt<int> Pid("pid", cl::desc("attach: the process to move into the contract (its cgroups and CPUs)"),
                 cl::init(0), cl::sub(ContractCmd));
cl::opt<bool> Json("json", cl::desc("trace, status: print the results as JSON"), cl::sub(ContractCmd));
cl::opt<bool> Watch("watch", cl::desc("status: redraw in place like top until Ctrl-C (with --json: one object per line)"),
                    cl::sub(ContractCmd));
cl::opt<std::string> Interval("interval", cl::desc("status --watch: time between refreshes (default 2s)"),
                              cl::init("2s"), cl::sub(ContractCmd));
cl::opt<unsigned> Count("count", cl::desc("status --watch: stop after this many refreshes (default: until Ctrl-C)"),
                        cl::sub(ContractCmd));

// The source of a contract the cluster assigned to this node, asked of the agent (which caches it for
// agents.contract_cache_ttl), in a file of its own under `dir`: the plan's source file is the
// controller's, on another machine.
std::optional<std::string> clusterSource(exec::AgentClient &client, const std::string &contract,
                                         const std::string &dir, DiagnosticEngine &diags) {
  std::optional<agent::Response> found = client.call(exec::lookupRequest(contract), diags);
  if (!found || !found->ok())
    return std::nullopt;
  std::string path = dir + "/" + contract + ".msc";
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (!ec) {
    out << found->contract().source();
    out.close();
    ec = out.error();
  }
  if (ec) {
    diags.report(DiagCode::ERR_DRV_004) << path << ec.message();
    return std::nullopt;
  }
  return path;
}

// A resize to another profile: the contract compiled anew on it, against this node, as mscalec
// would. The agent re-checks it against the other contracts it admitted and hands the slices over.
std::optional<std::string> compileOnProfile(const agent::ContractStatus &status, exec::AgentClient &client,
                                            cli::Diagnostics &diagnostics) {
  DiagnosticEngine &diags = diagnostics.engine();
  driver::CompileOptions options;
  options.useCache = true;
  options.inputs = {ContractFile.empty() ? status.source_file() : std::string(ContractFile)};
  // A contract the cluster assigned (the ledger names it by its assignment key) is compiled from its
  // submission, unless --contract says otherwise.
  llvm::SmallString<64> scratch;
  auto removeScratch = llvm::make_scope_exit([&] {
    if (!scratch.empty())
      llvm::sys::fs::remove_directories(scratch);
  });
  if (ContractFile.empty() && llvm::StringRef(status.plan_name()).starts_with(cluster::kAssignmentsPrefix)) {
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("mscale-resize", scratch)) {
      diags.report(DiagCode::ERR_DRV_004) << "a temporary directory" << ec.message();
      return std::nullopt;
    }
    std::optional<std::string> source = clusterSource(client, status.contract(), scratch.str().str(), diags);
    if (!source)
      return std::nullopt;
    options.inputs = {*source};
  }
  options.includeDirs = IncludeDirs;
  options.stdlibDir = StdlibDir;
  options.profileOverride = Profile;
  options.onlyContract = status.contract();
  options.stage = driver::EmitStage::Plan;
  options.topology = TopologyArg;
  driver::CompileResult result = driver::compile(options, diagnostics.sourceMgr(), diags);
  if (diags.hasErrors())
    return std::nullopt;
  if (result.plans.empty()) {
    diags.report(DiagCode::ERR_EXEC_019) << status.contract() << std::string(Profile)
                                         << "'" + options.inputs.front() +
                                                "' has no contract of that name (use --contract FILE)";
    return std::nullopt;
  }
  return plan::encodePlan(result.plans.front());
}

// Traces the contract's processes through the cgroup the executor made for them.
int traceContract(const std::string &id, DiagnosticEngine &diags) {
  std::optional<uint64_t> duration = parseDurationNs(Duration);
  if (!duration) {
    diags.report(DiagCode::ERR_DRV_005) << ("--duration=" + Duration + " (expected e.g. 500ms, 60s, 2min)");
    return 2;
  }
  std::string mount = trace::cgroup2Mount();
  bool exists = false;
  std::string path = trace::contractCgroupPath(id, mount.empty() ? "/sys/fs/cgroup" : mount, exists);
  if (!exists) {
    diags.report(DiagCode::ERR_TRACE_006) << id << path;
    return 1;
  }
  trace::TraceOptions options;
  options.cgroupPath = path;
  options.duration = std::chrono::nanoseconds(*duration);
  std::optional<trace::TraceResults> results = trace::runTrace(options, diags);
  if (!results)
    return 1;
  if (Json)
    trace::writeJson(*results, llvm::outs());
  else
    trace::writeText(*results, llvm::outs(), /*histograms=*/true);
  return 0;
}

int run() {
  cli::Diagnostics diagnostics;
  DiagnosticEngine &diags = diagnostics.engine();
  std::string socket = Socket.empty() ? exec::defaultAgentSocket() : std::string(Socket);
  auto usage = [&](const std::string &what) {
    diags.report(DiagCode::ERR_DRV_005) << what;
    return 2;
  };
  std::optional<agent::Request> req;
  if (Action == "trace") {
    if (Args.size() != 1)
      return usage("'contract trace' takes one contract id");
    return traceContract(Args[0], diags);
  }
  if (Action == "status" && Args.size() == 1) {
    cli::StatusViewOptions view{socket, Args[0], Json, Watch, {}, std::nullopt};
    std::optional<uint64_t> every = parseDurationNs(Interval);
    if (!every || *every < 100'000'000)
      return usage("--interval=" + Interval + " (expected at least 100ms, e.g. 2s)");
    view.interval = std::chrono::nanoseconds(*every);
    if (Count.getNumOccurrences())
      view.count = Count;
    return cli::showStatus(view, diags);
  }
  if (Action == "logs") {
    if (Args.size() != 1)
      return usage("'contract logs' takes one contract id");
    if (Attempt < -1)
      return usage("--attempt " + std::to_string(Attempt) + ": an attempt is 0 or more");
    cli::LogsViewOptions view{socket, Args[0], Rank, std::nullopt, Follow};
    if (Attempt >= 0)
      view.attempt = uint32_t(Attempt);
    return cli::showLogs(view, diags);
  }
  if (Action == "list") {
    req = exec::listRequest();
  } else if (Action == "lookup") {
    if (Args.size() != 1)
      return usage("'contract lookup' takes one contract name");
    req = exec::lookupRequest(Args[0]);
  } else if (Action == "attach") {
    if (Args.size() != 1)
      return usage("'contract attach' takes one contract id");
    req = exec::attachRequest(Args[0], Pid);
  } else if (Action == "status" || Action == "release" || Action == "resize") {
    if (Args.size() != 1)
      return usage("'contract " + Action + "' takes one contract id");
    if (Action == "status")
      req = exec::statusRequest(Args[0]);
    else if (Action == "release")
      req = exec::releaseRequest(Args[0]);
    else if (Profile.empty())
      return usage("'contract resize' needs --profile NAME");
    else {
      // First the running contract's source, then the new plan, then the resize itself.
      std::optional<exec::AgentClient> client = exec::AgentClient::connect(socket, diags);
      if (!client)
        return 1;
      std::optional<agent::Response> status = client->call(exec::statusRequest(Args[0]), diags);
      if (!status || !status->ok())
        return 1;
      std::optional<std::string> planBytes = compileOnProfile(status->status(), *client, diagnostics);
      if (!planBytes)
        return 1;
      req = exec::resizeRequest(Args[0], Profile);
      req->mutable_resize()->set_plan(*planBytes);
      req->mutable_resize()->set_plan_name(Args[0] + "@" + std::string(Profile));
    }
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
    req->mutable_submit()->set_check_only(Check);
  } else {
    return usage("unknown contract action '" + Action +
                 "' (expected status, logs, release, resize, submit, list, lookup, attach or trace)");
  }
  std::optional<exec::AgentClient> client = exec::AgentClient::connect(socket, diags);
  if (!client)
    return 1;
  std::optional<agent::Response> resp = client->call(*req, diags);
  if (!resp || !resp->ok())
    return 1;
  if (resp->has_attachment()) { // what the attached process's environment needs
    const agent::Attachment &a = resp->attachment();
    for (auto &[k, v] : std::map<std::string, std::string>(a.environment().begin(), a.environment().end()))
      llvm::outs() << k << "=" << v << "\n";
    // "fd NAME PATH DEV:INO": a descriptor of the agent, for root to take into the process and name
    // NAME, and the file it named when the agent answered (the taker checks it: slurm/AgentDescriptors.h).
    for (const agent::HandedFd &fd : a.fds())
      llvm::outs() << "fd " << fd.variable() << " /proc/" << a.agent_pid() << "/fd/" << fd.agent_fd() << " "
                   << fd.device() << ":" << fd.inode() << "\n";
  } else if (resp->has_status())
    exec::printStatus(resp->status(), llvm::outs());
  else if (resp->has_list())
    exec::printList(resp->list(), llvm::outs());
  else if (resp->has_contract())
    exec::printClusterContract(resp->contract(), llvm::outs());
  else if (Action == "release")
    llvm::outs() << "released " << Args[0] << "\n";
  else if (Check)
    llvm::outs() << "the node can honour " << Args[0] << " (checked only, nothing applied)\n";
  return 0;
}

cli::Registration registration(ContractCmd, run);

} // namespace

#include "tools/mscale-cli/StatusView.h"

#include "executor/claims/NodeClaims.h"
#include "executor/client/AgentClient.h"
#include "support/Clock.h"
#include "support/Units.h"

#include <google/protobuf/util/json_util.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <csignal>
#include <ctime>
#include <thread>

namespace msc::cli {

namespace {

std::atomic<bool> gInterrupted{false};
void onInterrupt(int) { gInterrupted = true; }

std::string toJson(const agent::ContractStatus &s) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true; // a zero is a measurement too: scripts should see it
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(s, &out, o);
  return out;
}

// Waits up to `d`, returning early (true) on SIGINT.
bool sleepInterruptible(std::chrono::nanoseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (!gInterrupted && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(50),
                                                                   until - std::chrono::steady_clock::now()));
  return gInterrupted;
}

} // namespace

int showStatus(const StatusViewOptions &options, DiagnosticEngine &diags) {
  llvm::raw_ostream &os = llvm::outs();
  if (options.watch) {
    // Without SA_RESTART, so a blocked read returns and the loop sees the flag at once.
    struct sigaction sa {};
    sa.sa_handler = onInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }
  // A contract `mscale-exec run` holds is in the node's ledger, not in an agent: said from there.
  for (const exec::NodeClaim &claim : exec::NodeClaims::look(exec::NodeClaims::dirFor(options.claimsDir)))
    if (claim.contract == options.contract && claim.holder != "mscale-exec serve") {
      const plan::Provenance &p = claim.plan.provenance();
      if (options.json) {
        os << llvm::formatv("{0}", llvm::json::Value(llvm::json::Object{{"contract", claim.contract},
                                                       {"holder", claim.holder},
                                                       {"pid", int64_t(claim.pid)},
                                                       {"since_unix_ms", claim.sinceUnixMs},
                                                       {"profile", p.profile()},
                                                       {"plan", exec::NodeClaims::dirFor(options.claimsDir) + "/" +
                                                                    claim.contract + ".msp"}}))
           << "\n";
        return 0;
      }
      os << "contract " << claim.contract << "\n"
         << "  held by    " << claim.holder << ", pid " << claim.pid << ", since " << formatUtcMs(claim.sinceUnixMs)
         << "\n"
         << "  profile    " << p.profile() << "\n"
         << "  plan       " << exec::NodeClaims::dirFor(options.claimsDir) << "/" << claim.contract
         << ".msp (mscale-plan dump shows what it holds)\n"
         << "  worker     supervised by that mscale-exec run: its log says how it runs\n";
      return 0;
    }
  for (unsigned round = 1;; ++round) {
    std::optional<exec::AgentClient> client = exec::AgentClient::connect(options.socket, diags);
    if (!client)
      return gInterrupted ? 0 : 1;
    std::optional<agent::Response> resp = client->call(exec::statusRequest(options.contract), diags);
    if (!resp || !resp->ok())
      return gInterrupted ? 0 : 1;
    if (options.json) {
      os << toJson(resp->status()) << "\n";
    } else {
      if (options.watch) {
        // Home and clear, then the frame: redrawn in place, as top does.
        os << "\x1b[H\x1b[2J";
        auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
        os << "mscale-cli contract status " << options.contract << "   " << formatUtcMs(now) << "   every "
           << formatDuration(Nanoseconds{uint64_t(options.interval.count())}) << " (Ctrl-C quits)\n\n";
      }
      exec::printStatus(resp->status(), os);
    }
    os.flush();
    if (!options.watch || (options.count && round >= *options.count))
      return 0;
    if (sleepInterruptible(options.interval))
      return 0;
  }
}

} // namespace msc::cli

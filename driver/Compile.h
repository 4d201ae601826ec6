// The compile pipeline as one library call, as CIRCT's firtool library is to its tool: contract
// files in, plans (or the AST/IR text) and diagnostics out. It owns what every caller would
// otherwise repeat: the stdlib lookup, the node's topology, the admitted plans, the pass pipeline,
// the stage order (frontend, verify, place, claims, passes, lower) and the version stamped into
// plans. mscalec and mscale-cli are thin mains over it.
#pragma once

#include "hal/Topology.h"
#include "ir/IR.h"
#include "plan/plan.pb.h"
#include "support/Diagnostic.h"

#include <llvm/Support/raw_ostream.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace msc::driver {

// How far the pipeline runs: one ordered value, not a web of flags.
enum class EmitStage { Ast, Ir, Plan };

struct CompileOptions {
  std::vector<std::string> inputs;       // contract files
  // Files held in memory, by the path an input or an import names them with (a submission a
  // controller received): read before the file system, so no caller writes a scratch file.
  std::map<std::string, std::string> memoryFiles;
  std::vector<std::string> includeDirs;  // -I
  std::string stdlibDir;                 // empty: defaultStdlibDir()
  std::string profileOverride;           // compile on this profile instead of the one named
  std::string onlyContract;              // compile only this contract of the inputs (and apply
                                         // profileOverride to it alone)
  std::string defaultClass;              // FrontendOptions::defaultClass
  EmitStage stage = EmitStage::Ir;
  std::string topology;                  // "live", a file or a directory; empty: no node
  std::string passes;                    // "a,b": only these passes; empty: the default pipeline
  std::vector<std::string> admittedPlanFiles; // plans already admitted on the node
  std::vector<std::string> printAfter;   // pass names or "all"
  bool timePasses = false;
  // The content cache of the environment (support/ContentCache.h: lexed files, converted hwloc
  // XML) is used; the tools turn it on, so benchmarks and tests measure the uncached work.
  bool useCache = false;
  llvm::raw_ostream *instrumentation = nullptr; // where --print-after and --time-passes write
};

struct CompileResult {
  std::vector<plan::Plan> plans; // EmitStage::Plan: one per accepted contract, in source order
  std::string text;              // EmitStage::Ast / Ir: the printed form
  // The topology, the pass list or an admitted plan could not be used: nothing was compiled.
  bool setupFailed = false;
};

// Every problem is a diagnostic in `diags`; the result holds what was produced. Plans are
// produced only when no contract had an error.
CompileResult compile(const CompileOptions &options, llvm::SourceMgr &sm, DiagnosticEngine &diags);

// The frontend alone (parse, sema, profile resolution, IR verification) over options.inputs: what
// a caller that checks one contract against many nodes (cluster/placement) runs once, then hands
// each node's check the IR. Returns nullopt after any error.
std::optional<ir::Module> loadContracts(const CompileOptions &options, llvm::SourceMgr &sm, DiagnosticEngine &diags);

// The tools' exit status after a compile: 0 accepted, 1 the input has errors, 2 a usage or I/O
// error (an unreadable file, a bad option, a topology or admitted plan that did not load).
enum ExitStatus { kAccepted = 0, kContractErrors = 1, kUsageOrIo = 2 };
ExitStatus exitStatusOf(const CompileResult &result, const DiagnosticEngine &diags);

// $MSCALE_STDLIB, else the installed share/megascale/stdlib beside bin/, else the source tree's.
std::string defaultStdlibDir();

} // namespace msc::driver

// The frontend's public face: a contract file (and what it imports) in, a verified IR module out.
#pragma once

#include "compiler/AST.h"
#include "compiler/Parser.h"
#include "ir/IR.h"
#include "support/Diagnostic.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace msc {

struct FrontendOptions {
  std::vector<std::string> includeDirs; // -I, searched after the importing file's directory
  std::string stdlibDir;                // searched last; holds profiles/*.msc
  ParseLimits limits;
  // Where lexed files are kept by their bytes (support/ContentCache.h); null: every file is lexed.
  const ContentCache *cache = nullptr;
  // Compile every contract on this profile instead of the one it names ('uses profile X'): what a
  // resize to another profile (`mscale-cli contract resize --profile`, `mscalec --profile`) needs.
  std::string profileOverride;
  std::string profileOverrideContract; // only this contract (empty: every contract of the file)
  // The class (`class = ...`) a contract that says none takes, "" for none: how a submission sent
  // with `mscale-cli cluster submit --class opportunistic` becomes a borrower before it is checked.
  // Applies to profileOverrideContract alone when that is set. A class line of its own stands.
  std::string defaultClass;
  // Files that exist in memory only, by the path they are read as (a submission a controller
  // received); looked up before the file system, for the main file and for imports. Null: none.
  const std::map<std::string, std::string> *memoryFiles = nullptr;
};

// Everything the frontend read: the files (main file first) and their ASTs.
struct SourceSet {
  std::vector<std::unique_ptr<ast::File>> files;
  uint64_t hash = 0; // FNV-1a over every file's bytes, in load order
};

// Loads `path` and, transitively, its imports into `sm`. Reports unreadable files, syntax
// errors, missing imports and import cycles. Returns null if the main file could not be read.
std::unique_ptr<SourceSet> loadSources(llvm::StringRef path, const FrontendOptions &options, llvm::SourceMgr &sm,
                                       DiagnosticEngine &diags);

// Type-checks the ASTs and resolves profiles into an IR module. Contracts come from the main
// file only; profiles from every file. Returns nullopt if any error was reported.
// `profileOverride`, `onlyContract`, `defaultClass`: FrontendOptions' profileOverride,
// profileOverrideContract, defaultClass.
std::optional<ir::Module> buildModule(const SourceSet &sources, DiagnosticEngine &diags,
                                      llvm::StringRef profileOverride = {}, llvm::StringRef onlyContract = {},
                                      llvm::StringRef defaultClass = {});

// loadSources + buildModule + ir::verify.
std::optional<ir::Module> compileContractFile(llvm::StringRef path, const FrontendOptions &options,
                                              llvm::SourceMgr &sm, DiagnosticEngine &diags);

} // namespace msc

// The parser facade: source text in, AST out. The only door to the generated ANTLR parser.
#pragma once

#include "compiler/AST.h"
#include "support/ContentCache.h"
#include "support/Diagnostic.h"

#include <memory>

namespace llvm {
class SourceMgr;
}

namespace msc {

struct ParseLimits {
  size_t maxBytes = 16u << 20; // contracts are small; anything bigger is not a contract
  unsigned maxNesting = 64;    // blocks + lists + calls; keeps hostile input off the stack
};

// Parses the SourceMgr buffer `bufferId`. Lexical and syntax errors are reported to `diags`
// (several per file: the parser recovers). Returns null when the input could not be parsed.
// With a `cache`, a file lexed before by this build takes its tokens from it (compiler/TokenCache.h)
// and a file parsed without a problem leaves its tokens there.
std::unique_ptr<ast::File> parseContract(unsigned bufferId, llvm::SourceMgr &sm, DiagnosticEngine &diags,
                                         const ParseLimits &limits = {}, const ContentCache *cache = nullptr);

// Checks raw bytes before they are parsed: size, NUL bytes, UTF-8. Reports and returns false on
// the first problem. `where` names the file for file-level diagnostics.
bool checkSourceBytes(llvm::StringRef bytes, llvm::StringRef where, DiagnosticEngine &diags,
                      const ParseLimits &limits = {});

} // namespace msc

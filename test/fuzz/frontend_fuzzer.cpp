// libFuzzer target: arbitrary bytes through the whole frontend (checks, lexer, parser, AST, IR).
#include "compiler/Frontend.h"
#include "ir/IR.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sm;
  msc::CollectingConsumer consumer;
  msc::DiagnosticEngine diags(&sm, consumer);
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.msc");
  unsigned id = sm.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  msc::SourceSet sources;
  if (auto file = msc::parseContract(id, sm, diags)) {
    sources.files.push_back(std::move(file));
    if (auto module = msc::buildModule(sources, diags)) {
      // A module the frontend accepts must satisfy the IR's invariants.
      if (!msc::ir::verify(*module).empty())
        abort();
      std::string text;
      llvm::raw_string_ostream os(text);
      msc::ir::print(*module, os);
    }
  }
  // Every diagnostic must resolve to a location inside the input or to none.
  for (const msc::Diagnostic &d : consumer.diags)
    (void)msc::resolve(d.loc, &sm);
  return 0;
}

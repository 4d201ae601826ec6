// The contract AST: what the user wrote, with a source range on every node. Built from the
// parse tree by AstBuilder; nothing after the frontend sees this, only the IR.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace msc::ast {

struct Value;
using ValuePtr = std::unique_ptr<Value>;

struct Argument {
  std::string name; // empty for positional arguments
  llvm::SMRange nameRange;
  ValuePtr value;
};

struct Value {
  enum class Kind { Number, String, Bool, PciAddress, List, Range, Call, Ident };
  Kind kind;
  llvm::SMRange range;
  std::string text;     // Number: digits as written; String: unescaped; PciAddress, Ident: as written
  std::string unit;     // Number: unit suffix ("MiB", "C", "%", "steps"), empty when none
  llvm::SMRange unitRange;
  bool boolean = false; // Bool
  std::string lowText, highText; // Range: both ends as written
  llvm::SMRange lowRange, highRange;
  std::string lowUnit, highUnit;  // Range: each end's unit ("min" of 37min..42min), empty when none
  llvm::SMRange lowUnitRange, highUnitRange;
  std::vector<ValuePtr> elements; // List
  std::string callee;             // Call
  std::vector<Argument> arguments;

  static llvm::StringRef kindName(Kind kind);
};

struct Assignment {
  std::string field;
  llvm::SMRange fieldRange;
  ValuePtr value;
  llvm::SMRange range;
};

struct Block;
struct Section {
  std::string name;
  llvm::SMRange nameRange;
  std::unique_ptr<Block> body;
};

struct Member {
  // Exactly one is set.
  std::unique_ptr<Assignment> assignment;
  std::unique_ptr<Section> section;
};

struct Block {
  llvm::SMRange range;
  std::vector<Member> members;
};

struct Declaration {
  enum class Kind { Profile, Contract };
  Kind kind;
  std::string name;
  llvm::SMRange nameRange;
  std::string base; // profile: `extends`; contract: `uses profile`; may be empty
  llvm::SMRange baseRange;
  Block body;
  llvm::SMRange range;
};

struct Import {
  std::string path;
  llvm::SMRange range;
};

struct File {
  std::string path;
  std::vector<Import> imports;
  std::vector<std::unique_ptr<Declaration>> declarations;
};

// `--emit=ast`: an indented tree, one node per line, with line:col of each node.
void dump(const File &file, const llvm::SourceMgr &sm, llvm::raw_ostream &os);

} // namespace msc::ast

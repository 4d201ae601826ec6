#include "compiler/AST.h"

#include <llvm/Support/SourceMgr.h>

namespace msc::ast {

llvm::StringRef Value::kindName(Kind kind) {
  switch (kind) {
  case Kind::Number: return "Number";
  case Kind::String: return "String";
  case Kind::Bool: return "Bool";
  case Kind::PciAddress: return "PciAddress";
  case Kind::List: return "List";
  case Kind::Range: return "Range";
  case Kind::Call: return "Call";
  case Kind::Ident: return "Ident";
  }
  return "Value";
}

namespace {

class Dumper {
public:
  Dumper(const llvm::SourceMgr &sm, llvm::raw_ostream &os) : sm_(sm), os_(os) {}

  void file(const File &f) {
    os_ << "File " << f.path << "\n";
    for (const Import &i : f.imports) {
      head(1, "Import", i.range) << " \"" << i.path << "\"\n";
    }
    for (const auto &d : f.declarations) {
      bool profile = d->kind == Declaration::Kind::Profile;
      head(1, profile ? "Profile" : "Contract", d->nameRange) << " " << d->name;
      if (!d->base.empty())
        os_ << (profile ? " extends " : " uses ") << d->base;
      os_ << "\n";
      block(d->body, 2);
    }
  }

private:
  llvm::raw_ostream &head(unsigned depth, llvm::StringRef what, llvm::SMRange range) {
    os_.indent(depth * 2) << what << " <";
    if (range.isValid()) {
      auto [line, col] = sm_.getLineAndColumn(range.Start);
      os_ << line << ":" << col;
    }
    return os_ << ">";
  }

  void block(const Block &b, unsigned depth) {
    for (const Member &m : b.members) {
      if (m.assignment) {
        head(depth, "Assign", m.assignment->fieldRange) << " " << m.assignment->field << "\n";
        value(*m.assignment->value, depth + 1);
      } else {
        head(depth, "Section", m.section->nameRange) << " " << m.section->name << "\n";
        block(*m.section->body, depth + 1);
      }
    }
  }

  void value(const Value &v, unsigned depth) {
    head(depth, Value::kindName(v.kind), v.range);
    switch (v.kind) {
    case Value::Kind::Number: os_ << " " << v.text << (v.unit.empty() ? "" : " unit=") << v.unit << "\n"; break;
    case Value::Kind::String: os_ << " \"" << v.text << "\"\n"; break;
    case Value::Kind::Bool:
    case Value::Kind::PciAddress:
    case Value::Kind::Ident: os_ << " " << v.text << "\n"; break;
    case Value::Kind::Range:
      os_ << " " << v.lowText << v.lowUnit << ".." << v.highText << v.highUnit << "\n";
      break;
    case Value::Kind::List:
      os_ << "\n";
      for (const auto &e : v.elements)
        value(*e, depth + 1);
      break;
    case Value::Kind::Call:
      os_ << " " << v.callee << "\n";
      for (const Argument &a : v.arguments) {
        if (!a.name.empty())
          head(depth + 1, "Arg", a.nameRange) << " " << a.name << "\n";
        value(*a.value, depth + (a.name.empty() ? 1 : 2));
      }
      break;
    }
  }

  const llvm::SourceMgr &sm_;
  llvm::raw_ostream &os_;
};

} // namespace

void dump(const File &file, const llvm::SourceMgr &sm, llvm::raw_ostream &os) { Dumper(sm, os).file(file); }

} // namespace msc::ast

// The contract language's fields as data (from Fields.def), for reference output and tools.
#pragma once

#include "ir/IR.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

namespace msc::ir {

struct FieldSchema {
  llvm::StringRef section; // "contract/profile", "io_topology.<role>", "fault_tolerance", ...
  llvm::StringRef name;
  FieldKind kind;
  int64_t min, max;
  llvm::StringRef choices;
  llvm::StringRef doc;
};

llvm::ArrayRef<FieldSchema> allFields();
// A Markdown table of every field (`mscalec --list-fields`).
void printFieldReference(llvm::raw_ostream &os);

} // namespace msc::ir

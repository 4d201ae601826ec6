// The contract language's fields as data (from Fields.def), for reference output and tools.
#pragma once

#include "ir/FieldDefaults.h"
#include "ir/IR.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <string>

namespace msc::ir {

struct FieldSchema {
  llvm::StringRef section; // "contract/profile", "io_topology.<role>", "fault_tolerance", ...
  llvm::StringRef name;
  FieldKind kind;
  int64_t min, max;
  llvm::StringRef choices;
  int64_t defaultValue; // normalised (Fields.def); kNoDefault when there is none
  llvm::StringRef doc;
};

llvm::ArrayRef<FieldSchema> allFields();

// A kind's name for tools ("int", "duration", "cpus", ...): the vocabulary of --list-fields=json.
llvm::StringRef fieldKindId(FieldKind kind);
// The default as the language writes it ("200ms", "70C", "15%", "true"); empty when there is none.
std::string formatDefault(const FieldSchema &field);

// A Markdown table of every field (`mscalec --list-fields`).
void printFieldReference(llvm::raw_ostream &os);
// The same as JSON, for tools (`mscalec --list-fields=json`): an array of
// {section, name, kind, description, min?, max?, choices?, default?, default_value?, doc}.
void printFieldReferenceJson(llvm::raw_ostream &os);

} // namespace msc::ir

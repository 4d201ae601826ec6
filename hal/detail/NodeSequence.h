// A cluster description cut into the text of each node, by lines and before any YAML parse, so that
// the reader parses each distinct node once and lets nodes that differ only in name share it
// (readClusterYaml). Internal to hal/.
//
// Only the layout the writer produces and people write is cut: comments, one `cluster:` line and a
// `nodes:` block sequence that runs to the end of the document, with lines ending in '\n' alone (no
// carriage return, which YAML also takes as a line break). Anything else is not cut, and the
// reader parses the whole document as one. A cut is a guess about the structure that parsing then
// checks: each piece must parse alone, and a line taken wrongly as the start of an item leaves the
// item before it unterminated (an open quote, bracket or flow mapping), which fails its parse.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <vector>

namespace msc::hal::detail {

// An item that starts "- name: VALUE" with a plain or quoted VALUE that its line ends, and whose next
// line is indented as the item's keys are (so VALUE cannot run on into it). Two items with equal
// `rest` differ only in their first line; whether they describe the same machine under two names
// is for the reader to check (`rest` must not set the name again).
struct NamedItem {
  llvm::StringRef firstLine; // "  - name: n1\n", as it is in the text
  llvm::StringRef rest;      // the lines after it
};

struct NodeText {
  // The item's lines: "  - name: n1\n    packages: ..." up to the next item's first line.
  llvm::StringRef item;
  std::optional<NamedItem> named;
};

struct NodeSequence {
  llvm::StringRef head; // the lines before the first item: comments, `cluster:`, `nodes:`
  std::vector<NodeText> nodes;
};

std::optional<NodeSequence> cutNodeSequence(llvm::StringRef text);

} // namespace msc::hal::detail

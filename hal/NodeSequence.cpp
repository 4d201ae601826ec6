// Cutting a cluster description into its nodes by lines (see detail/NodeSequence.h for what is cut
// and why a wrong cut cannot go unnoticed).
#include "hal/detail/NodeSequence.h"

#include <llvm/ADT/StringExtras.h>

namespace msc::hal::detail {
namespace {

constexpr size_t npos = llvm::StringRef::npos;

size_t indentOf(llvm::StringRef line) { return line.find_first_not_of(' '); }

bool isBlankOrComment(llvm::StringRef line) {
  size_t i = indentOf(line);
  return i == npos || line[i] == '#';
}

// `key:` alone at the start of a line, perhaps followed by a comment.
bool isBareKey(llvm::StringRef line, llvm::StringRef key) {
  if (!line.consume_front(key) || !line.consume_front(":"))
    return false;
  if (line.empty())
    return true;
  return line.front() == ' ' && (line.ltrim(' ').empty() || line.ltrim(' ').front() == '#');
}

// Splits `text` into lines without their '\n', remembering where each begins.
struct Line {
  llvm::StringRef text;
  size_t begin;
};
std::vector<Line> linesOf(llvm::StringRef text) {
  std::vector<Line> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == npos ? text.size() : nl;
    out.push_back(Line{text.slice(pos, end), pos});
    pos = end + 1;
  }
  return out;
}

// NamedItem's conditions. VALUE must start as a name does (a letter, a digit, one of "_./", or a
// quote): no tag, anchor, alias, block scalar, flow collection or indicator.
void findName(NodeText &node, size_t keyIndent) {
  size_t nl = node.item.find('\n');
  llvm::StringRef first = node.item.substr(0, nl == npos ? npos : nl + 1);
  llvm::StringRef rest = node.item.drop_front(first.size());
  llvm::StringRef key = first.drop_front(keyIndent);
  if (!key.starts_with("name: "))
    return;
  llvm::StringRef value = key.drop_front(6).ltrim(' ');
  if (value.empty() || !(llvm::isAlnum(value.front()) || llvm::StringRef("_./\"'").contains(value.front())))
    return;
  if (!rest.empty() && (indentOf(rest) != keyIndent || llvm::StringRef(" \t\n").contains(rest[keyIndent])))
    return;
  node.named = NamedItem{first, rest};
}

} // namespace

std::optional<NodeSequence> cutNodeSequence(llvm::StringRef text) {
  // YAML breaks lines at a carriage return too; lines here are split at '\n' alone.
  if (text.contains('\r'))
    return std::nullopt;
  std::vector<Line> lines = linesOf(text);
  size_t i = 0;
  // The head: comments, a document start, `cluster:` (its value is checked when the head is
  // parsed) and finally `nodes:`.
  bool content = false, sawNodes = false;
  for (; i < lines.size() && !sawNodes; ++i) {
    llvm::StringRef line = lines[i].text;
    if (isBlankOrComment(line))
      continue;
    if (line.rtrim(' ') == "---" && !content)
      continue;
    if (line.starts_with("cluster:"))
      content = true;
    else if (isBareKey(line, "nodes"))
      sawNodes = true;
    else
      return std::nullopt;
  }
  while (i < lines.size() && isBlankOrComment(lines[i].text))
    ++i;
  if (!sawNodes || i == lines.size())
    return std::nullopt;

  // The items: lines that start with the first item's "- " at its indentation begin one; every
  // other line must be blank, a comment or indented deeper, up to an end of document ("...", as the
  // writer ends) after which only blank lines and comments may follow.
  size_t indent = indentOf(lines[i].text);
  auto startsItem = [&](llvm::StringRef line) {
    return indentOf(line) == indent && line.drop_front(indent).starts_with("- ");
  };
  if (!startsItem(lines[i].text))
    return std::nullopt;
  NodeSequence seq;
  seq.head = text.substr(0, lines[i].begin);
  std::vector<size_t> starts;
  size_t end = text.size();
  for (; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i].text;
    if (startsItem(line)) {
      starts.push_back(lines[i].begin);
    } else if (line.rtrim(' ') == "...") {
      end = lines[i].begin;
      break;
    } else if (!isBlankOrComment(line) && indentOf(line) <= indent) {
      return std::nullopt;
    }
  }
  for (++i; i < lines.size(); ++i)
    if (!isBlankOrComment(lines[i].text))
      return std::nullopt;
  seq.nodes.reserve(starts.size());
  for (size_t n = 0; n < starts.size(); ++n) {
    NodeText node;
    node.item = text.slice(starts[n], n + 1 < starts.size() ? starts[n + 1] : end);
    findName(node, indent + 2);
    seq.nodes.push_back(node);
  }
  return seq;
}

} // namespace msc::hal::detail

// Text as XML character data or an attribute value, for the SVG writers of this folder.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <string>

namespace msc::render {

// `s` with & < > " ' escaped; control characters XML 1.0 forbids even as references become '?'.
std::string xmlEscape(llvm::StringRef s);

} // namespace msc::render

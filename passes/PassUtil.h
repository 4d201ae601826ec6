// Small helpers the passes share for pointing diagnostics at contract values.
#pragma once

#include "ir/IR.h"
#include "support/Diagnostic.h"

#include <string>
#include <vector>

namespace msc::passes {

inline Location at(const ir::Origin &origin) { return Location{origin.range, {}, 0}; }
inline Location atField(const ir::Origin &origin) { return Location{origin.fieldRange, {}, 0}; }

} // namespace msc::passes

// The key function of the Applier interface, for the tests' own library: the executor library
// defines it in its Applier.cpp, which these tests do not link.
#include "executor/Applier.h"

msc::exec::Applier::~Applier() = default;

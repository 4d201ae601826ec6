// What a plan says of lending, as the node's lending decides with it: an owner's CPUs and block
// devices and what each phase keeps (LoanPlanner.h), a borrower's ask. A phase keeps a role's CPUs
// when it names `cpu` for the role, and its block device (borrowers' IO to it throttled) when it
// names `io`; gpu and rdma are kept throughout today.
#pragma once

#include "executor/lending/LoanPlanner.h"
#include "plan/plan.pb.h"

#include <optional>

namespace msc::exec::lending {

// The owner a plan with phases is, named by its contract; nullopt for a plan without phases.
std::optional<Owner> ownerOf(const plan::Plan &plan);
// The most CPUs `owner` lends at once: its CPUs that some phase does not keep.
unsigned mostLent(const Owner &owner);
// Whether the plan is a borrower's (class = opportunistic): what it asks for.
bool isBorrower(const plan::Plan &plan);

} // namespace msc::exec::lending

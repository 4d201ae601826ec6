// What a plan says of lending, as the node's lending decides with it: an owner's CPUs and block
// devices and what each phase keeps (LoanPlanner.h), a borrower's ask. A phase keeps a role's CPUs
// when it names `cpu` for the role, its block device (borrowers' IO to it throttled) when it names
// `io`, its GPU slices (each a GpuShare) when it names `gpu`, and its queue-pair groups (each an
// RdmaShare) when it names `rdma`.
#pragma once

#include "executor/lending/LoanPlanner.h"
#include "plan/plan.pb.h"

#include <optional>

namespace msc::exec::lending {

// The owner a plan with phases is, named by its contract; nullopt for a plan without phases.
std::optional<Owner> ownerOf(const plan::Plan &plan);
// The most CPUs `owner` lends at once: its CPUs that some phase does not keep.
unsigned mostLent(const Owner &owner);
// The most units of `kind` one borrower can be lent by `owner` at once: its largest share of that
// kind some phase does not keep (a borrower's units all come from one share).
unsigned mostLentUnits(const Owner &owner, ShareKind kind);
// Whether the plan is a borrower's (class = opportunistic): what it asks for.
bool isBorrower(const plan::Plan &plan);

} // namespace msc::exec::lending

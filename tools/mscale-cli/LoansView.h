// `mscale-cli node loans --timeline FILE.svg`: what the node's lending did, as a picture: a lane per
// owner with its phases, a lane per CPU it holds with who ran there (kept, or lent to a borrower),
// from the oldest change the agent keeps to the moment it answered (render/TimelineSvg.h).
#pragma once

#include "executor/client/agent.pb.h"
#include "render/TimelineSvg.h"

namespace msc::cli {

render::TimelineChart loansTimeline(const agent::LoansResponse &loans);

} // namespace msc::cli

// Turns validated API calls into executable plans: picks the schedule generator, binds buffers,
// and adds the operator's pre/post work (PreMulSum scaling, Avg division).
#pragma once

#include <memory>
#include <vector>

#include "core/group.h"
#include "core/plan_cache.h"
#include "engine/plan.h"

namespace atl {

/// The shape a collective call is planned for, with the algorithm chosen for it.
PlanKey collectiveKey(const OpDesc& op);
/// Whether a plan for `op` may be reused by later identical calls (PreMulSum plans hold the
/// operator's scalar and a private copy of the input, so they are built per call).
bool cacheable(const OpDesc& op);
/// Whether `op` runs in place on `rank` (its output is its input, as each collective defines it);
/// part of the plan key for every cacheable call.
bool inPlaceCall(const OpDesc& op, int rank);
/// A plan for `key` with `op`'s buffers bound; nullptr (and Ok) when the call moves no data.
Result<std::unique_ptr<engine::Plan>> buildCollectivePlan(const OpDesc& op, const PlanKey& key);
/// Points a (cached) plan at this call's buffers.
void bindBuffers(engine::Plan& plan, const OpDesc& op);
Result<std::unique_ptr<engine::Plan>> buildP2PPlan(ncclComm* comm, const std::vector<const OpDesc*>& ops);

}  // namespace atl

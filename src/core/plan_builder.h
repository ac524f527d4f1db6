// Turns validated API calls into executable plans: picks the schedule generator, binds buffers,
// and adds the operator's pre/post work (PreMulSum scaling, Avg division).
#pragma once

#include <memory>
#include <vector>

#include "core/group.h"
#include "engine/plan.h"

namespace atl {

/// nullptr (and Ok) when the call moves no data.
Result<std::unique_ptr<engine::Plan>> buildCollectivePlan(const OpDesc& op);
Result<std::unique_ptr<engine::Plan>> buildP2PPlan(ncclComm* comm, const std::vector<const OpDesc*>& ops);

}  // namespace atl

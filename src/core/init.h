#pragma once
#include "core/comm.h"

namespace atl {
/// Full initialisation of an allocated (registered, Initializing) communicator.
Status initComm(ncclComm* comm, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t& config);
/// Validates a user config (NULL = defaults) into a complete one.
Result<ncclConfig_t> resolveConfig(const ncclConfig_t* user);
}  // namespace atl

#pragma once
#include <span>

#include "core/comm.h"

namespace atl {
/// Full initialisation of an allocated (registered, Initializing) communicator.
/// `ids`: one per bootstrap root (several from ncclCommInitRankScalable), the same on every rank.
Status initComm(ncclComm* comm, int nranks, std::span<const ncclUniqueId> ids, int rank, const ncclConfig_t& config);
/// Validates a user config (NULL = defaults) into a complete one.
Result<ncclConfig_t> resolveConfig(const ncclConfig_t* user);
}  // namespace atl

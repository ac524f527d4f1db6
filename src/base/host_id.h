#pragma once
#include <cstdint>
#include <string>

namespace atl {
/// Identity of this host for "can share memory" decisions: NCCL_HOSTID, else hostname + boot id.
uint64_t hostHash();
std::string hostName();
}  // namespace atl

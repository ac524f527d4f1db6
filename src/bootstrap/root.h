// The rendezvous root: admits the ranks of its block, then hands each one the listen addresses of
// its log-depth partners (not the full table) and answers lookups from other blocks (root.cc).
#pragma once

#include <cstdint>

#include "base/hmac.h"
#include "base/socket.h"
#include "base/status.h"

namespace atl::bootstrap {

/// Serves one rendezvous on `listenFd` in a detached thread that owns all its state and exits when
/// the rendezvous completes, fails (after telling every rank it can reach), or `timeoutMs` passes.
Status startRoot(net::Fd listenFd, const net::SockAddr& bound, const Secret& secret, int64_t timeoutMs);

}  // namespace atl::bootstrap

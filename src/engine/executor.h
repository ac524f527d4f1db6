// The progress engine: drives plans over their connections until done. One calling thread may
// drive several communicators at once (ranks as threads in a group), so the unit of work is a
// per-communicator queue of plans; queues progress concurrently, plans within one queue in order
// (the order every rank issued them in, which is what keeps streams matched).
#pragma once

#include <vector>
#include <memory>
#include <span>

#include "base/deadline.h"
#include "base/status.h"
#include "engine/connections.h"
#include "engine/plan.h"

namespace atl::engine {

struct CommQueue {
  int rank = 0;
  const ConnTable* conns = nullptr;
  const AbortFlag* abort = nullptr;
  std::vector<Plan*> plans;  // owned by the caller (or its plan cache); run in order
  size_t next = 0;           // plans[next] is the one running or about to
  Status result;             // first error of this queue
  int failedPeer = -1;       // the peer whose link broke (or that a timeout waited on); -1: none
  bool timedOut = false;     // failedPeer is only the rank waited on: it may be waiting itself
  bool pending() const { return next < plans.size(); }
  Plan& current() const { return *plans[next]; }
};

struct ExecOptions {
  int64_t timeoutMs = 0;  // no progress for this long fails the queue; 0 = never
  int spinCount = 200;    // idle polls before yielding the CPU
};

/// Runs every queue to completion or failure. Returns the first error (all queues stop on it).
Status execute(std::span<CommQueue> queues, const ExecOptions& options);

}  // namespace atl::engine

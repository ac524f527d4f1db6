// A job that repeats one collective outside a group (a latency benchmark, a training step's
// all-reduce of one bucket) finds its plan here instead of going through the batch machinery: no
// per-communicator queue, no plan key built from scratch, no cache lookup and release. At 8-64 B
// over shared memory that machinery is half of a call's cost (callgrind: about 580 of 1,260
// instructions per 16-byte ncclAllReduce on one rank).
//
// The memo vouches only for what the plan key depends on; anything it cannot vouch for (another
// shape, reloaded parameters, a cache that changed, links made since) takes the general path
// (core/group.cc), which remembers the call again when it ran alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/group.h"
#include "engine/executor.h"
#include "engine/plan.h"

namespace atl {

class RepeatCall {
 public:
  /// The plan that ran the last lone call, if `op` (validated) would get the same one: same
  /// shape, parameters and cache, and its links still present. Nothing is taken from the cache:
  /// the call runs alone on this thread.
  engine::Plan* find(const OpDesc& op) const;
  /// Remembers `plan`, cached and run for `op` alone, under the parameter snapshot `params`
  /// (params::numbers().values: never freed, so its address identifies the snapshot).
  void remember(const OpDesc& op, engine::Plan* plan, const int64_t* params, const engine::ExecOptions& opts);
  void forget() { plan_ = nullptr; }
  /// The options the remembered call ran with (they follow from `params` and the communicator).
  const engine::ExecOptions& options() const { return opts_; }

 private:
  // What collectiveKey reads from the call that may differ between calls (what it reads from the
  // communicator is fixed at init).
  algo::Coll coll_ = algo::Coll::AllReduce;
  size_t count_ = 0;
  ncclDataType_t dtype_ = ncclInt8;
  ncclRedOp_t op_ = ncclSum;
  int root_ = 0;
  bool inPlace_ = false;
  const int64_t* params_ = nullptr;
  uint64_t cacheVersion_ = 0;  // PlanCache::version(): the plan is still cached while it holds
  engine::Plan* plan_ = nullptr;
  engine::ExecOptions opts_;
};

}  // namespace atl

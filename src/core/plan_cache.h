// Identical collectives on one communicator reuse one plan. A training step issues the same few
// shapes thousands of times, and building a plan (schedule generation, several allocations, its
// description) costs more than an 8-byte all-reduce over shared memory takes to run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "algorithms/schedule.h"
#include "engine/plan.h"
#include "nccl.h"

namespace atl {

/// Everything a collective's plan depends on except the buffer addresses, which are rebound per call.
struct PlanKey {
  algo::CollSpec spec;  // spec.rank and spec.nranks are the communicator's, so they never differ
  ncclDataType_t dtype = ncclInt8;
  ncclRedOp_t op = ncclSum;
  bool operator==(const PlanKey& o) const;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const;
};

class PlanCache {
 public:
  /// A cached plan for `key` not yet taken by the batch being run (then marked taken), or nullptr.
  engine::Plan* acquire(const PlanKey& key);
  /// Keeps `plan` for later calls, taken by the current batch, while fewer than `capacity` are
  /// cached; returns nullptr (and leaves `plan` with the caller) otherwise.
  engine::Plan* insert(const PlanKey& key, std::unique_ptr<engine::Plan>& plan, size_t capacity);
  /// Makes every plan available again; called when a batch has finished with them.
  void releaseAll();
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::unique_ptr<engine::Plan> plan;
    bool taken = false;
  };
  std::unordered_map<PlanKey, Entry, PlanKeyHash> entries_;  // node-based: Entry addresses are stable
  std::vector<Entry*> taken_;
};

}  // namespace atl

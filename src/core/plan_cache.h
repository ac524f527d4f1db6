// Identical collectives on one communicator reuse one plan. A training step issues the same few
// shapes thousands of times, and building a plan (schedule generation, several allocations, its
// description) costs more than an 8-byte all-reduce over shared memory takes to run.
//
// The cache is an LRU: a job whose shapes change (warm-up, then training; bucket sizes that settle)
// must not be stuck forever with the first `capacity` shapes it happened to issue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>

#include "algorithms/schedule.h"
#include "engine/plan.h"
#include "nccl.h"

namespace atl {

/// Everything a collective's plan depends on except the buffer addresses, which are rebound per call.
struct PlanKey {
  // spec.rank, spec.nranks and spec.islands are the communicator's, so they never differ within
  // one cache; islands stays null here (copying the shared pointer on every call costs two atomic
  // read-modify-writes) and is filled in when a plan is built.
  algo::CollSpec spec;
  ncclDataType_t dtype = ncclInt8;
  ncclRedOp_t op = ncclSum;
  bool operator==(const PlanKey& o) const;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const;
};

class PlanCache {
 public:
  struct Stats {
    uint64_t hits = 0;       // acquire() found a plan
    uint64_t misses = 0;     // acquire() found none, or only one the batch had already taken
    uint64_t evictions = 0;  // plans dropped by insert() to make room
  };

  /// A cached plan for `key` not yet taken by the batch being run (then marked taken and made the
  /// most recently used), or nullptr.
  engine::Plan* acquire(const PlanKey& key);
  /// Keeps `plan` for later calls, taken by the current batch. When `capacity` plans are cached it
  /// first evicts the least recently used one the batch has not taken; when the batch has taken
  /// them all (or `capacity` is 0, or `key` is cached already) it returns nullptr and leaves `plan`
  /// with the caller.
  engine::Plan* insert(const PlanKey& key, std::unique_ptr<engine::Plan>& plan, size_t capacity);
  /// Makes every plan available again, the ones taken last as the most recent; called when a batch
  /// has finished with them.
  void releaseAll();
  size_t size() const { return entries_.size(); }
  /// Drops every plan (ncclCommSuspend with NCCL_SUSPEND_MEM); only between batches.
  void clear();
  /// Bytes the cached plans hold: their schedules, scratch and staging buffers.
  size_t heldBytes() const;
  const Stats& stats() const { return stats_; }
  /// Changes whenever a plan may have been freed or added (insert, eviction, clear): a plan
  /// pointer kept with a version stays valid, and cached, while the version does not change.
  uint64_t version() const { return version_; }
  /// A hit found without acquire() (core/repeat_call.h), so the statistics still count it.
  void countHit() { ++stats_.hits; }

 private:
  struct Entry {
    std::unique_ptr<engine::Plan> plan;
    const PlanKey* key = nullptr;  // the map's own copy, to erase the entry when evicted
    bool taken = false;
    std::list<Entry*>::iterator pos;  // its node in lru_ or, while taken, in taken_ (lru_ for frontTaken_)
  };
  // Node-based: Entry and key addresses are stable while the entry exists.
  std::unordered_map<PlanKey, Entry, PlanKeyHash> entries_;
  // The entries not taken by the running batch, most recently used first: the back is the next to
  // evict, so taken plans are never candidates and eviction stays O(1).
  std::list<Entry*> lru_;
  // The entries the running batch took, in the order it took them. Nodes move between the two
  // lists by splice, so a cache hit allocates nothing.
  std::list<Entry*> taken_;
  // The entry acquired or inserted last: a job repeating one call finds it without hashing.
  Entry* recent_ = nullptr;
  // A taken entry left where it was, at the front of lru_ (acquire()): at most one per batch.
  Entry* frontTaken_ = nullptr;
  Stats stats_;
  uint64_t version_ = 0;
};

}  // namespace atl

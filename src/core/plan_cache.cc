#include "core/plan_cache.h"

#include <functional>

namespace atl {

bool PlanKey::operator==(const PlanKey& o) const {
  const algo::CollSpec &a = spec, &b = o.spec;
  return a.coll == b.coll && a.root == b.root && a.count == b.count && a.nchannels == b.nchannels &&
         a.chunkElems == b.chunkElems && a.ringSliceElems == b.ringSliceElems && a.inPlace == b.inPlace && a.algo == b.algo &&
         dtype == o.dtype && op == o.op;
}

size_t PlanKeyHash::operator()(const PlanKey& k) const {
  uint64_t h = std::hash<size_t>()(k.spec.count);
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<uint64_t>(k.spec.coll));
  mix(static_cast<uint64_t>(k.spec.root));
  mix(static_cast<uint64_t>(k.spec.nchannels));
  mix(k.spec.chunkElems);
  mix(k.spec.ringSliceElems);
  mix(static_cast<uint64_t>(k.spec.inPlace) | static_cast<uint64_t>(k.spec.algo) << 1);
  mix(static_cast<uint64_t>(k.dtype) << 32 | static_cast<uint32_t>(k.op));
  return static_cast<size_t>(h);
}

engine::Plan* PlanCache::acquire(const PlanKey& key) {
  Entry* found = recent_ != nullptr && *recent_->key == key ? recent_ : nullptr;
  if (found == nullptr) {
    auto it = entries_.find(key);
    if (it != entries_.end()) found = &it->second;
  }
  if (found == nullptr || found->taken) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  Entry& e = *found;
  recent_ = &e;
  e.taken = true;
  if (e.pos == lru_.begin() && taken_.empty()) {
    // The batch's first plan, already the most recent: releaseAll() puts the batch's later
    // plans ahead of it, where they would go anyway, so a job repeating one call moves no list
    // node at all. insert() never evicts a taken entry (lru_.back() is this one only when it is
    // alone).
    frontTaken_ = &e;
  } else {
    taken_.splice(taken_.end(), lru_, e.pos);  // out of the eviction order until releaseAll()
  }
  return e.plan.get();
}

engine::Plan* PlanCache::insert(const PlanKey& key, std::unique_ptr<engine::Plan>& plan, size_t capacity) {
  if (capacity == 0 || entries_.count(key) != 0) return nullptr;
  ++version_;
  // A lowered capacity (ATOLL_PLAN_CACHE_SIZE reloaded) shrinks the cache here, one insert at a time.
  while (entries_.size() >= capacity && !lru_.empty() && !lru_.back()->taken) {
    auto victim = entries_.find(*lru_.back()->key);  // erased by iterator: the key lives in the node
    if (&victim->second == recent_) recent_ = nullptr;
    lru_.pop_back();
    entries_.erase(victim);
    ++stats_.evictions;
  }
  if (entries_.size() >= capacity) return nullptr;  // every cached plan is in use by this batch
  auto it = entries_.try_emplace(key).first;
  Entry& e = it->second;
  e.plan = std::move(plan);
  e.key = &it->first;
  e.taken = true;
  e.pos = taken_.insert(taken_.end(), &e);
  recent_ = &e;
  return e.plan.get();
}

void PlanCache::releaseAll() {
  if (frontTaken_ != nullptr) frontTaken_->taken = false, frontTaken_ = nullptr;
  // Each in turn to the front, so the one taken last ends up the most recent (the one left at
  // the front was the batch's first: the others go ahead of it).
  while (!taken_.empty()) {
    Entry* e = taken_.front();
    e->taken = false;
    lru_.splice(lru_.begin(), taken_, taken_.begin());
  }
}

void PlanCache::clear() {
  ++version_;
  recent_ = nullptr;
  frontTaken_ = nullptr;
  lru_.clear();
  taken_.clear();
  entries_.clear();
}

size_t PlanCache::heldBytes() const {
  size_t bytes = 0;
  for (const auto& [key, e] : entries_) {
    const engine::Plan& p = *e.plan;
    bytes += sizeof(p) + p.scratchCapacity + p.ownedInputBytes + p.buffers.capacity() * sizeof(std::byte*);
    for (const algo::Program& prog : p.schedule.programs) bytes += prog.steps.capacity() * sizeof(algo::Step);
  }
  return bytes;
}

}  // namespace atl

#include "core/plan_cache.h"

#include <functional>

namespace atl {

bool PlanKey::operator==(const PlanKey& o) const {
  const algo::CollSpec &a = spec, &b = o.spec;
  return a.coll == b.coll && a.root == b.root && a.count == b.count && a.nchannels == b.nchannels &&
         a.chunkElems == b.chunkElems && a.inPlace == b.inPlace && a.algo == b.algo && a.islands == b.islands &&
         dtype == o.dtype && op == o.op;
}

size_t PlanKeyHash::operator()(const PlanKey& k) const {
  uint64_t h = std::hash<size_t>()(k.spec.count);
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<uint64_t>(k.spec.coll));
  mix(static_cast<uint64_t>(k.spec.root));
  mix(static_cast<uint64_t>(k.spec.nchannels));
  mix(k.spec.chunkElems);
  mix(static_cast<uint64_t>(k.spec.inPlace) | static_cast<uint64_t>(k.spec.algo) << 1);
  mix(static_cast<uint64_t>(k.dtype) << 32 | static_cast<uint32_t>(k.op));
  return static_cast<size_t>(h);
}

engine::Plan* PlanCache::acquire(const PlanKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.taken) return nullptr;
  it->second.taken = true;
  taken_.push_back(&it->second);
  return it->second.plan.get();
}

engine::Plan* PlanCache::insert(const PlanKey& key, std::unique_ptr<engine::Plan>& plan, size_t capacity) {
  if (entries_.size() >= capacity || entries_.count(key) != 0) return nullptr;
  Entry& e = entries_[key];
  e.plan = std::move(plan);
  e.taken = true;
  taken_.push_back(&e);
  return e.plan.get();
}

void PlanCache::releaseAll() {
  for (Entry* e : taken_) e->taken = false;
  taken_.clear();
}

}  // namespace atl

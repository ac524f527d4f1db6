// From (collective, requested algorithm) to the generator that runs. One function decides the
// fallback (executedAlgo) and buildSchedule dispatches on its answer, so what the library reports
// as the algorithm that ran (NCCL_DEBUG_SUBSYS=TUNING, atollCommLastCall) is by construction the
// generator that built the schedule.
#include <bit>

#include "algorithms/hier_groups.h"
#include "algorithms/ring.h"

namespace atl::algo {

Algo executedAlgo(const CollSpec& s) {
  const bool hier = s.algo == Algo::Hierarchical && usableIslands(s);
  switch (s.coll) {
    case Coll::AllReduce:
      switch (s.algo) {
        case Algo::RecursiveDoubling:
          return std::has_single_bit(static_cast<unsigned>(s.nranks)) ? Algo::RecursiveDoubling : Algo::Ring;
        case Algo::RecursiveHalvingDoubling:
        case Algo::Direct:
        case Algo::Tree: return s.algo;
        case Algo::Hierarchical: return hier ? Algo::Hierarchical : Algo::Ring;
        case Algo::Ring:
        case Algo::Binomial:
        case Algo::Bruck: return Algo::Ring;
      }
      return Algo::Ring;
    case Coll::AllGather:
      if (s.algo == Algo::Bruck) return Algo::Bruck;
      return hier ? Algo::Hierarchical : Algo::Ring;
    case Coll::ReduceScatter: return hier ? Algo::Hierarchical : Algo::Ring;
    case Coll::Broadcast:
    case Coll::Reduce:
      if (s.algo == Algo::Binomial) return Algo::Binomial;
      return hier ? Algo::Hierarchical : Algo::Ring;  // Ring: the pipelined chain along the ring
    case Coll::AlltoAll:
    case Coll::Gather:
    case Coll::Scatter:
    case Coll::SendRecv: return Algo::Direct;  // one schedule each, whatever was asked
  }
  return Algo::Ring;
}

Schedule buildSchedule(const CollSpec& spec) {
  const Algo a = executedAlgo(spec);
  switch (spec.coll) {
    case Coll::AllReduce:
      switch (a) {
        case Algo::RecursiveDoubling: return rdAllReduce(spec);
        case Algo::RecursiveHalvingDoubling: return rhdAllReduce(spec);
        case Algo::Direct: return directAllReduce(spec);
        case Algo::Tree: return treeAllReduce(spec);
        case Algo::Hierarchical: return hierAllReduce(spec);
        default: return ringAllReduce(spec);
      }
    case Coll::AllGather:
      if (a == Algo::Bruck) return bruckAllGather(spec);
      return a == Algo::Hierarchical ? hierAllGather(spec) : ringAllGather(spec);
    case Coll::ReduceScatter: return a == Algo::Hierarchical ? hierReduceScatter(spec) : ringReduceScatter(spec);
    case Coll::Broadcast:
      if (a == Algo::Binomial) return binomialBroadcast(spec);
      return a == Algo::Hierarchical ? hierBroadcast(spec) : chainBroadcast(spec);
    case Coll::Reduce:
      if (a == Algo::Binomial) return binomialReduce(spec);
      return a == Algo::Hierarchical ? hierReduce(spec) : chainReduce(spec);
    case Coll::AlltoAll: return directAlltoAll(spec);
    case Coll::Gather: return directGather(spec);
    case Coll::Scatter: return directScatter(spec);
    case Coll::SendRecv: break;  // p2p.h builds send/recv batches
  }
  return {};
}

}  // namespace atl::algo

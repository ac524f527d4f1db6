// Ring geometry shared by the ring and chain generators: ranks in index order, one ring per channel.
#pragma once

#include "algorithms/schedule.h"

namespace atl::algo {

inline int mod(int a, int n) { return ((a % n) + n) % n; }
inline int ringNext(const CollSpec& s) { return mod(s.rank + 1, s.nranks); }
inline int ringPrev(const CollSpec& s) { return mod(s.rank - 1, s.nranks); }
/// At most this many rounds per channel, whatever CollSpec::ringSliceElems asks for.
inline constexpr size_t kMaxRingRounds = 4096;

Schedule ringAllReduce(const CollSpec& s);
Schedule rdAllReduce(const CollSpec& s);  // nranks must be a power of two
Schedule rhdAllReduce(const CollSpec& s);
Schedule directAllReduce(const CollSpec& s);
Schedule treeAllReduce(const CollSpec& s);
Schedule hierAllReduce(const CollSpec& s);  // ring without a usable island map
Schedule ringAllGather(const CollSpec& s);
Schedule ringReduceScatter(const CollSpec& s);
Schedule chainBroadcast(const CollSpec& s);
Schedule chainReduce(const CollSpec& s);
// Hierarchical variants (hier_*.cc); each is its ring/chain counterpart without a usable island map.
Schedule hierAllGather(const CollSpec& s);
Schedule hierReduceScatter(const CollSpec& s);
Schedule hierBroadcast(const CollSpec& s);
Schedule hierReduce(const CollSpec& s);
// Log-depth variants (binomial_*.cc, bruck_allgather.cc): any n, any root.
Schedule binomialBroadcast(const CollSpec& s);
Schedule binomialReduce(const CollSpec& s);
Schedule bruckAllGather(const CollSpec& s);
Schedule directAlltoAll(const CollSpec& s);
Schedule directGather(const CollSpec& s);
Schedule directScatter(const CollSpec& s);

}  // namespace atl::algo

#include "tuning/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace atl::tuning {
namespace {

using algo::Algo;
using algo::Coll;

// Double binary tree: an interior node receives from two children at once, so each inbound stream
// gets about half its link; NCCL likewise rates tree bandwidth below the ring's. Uncalibrated.
constexpr double kTreeBwPenalty = 1.5;
// Halving/doubling cannot overlap one step's reduction with the next step's transfer the way the
// ring's channels do. Uncalibrated; keeps the measured ring the large-message choice on one island.
constexpr double kRhdBwPenalty = 1.1;
// Recursive doubling reduces the whole buffer at every hop on one channel, and in place it first
// copies its input to scratch: at 64 MiB on 2 ranks it ran at half the ring's busbw in place
// (perf/baselines, this host), so its bandwidth term costs double.
constexpr double kRdBwPenalty = 2.0;

bool isPow2(int n) { return n > 0 && (n & (n - 1)) == 0; }
int ceilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}
int floorLog2(int n) {
  int l = 0;
  while ((2 << l) <= n) ++l;
  return l;
}

/// Per-step alpha (us) and beta (us per byte) of the two link kinds.
struct Costs {
  double aIntra, bIntra, aInter, bInter;
  bool multi;
  // The slowest link a flat algorithm's step may touch.
  double aFlat() const { return multi ? std::max(aIntra, aInter) : aIntra; }
  double bFlat() const { return multi ? std::max(bIntra, bInter) : bIntra; }
};

Costs costsOf(const SelectInput& in) {
  auto beta = [](double gbs) { return gbs > 0 ? 1.0 / (gbs * 1e3) : 1.0; };  // GB/s = 1e3 bytes/us
  return {in.stepOverheadUs + in.intraLatUs, beta(in.intraBwGBs), in.stepOverheadUs + in.interLatUs,
          beta(in.interBwGBs), in.nIslands > 1};
}

double ringAllReduce(const SelectInput& in, const Costs& c) {
  const double n = in.nranks;
  return 2 * (n - 1) * (c.aFlat() + static_cast<double>(in.bytes) / n * c.bFlat());
}

// Exchanges at distance n/2 first: with contiguous islands the first log2(islands) steps cross.
double rdAllReduce(const SelectInput& in, const Costs& c) {
  const int steps = ceilLog2(in.nranks);
  const int cross = c.multi ? std::min(steps, ceilLog2(in.nIslands)) : 0;
  const double s = static_cast<double>(in.bytes);
  return cross * (c.aInter + kRdBwPenalty * s * c.bInter) + (steps - cross) * (c.aIntra + kRdBwPenalty * s * c.bIntra);
}

double rhdAllReduce(const SelectInput& in, const Costs& c) {
  const int steps = floorLog2(in.nranks);
  const int p = 1 << steps;
  const int cross = c.multi ? std::min(steps, ceilLog2(in.nIslands)) : 0;
  const double s = static_cast<double>(in.bytes);
  const double crossBytes = s * (1 - std::ldexp(1.0, -cross));
  const double intraBytes = s * (std::ldexp(1.0, -cross) - 1.0 / p);
  double t = 2 * (cross * c.aInter + (steps - cross) * c.aIntra +
                  kRhdBwPenalty * (crossBytes * c.bInter + intraBytes * c.bIntra));
  if (p != in.nranks) t += 2 * (c.aFlat() + s * c.bFlat());  // fold the extra ranks in, and back out
  return t;
}

double treeAllReduce(const SelectInput& in, const Costs& c) {
  const int crossDepth = c.multi ? ceilLog2(in.nIslands) : 0;
  const int intraDepth = c.multi ? ceilLog2(in.maxIslandSize) : ceilLog2(in.nranks);
  const double s = static_cast<double>(in.bytes);
  return 2 * (crossDepth * c.aInter + intraDepth * c.aIntra) + 2 * kTreeBwPenalty * s * c.bFlat();
}

// Every send and receive is posted at once: per-peer software overhead adds up, latency does not.
double directAllReduce(const SelectInput& in, const Costs& c) {
  const double peers = in.nranks - 1;
  const double lat = c.multi ? std::max(in.intraLatUs, in.interLatUs) : in.intraLatUs;
  return peers * in.stepOverheadUs + lat + peers * static_cast<double>(in.bytes) * c.bFlat();
}

// Reduce-scatter inside islands, all-reduce the 1/m shards across islands, all-gather inside.
double hierarchicalAllReduce(const SelectInput& in, const Costs& c) {
  const double m = in.maxIslandSize, islands = in.nIslands;
  const double s = static_cast<double>(in.bytes);
  const double intra = 2 * (m - 1) * c.aIntra + 2 * (m - 1) / m * s * c.bIntra;
  const double shard = s / std::max(1, in.minIslandSize);
  double inter = 2 * (islands - 1) * (c.aInter + shard / islands * c.bInter);
  if (isPow2(in.nIslands)) inter = std::min(inter, ceilLog2(in.nIslands) * (c.aInter + shard * c.bInter));
  return intra + inter;
}

// The one schedule each non-all-reduce collective has today (ring or pipelined chain).
double ringOther(const SelectInput& in, const Costs& c) {
  const double n = in.nranks;
  const double s = static_cast<double>(in.bytes);
  switch (in.coll) {
    case Coll::Broadcast:
    case Coll::Reduce:
      return (n - 1) * c.aFlat() + s * c.bFlat();
    default:
      return (n - 1) * (c.aFlat() + s / n * c.bFlat());
  }
}

}  // namespace

bool applicable(Algo a, const SelectInput& in) {
  if (a == Algo::Ring) return true;
  if (in.coll != Coll::AllReduce || in.nranks < 2) return false;
  switch (a) {
    case Algo::RecursiveDoubling:
      return isPow2(in.nranks);
    case Algo::Hierarchical:
      return in.nIslands > 1 && in.maxIslandSize > 1;
    case Algo::Direct:
      return static_cast<double>(in.bytes) * in.nranks <= static_cast<double>(kDirectMaxTotalBytes);
    default:
      return true;
  }
}

double estimateUs(Algo a, const SelectInput& in) {
  if (!applicable(a, in)) return std::numeric_limits<double>::infinity();
  if (in.nranks < 2) return 0;
  const Costs c = costsOf(in);
  if (in.coll != Coll::AllReduce) return ringOther(in, c);
  switch (a) {
    case Algo::Ring:
      return ringAllReduce(in, c);
    case Algo::RecursiveDoubling:
      return rdAllReduce(in, c);
    case Algo::Tree:
      return treeAllReduce(in, c);
    case Algo::RecursiveHalvingDoubling:
      return rhdAllReduce(in, c);
    case Algo::Direct:
      return directAllReduce(in, c);
    case Algo::Hierarchical:
      return hierarchicalAllReduce(in, c);
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace atl::tuning

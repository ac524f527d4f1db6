#include "tuning/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "algorithms/tree_shape.h"
#include "base/params.h"

namespace atl::tuning {
namespace {

using algo::Algo;
using algo::Coll;

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

/// Per-step alpha (us) and beta (us per byte) of the link kinds: inside an island, between
/// islands, and between ranks of one host where islands span hosts.
struct Costs {
  double aIntra, bIntra, aInter, bInter, aHost, bHost;
  bool multi;
  // Dragonfly+ (SelectInput::groups): a host's share of its group's direct link to one other group,
  // and the link between islands of one group. Without groups, both are the inter-island link.
  double bGlobal = 0, aGroup = 0, bGroup = 0;
  // A ring of islands puts one island per group on the link to the next group: per host, that link
  // costs bInter times this (1 without groups).
  double ringGlobal = 1;
  double aRing = 0, bRing = 0;  // a ring over every rank, per step (see ringStepUs and costsOf)
  // The slowest link a flat algorithm's step may touch.
  double aFlat() const { return multi ? std::max(aIntra, aInter) : aIntra; }
  double bFlat() const { return multi ? std::max(bIntra, bInter) : bIntra; }
};

// Of `cross` island-crossing steps at distances n/2, n/4, ...: with contiguous groups the first
// ceil(log2 groups) cross between groups, every group sending to one other, and the rest between
// islands of one group.
struct Crossing {
  int global, group;
};
Crossing crossingSteps(const SelectInput& in, int cross) {
  const int global = in.groups > 1 ? std::min(cross, ceilLog2(in.groups)) : cross;
  return {global, cross - global};
}

// Of `levels` distance-doubling steps (or tree levels) inside an island, the ones at distances
// below hostRanks stay inside a host: ranks keep hosts contiguous.
int hostLevels(const SelectInput& in, int levels) {
  return in.hostRanks > 1 ? std::min(levels, floorLog2(in.hostRanks)) : 0;
}

// A ring step waits for the step before it on the previous rank, so a message's way around the
// ring passes every hop in turn: the latency per step is the mean of its hops' (the bandwidth is the
// slowest hop's, which paces the stream). Ranks keep hosts and islands contiguous, so n ranks over
// `islands` islands cross between islands `islands` times (none with one), between hosts of an
// island once per further host, and stay inside a host on every other hop.
double ringStepUs(const SelectInput& in, const Costs& c, int n, int islands) {
  if (n < 2) return c.aIntra;
  const double hosts = std::max<double>(islands, std::ceil(static_cast<double>(n) / in.hostRanks));
  const double inter = islands > 1 ? islands : 0;
  return (inter * c.aInter + (hosts - inter) * c.aIntra + (n - hosts) * c.aHost) / n;
}

Costs costsOf(const SelectInput& in) {
  auto beta = [](double gbs) { return gbs > 0 ? 1.0 / (gbs * 1e3) : 1.0; };  // GB/s = 1e3 bytes/us
  Costs c{in.stepOverheadUs + in.intraLatUs, beta(in.intraBwGBs),
          in.stepOverheadUs + in.interLatUs,  beta(in.interBwGBs),
          in.stepOverheadUs + in.hostLatUs,   beta(in.hostBwGBs),
          in.nIslands > 1};
  c.bGlobal = c.bInter;
  c.aGroup = c.aInter;
  c.bGroup = c.bInter;
  if (in.groups > 1) {
    // Global traffic also climbs its island's uplink into the group.
    c.aGroup = in.stepOverheadUs + in.groupLatUs;
    c.bGroup = beta(in.groupBwGBs);
    c.bGlobal = std::max(c.bGroup, c.bInter * (in.groups - 1));
    c.ringGlobal = static_cast<double>(in.groups - 1) * in.groups / std::max(in.groups, in.nIslands);
  }
  c.aRing = ringStepUs(in, c, in.nranks, c.multi ? in.nIslands : 1);
  // The ring's one flow across each island boundary has the island's uplink to itself (and, between
  // Dragonfly+ groups, the link to the next group: its island is one of islands/groups sharing it).
  const double hosts = std::max(1, in.islandHosts);
  c.bRing = c.multi ? std::max({c.bIntra, c.bInter * c.ringGlobal / hosts, c.bGroup / hosts}) : c.bIntra;
  return c;
}

double ringAllReduce(const SelectInput& in, const Costs& c) {
  const double n = in.nranks;
  return 2 * (n - 1) * (c.aRing + static_cast<double>(in.bytes) / n * c.bRing);
}

// Exchanges at distance n/2 first: with contiguous islands the first log2(islands) steps cross.
double rdAllReduce(const SelectInput& in, const Costs& c) {
  const int steps = ceilLog2(in.nranks);
  const int cross = c.multi ? std::min(steps, ceilLog2(in.nIslands)) : 0;
  const double s = static_cast<double>(in.bytes);
  // Every rank crosses in the same step, so a host's ranks share its uplink.
  const Crossing x = crossingSteps(in, cross);
  const double pen = in.rdBwPenalty * in.interSharers;
  const int host = hostLevels(in, steps - cross);
  return x.global * (c.aInter + pen * s * c.bGlobal) + x.group * (c.aGroup + pen * s * c.bGroup) +
         host * (c.aHost + in.rdBwPenalty * s * c.bHost) +
         (steps - cross - host) * (c.aIntra + in.rdBwPenalty * s * c.bIntra * in.intraSharers);
}

double rhdAllReduce(const SelectInput& in, const Costs& c) {
  const int steps = floorLog2(in.nranks);
  const int p = 1 << steps;
  const int cross = c.multi ? std::min(steps, ceilLog2(in.nIslands)) : 0;
  const double s = static_cast<double>(in.bytes);
  const int host = hostLevels(in, steps - cross);  // the last steps, on the smallest pieces
  const Crossing x = crossingSteps(in, cross);
  const double globalBytes = s * (1 - std::ldexp(1.0, -x.global));
  const double groupBytes = s * (std::ldexp(1.0, -x.global) - std::ldexp(1.0, -cross));
  const double intraBytes = s * (std::ldexp(1.0, -cross) - std::ldexp(1.0, host - steps));
  const double hostBytes = s * (std::ldexp(1.0, host - steps) - 1.0 / p);
  double t = 2 * (x.global * c.aInter + x.group * c.aGroup + (steps - cross - host) * c.aIntra + host * c.aHost +
                  in.rhdBwPenalty * ((globalBytes * c.bGlobal + groupBytes * c.bGroup) * in.interSharers +
                                     intraBytes * c.bIntra * in.intraSharers + hostBytes * c.bHost));
  if (p != in.nranks) t += 2 * (c.aFlat() + s * c.bFlat());  // fold the extra ranks in, and back out
  return t;
}

// Each tree pipelines its half (its whole, with one channel) in chunks, and an inner node spends
// two steps per chunk in each phase (one per child), each paying the step overhead. The first
// chunk climbs (and descends) every level, paying its latency once (sends are eager) and two chunk
// transfers: the inner node's one port takes both children's. After it, an inner node's port
// moves two chunks per chunk, so one tree moves 2 * bytes per phase through it; with two trees
// each rank is inner in only one, on half the buffer. atoll-sim (perf/sim) found these terms
// missing: a 128-GPU tree on 50 GB/s links with 128 KiB chunks runs at a fifth of the ring's
// busbw, which a bandwidth term alone priced close to the ring.
double treeAllReduce(const SelectInput& in, const Costs& c) {
  const int crossDepth = c.multi ? ceilLog2(in.nIslands) : 0;
  const int intraDepth = c.multi ? ceilLog2(in.maxIslandSize) : ceilLog2(in.nranks);
  const double s = static_cast<double>(in.bytes);
  const int trees = algo::treeCount(in.nranks, in.maxChannels);
  const double chunks =
      in.chunkBytes > 0 ? std::max(1.0, std::ceil(s / trees / static_cast<double>(in.chunkBytes))) : 1.0;
  const double o = in.stepOverheadUs;
  const double chunk = std::min(s / trees, chunks > 1 ? static_cast<double>(in.chunkBytes) : s);
  // Every island boundary has at most two tree edges each way, so the crossing chunks have the
  // island's uplink as the ring's lone crossing flow has it.
  const double bTree = c.multi ? c.bRing : c.bIntra;
  const double chunkUs = chunk * bTree;
  // The lowest levels join ranks of one host: edges at distances up to a quarter of a host's ranks
  // stay in it, while half of those at half its ranks leave it (the in-order tree's positions are
  // one off the ranks), and a level costs its slowest edge.
  const int hostDepth = std::max(0, hostLevels(in, intraDepth + 1) - 1);
  // A level passes a chunk on once both children's have come in through the one port: two
  // transfers per level (atoll-sim: with one, the tree was priced 7-19% under its simulated time
  // from 256 KiB to 4 MiB).
  const double fill = 2 * (crossDepth * (c.aInter + o + 2 * chunkUs) +
                           (intraDepth - hostDepth) * (c.aIntra + o + 2 * chunkUs) +
                           hostDepth * (c.aHost + o + 2 * chunk * c.bHost));
  // Per pipeline step, an inner node's port takes its two children's chunks; where a host has few
  // ranks per NIC, the edges of both trees that leave it through one NIC can add up to more.
  const double portUs = std::max(2 * bTree, in.treeNicLoad * c.bIntra);
  return fill + 4 * (chunks - 1) * o + 2.0 / trees * in.treeBwPenalty * s * portUs;
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
  const double intra = 2 * (m - 1) * ringStepUs(in, c, in.maxIslandSize, 1) + 2 * (m - 1) / m * s * c.bIntra;
  const double shard = s / std::max(1, in.minIslandSize);
  // The minIslandSize ranks holding shards cross at once and share their hosts' uplinks.
  const double sharers = std::min(in.interSharers, static_cast<double>(std::max(1, in.minIslandSize)));
  // Between Dragonfly+ groups the log-depth exchange has all of a group's islands on one link.
  const double bRingCross = std::max(c.bGroup, c.bInter * c.ringGlobal) * sharers;
  double inter = 2 * (islands - 1) * (c.aInter + shard / islands * bRingCross);
  if (isPow2(in.nIslands)) {
    const Crossing x = crossingSteps(in, ceilLog2(in.nIslands));
    inter = std::min(inter, x.global * (c.aInter + shard * c.bGlobal * sharers) +
                                x.group * (c.aGroup + shard * c.bGroup * sharers));
  }
  return intra + inter;
}

// Ring all-gather / reduce-scatter, pipelined chain broadcast / reduce along the ring.
double ringOther(const SelectInput& in, const Costs& c) {
  const double n = in.nranks;
  const double s = static_cast<double>(in.bytes);
  switch (in.coll) {
    case Coll::Broadcast:
    case Coll::Reduce:
      return (n - 1) * c.aRing + s * c.bRing;
    default:
      return (n - 1) * (c.aRing + s / n * c.bRing);
  }
}

// Binomial broadcast / reduce: ceil(log2 n) rounds, but a rank sends (or folds) the whole buffer
// once per child, one child after the other, so the root's link carries it ceil(log2 n) times:
// log2(n) * (alpha + bytes * beta) with one chunk. Pipelining in k chunks lets the levels overlap
// but the root stays the bottleneck, sending every chunk to each child in turn, so it only adds
// k - 1 steps per child: log2(n) * (k * alpha + bytes * beta). (The textbook pipelined figure,
// (log2 n + k - 1) * (alpha + beta * chunk), needs a rank's sends to different children to run in
// parallel at full speed each, which one executor thread and one uplink per host do not give.)
// The chain sends the buffer once, so it wins again above a few hundred KiB.
double binomialTree(const SelectInput& in, const Costs& c) {
  const double s = static_cast<double>(in.bytes);
  const double chunks = in.chunkBytes > 0 ? std::max(1.0, std::ceil(s / static_cast<double>(in.chunkBytes))) : 1.0;
  return ceilLog2(in.nranks) * (chunks * c.aFlat() + s * c.bFlat());
}

// Bruck all-gather: ceil(log2 n) rounds moving the ring's (n-1)/n of the output, plus the final
// rotation, a local copy of the whole output (priced at the intra-island rate, a memory copy).
// Its rounds talk at distances up to n/2, so across islands every rank crosses at once and a host's
// ranks share its uplink. One channel; fine for the small sizes it wins at.
double bruckAllGather(const SelectInput& in, const Costs& c) {
  const double n = in.nranks, s = static_cast<double>(in.bytes);
  const double bMove = c.multi ? c.bFlat() * in.interSharers : c.bFlat();
  return ceilLog2(in.nranks) * c.aFlat() + (n - 1) / n * s * bMove + s * c.bIntra;
}

// All-gather across islands among equal local indices, then inside each island (reduce-scatter
// mirrors it). A host carries its extras' blocks across; its crossing ranks share the uplink.
double hierAllGatherLike(const SelectInput& in, const Costs& c) {
  const double islands = in.nIslands, L = std::max(1, in.minIslandSize), big = in.maxIslandSize;
  const double block = static_cast<double>(in.bytes) / in.nranks;
  const double bCross = c.bInter * std::min(in.interSharers, L);
  const double inter = (islands - 1) * (c.aInter + std::ceil(big / L) * block * bCross);
  const double intra = (big - 1) * (c.aIntra + islands * block * c.bIntra);
  return inter + intra;
}

// Chain of island leaders, each feeding its island's chain; a leader sends every chunk twice in
// turn (to the next leader, then into its island), so it streams at the two links' combined cost.
double hierChainLike(const SelectInput& in, const Costs& c) {
  const double s = static_cast<double>(in.bytes);
  const double intraBeta = in.maxIslandSize > 1 ? c.bIntra : 0;
  return (in.nIslands - 1) * c.aInter + (in.maxIslandSize - 1) * c.aIntra + s * (c.bInter + intraBeta);
}

}  // namespace

double treeNicChunks(int n, int trees, int nicRanks, int hostRanks) {
  if (n < 3) return 0;
  hostRanks = std::max(1, hostRanks);
  nicRanks = std::clamp(nicRanks, 1, hostRanks);
  const int nicsPerHost = (hostRanks + nicRanks - 1) / nicRanks;
  auto nicOf = [&](int r) { return static_cast<size_t>((r / hostRanks) * nicsPerHost + (r % hostRanks) / nicRanks); };
  const size_t nics = nicOf(n - 1) + 1;
  std::vector<int> in(nics), out(nics);
  int most = 0;
  for (int t = 0; t < trees; ++t) {
    for (int r = 0; r < n; ++r) {
      const int p = algo::treeNode(r, n, t).parent;
      if (p < 0 || p / hostRanks == r / hostRanks) continue;
      most = std::max({most, ++out[nicOf(r)], ++in[nicOf(p)]});
    }
  }
  return most;
}

ModelParams modelParams() {
  using params::Id;
  auto num = [](Id id) { return static_cast<double>(params::getInt(id)); };
  ModelParams m;
  m.shm = {num(Id::ModelShmBwMBs) / 1e3, num(Id::ModelShmLatNs) / 1e3};
  m.socket = {num(Id::ModelSocketBwMBs) / 1e3, num(Id::ModelSocketLatNs) / 1e3};
  m.stepOverheadUs = num(Id::ModelStepNs) / 1e3;
  m.treeBwPenalty = num(Id::ModelTreeBwPct) / 100;
  m.rhdBwPenalty = num(Id::ModelRhdBwPct) / 100;
  m.rdBwPenalty = num(Id::ModelRdBwPct) / 100;
  return m;
}

bool hasHierarchical(algo::Coll c) {
  return c == Coll::AllReduce || c == Coll::AllGather || c == Coll::ReduceScatter || c == Coll::Broadcast ||
         c == Coll::Reduce;
}

bool applicable(Algo a, const SelectInput& in) {
  if (a == Algo::Ring) return true;
  if (in.nranks < 2) return false;
  switch (a) {
    case Algo::Binomial:
      return in.coll == Coll::Broadcast || in.coll == Coll::Reduce;
    case Algo::Bruck:
      return in.coll == Coll::AllGather;
    case Algo::Hierarchical:
      if (in.coll != Coll::AllReduce) return hasHierarchical(in.coll) && in.nIslands > 1;
      break;
    default:
      break;
  }
  if (in.coll != Coll::AllReduce) return false;
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
  if (in.coll != Coll::AllReduce) {
    if (a == Algo::Binomial) return binomialTree(in, c);
    if (a == Algo::Bruck) return bruckAllGather(in, c);
    if (a != Algo::Hierarchical) return ringOther(in, c);
    return in.coll == Coll::Broadcast || in.coll == Coll::Reduce ? hierChainLike(in, c) : hierAllGatherLike(in, c);
  }
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
    case Algo::Binomial:
    case Algo::Bruck:
      break;  // not all-reduce algorithms (applicable() said so already)
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace atl::tuning

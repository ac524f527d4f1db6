// The schedule IR (DESIGN.md): a collective becomes, per rank, a set of programs that run
// concurrently; each program is an ordered list of steps. Generators are pure functions of the
// collective's shape, so the engine, the simulator and the verifier all consume the same output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "topology/island_map.h"

namespace atl::algo {

enum class Coll : uint8_t { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather, Scatter, SendRecv };
const char* collName(Coll c);
/// Whether `c` takes a reduction operator (all-reduce, reduce, reduce-scatter).
inline bool reduces(Coll c) { return c == Coll::AllReduce || c == Coll::Reduce || c == Coll::ReduceScatter; }

/// Which buffer a step addresses: an index into the executing plan's buffer table. Collectives
/// use the three fixed slots; point-to-point batches add one slot per user buffer after them.
using BufId = uint32_t;
inline constexpr BufId kSendBuf = 0;
inline constexpr BufId kRecvBuf = 1;
inline constexpr BufId kScratchBuf = 2;
inline constexpr BufId kFirstUserBuf = 3;

/// A position in a buffer, in elements.
struct Ref {
  BufId buf = kSendBuf;
  size_t offset = 0;
};
inline Ref sendAt(size_t off) { return {kSendBuf, off}; }
inline Ref recvAt(size_t off) { return {kRecvBuf, off}; }
inline Ref scratchAt(size_t off) { return {kScratchBuf, off}; }

enum class StepKind : uint8_t {
  Transfer,   // send sendCount elements from src to sendPeer and/or receive recvCount from recvPeer into dst
  LocalCopy,  // copy sendCount elements from src to dst
  LocalReduce,  // dst = src (op) acc over sendCount elements; lets a rank fix its own combine order
};

/// One unit of work. A Transfer's send and receive progress concurrently (a ring step sends to the
/// next rank while receiving from the previous one), and the step ends when both are complete.
struct Step {
  StepKind kind = StepKind::Transfer;
  int sendPeer = -1;  // -1: nothing to send
  Ref src;
  size_t sendCount = 0;
  int recvPeer = -1;  // -1: nothing to receive
  Ref dst;
  size_t recvCount = 0;
  bool reduce = false;  // receive as dst = acc (op) incoming, instead of dst = incoming
  Ref acc;
};

struct Program {
  int channel = 0;  // selects the connection set; programs of one schedule never share a direction
  std::vector<Step> steps;
};

struct Schedule {
  std::vector<Program> programs;
  size_t scratchElems = 0;
};

/// Algorithm families a generator can be asked for. Callers choose (core/plan_builder.cc);
/// buildSchedule falls back to the ring where the choice does not apply to the shape (executedAlgo).
enum class Algo : uint8_t {
  Ring,                      // bandwidth-optimal; 2(n-1) sequential hops for all-reduce
  RecursiveDoubling,         // all-reduce for power-of-two n: log2(n) hops, whole buffer each hop
  Tree,                      // double binary tree (NCCL-style), latency-bound sizes
  RecursiveHalvingDoubling,  // Rabenseifner: reduce-scatter by halving, all-gather by doubling; any n
  Direct,                    // one-shot: every rank exchanges its whole buffer with every peer (tiny sizes)
  Hierarchical,              // inside islands, then across islands between equal local indices, then inside
  Binomial,                  // broadcast / reduce over a binomial tree: ceil(log2 n) hops, any n and root
  Bruck,                     // all-gather by Bruck's doubling: ceil(log2 n) hops, any n, then a local rotation
};
inline constexpr int kNumAlgos = 8;

const char* algoName(Algo a);

/// The shape of one collective as seen by one rank.
struct CollSpec {
  Coll coll = Coll::AllReduce;
  int nranks = 1;
  int rank = 0;
  int root = 0;
  size_t count = 0;       // NCCL's count argument (per-rank block for AllGather/ReduceScatter/AlltoAll/Gather/Scatter)
  int nchannels = 1;      // channels available; generators may use fewer for small sizes
  size_t chunkElems = 1;  // pipelining granularity (chain algorithms) and minimum per-channel share
  size_t ringSliceElems = 0;  // ring all-reduce: elements per rank and round (0: one round), see ring_allreduce.cc
  bool inPlace = false;   // send and receive buffers are the same memory (as NCCL defines in-place)
  Algo algo = Algo::Ring;
  std::shared_ptr<const topo::IslandMap> islands;  // null: one island
};

/// Appends a transfer step, dropping halves of zero length (both sides drop the same halves, since
/// a sender's sendCount is its peer's recvCount for the matching step).
void addTransfer(Program& prog, int sendPeer, Ref src, size_t sendCount, int recvPeer, Ref dst, size_t recvCount,
                 bool reduce = false, Ref acc = {});
void addCopy(Program& prog, Ref src, Ref dst, size_t count);
void addLocalReduce(Program& prog, Ref a, Ref b, Ref dst, size_t count);

/// The algorithm whose generator buildSchedule(spec) runs (algorithms/dispatch.cc): spec.algo
/// where it applies to the shape, otherwise the ring (the chain for broadcast and reduce); Direct
/// for all-to-all, gather and scatter, which have one schedule each.
Algo executedAlgo(const CollSpec& spec);
/// The schedule of executedAlgo(spec) for every collective (not SendRecv, see p2p.h).
Schedule buildSchedule(const CollSpec& spec);

/// Splits [0, total) into `parts` contiguous pieces whose sizes differ by at most one.
struct Span {
  size_t offset;
  size_t count;
};
Span evenSplit(size_t total, int parts, int index);

/// How many channels to use for `count` elements given the per-channel minimum.
int channelsFor(size_t count, int nchannels, size_t minPerChannel);

/// How many distinct channels the schedule's programs use (0 for an empty schedule).
int channelsUsed(const Schedule& s);

std::string describe(const Schedule& s);

}  // namespace atl::algo

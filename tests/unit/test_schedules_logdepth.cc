// The log-depth generators (binomial-tree broadcast and reduce, Bruck all-gather), proved by the
// symbolic verifier for every rank count up to 33 and every root, counts from 0 past the rank
// count, chunkings and layouts, then at large rank counts; and their depth: the rounds a schedule
// needs when every transfer takes one unit, ceil(log2 n) against the chain's and ring's n - 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/verify.h"
#include "tests/unit/verify_specs.h"

namespace atl::algo {
namespace {

struct Kind {
  Coll coll;
  Algo algo;
};
const Kind kKinds[] = {{Coll::Broadcast, Algo::Binomial}, {Coll::Reduce, Algo::Binomial}, {Coll::AllGather, Algo::Bruck}};

bool rooted(Coll c) { return c == Coll::Broadcast || c == Coll::Reduce; }

CollSpec spec(Kind k, int n, size_t count, int root, size_t chunk, bool inPlace, int nch = 1) {
  return test::makeSpec(k.coll, k.algo, n, count, root, nch, chunk, inPlace);
}

using test::expectVerified;

int ceilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

// ---- correctness ------------------------------------------------------------------------------

class EveryRoot : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(EveryRoot, CountsChunksLayouts) {
  const Kind kind = kKinds[std::get<0>(GetParam())];
  const int n = std::get<1>(GetParam());
  const size_t un = static_cast<size_t>(n);
  // 0, 1, below n, odd, n itself, and larger than n; chunk 1 makes every element its own chunk.
  std::vector<size_t> counts = {0, 1, 2, 3, un > 1 ? un - 1 : 1, un, 2 * un + 1, 257};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  const int roots = rooted(kind.coll) ? n : 1;
  for (int root = 0; root < roots; ++root)
    for (size_t count : counts)
      for (size_t chunk : {1ul, 4ul, 1000ul})
        for (bool inPlace : {false, true}) {
          expectVerified(spec(kind, n, count, root, chunk, inPlace, 1 + root % 2));
          if (HasFailure()) return;
        }
}

INSTANTIATE_TEST_SUITE_P(LogDepth, EveryRoot,
                         ::testing::Combine(::testing::Range(0, 3), ::testing::Range(1, 34)), [](const auto& info) {
                           const Kind k = kKinds[std::get<0>(info.param)];
                           return std::string(collName(k.coll)) + "_" + algoName(k.algo) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(LogDepthLarge, BroadcastAndReduceUpTo4096) {
  for (Kind kind : {kKinds[0], kKinds[1]}) {
    for (int n : {64, 100, 257, 1024}) {
      const size_t un = static_cast<size_t>(n);
      for (int root : {0, 1, n / 2, n - 1})
        for (size_t count : {1ul, un - 1, 3 * un + 5}) {
          expectVerified(spec(kind, n, count, root, 64, root % 2 == 1));
          if (HasFailure()) return;
        }
    }
    // Every rank's buffers are simulated: at 4096 ranks a count past n once, small ones otherwise.
    for (int root : {0, 4095}) expectVerified(spec(kind, 4096, 37, root, 8, root != 0));
    expectVerified(spec(kind, 4096, 3 * 4096 + 5, 2048, 1024, false));
  }
}

TEST(LogDepthLarge, BruckUpTo1024) {
  // The simulated outputs grow as n^2 blocks: 1024 ranks is the largest the verifier holds cheaply.
  for (int n : {64, 100, 257, 1024})
    for (size_t count : {1ul, 3ul})
      for (bool inPlace : {false, true}) expectVerified(spec(kKinds[2], n, count, 0, 64, inPlace));
}

TEST(LogDepth, OtherCollectivesFallBackToTheirOwnSchedules) {
  // Binomial and Bruck name no all-reduce (or reduce-scatter...) schedule: buildSchedule gives the ring.
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather})
    expectVerified(spec({c, Algo::Binomial}, 7, 13, 2, 4, false));
  for (Coll c : {Coll::AllReduce, Coll::Broadcast, Coll::Reduce}) expectVerified(spec({c, Algo::Bruck}, 7, 13, 2, 4, false));
}

// ---- depth ------------------------------------------------------------------------------------

/// Rounds the whole schedule needs when every transfer step takes one unit: a step starts when the
/// one before it in its program ended, its send arrives one unit after it starts, and it ends one
/// unit after it started or when its receive arrived, whichever is later. Local copies and
/// reductions take no time. This is the number of sequential hops on the critical path.
int rounds(const CollSpec& base) {
  const int n = base.nranks;
  std::vector<Schedule> scheds;
  for (int r = 0; r < n; ++r) {
    CollSpec s = base;
    s.rank = r;
    scheds.push_back(buildSchedule(s));
  }
  std::map<std::tuple<int, int, int>, std::deque<int>> arrivals;  // (channel, from, to) -> arrival times
  std::vector<std::vector<size_t>> pc(static_cast<size_t>(n));
  std::vector<std::vector<int>> clock(static_cast<size_t>(n));
  std::vector<std::vector<char>> posted(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const size_t np = scheds[static_cast<size_t>(r)].programs.size();
    pc[static_cast<size_t>(r)].assign(np, 0);
    clock[static_cast<size_t>(r)].assign(np, 0);
    posted[static_cast<size_t>(r)].assign(np, 0);
  }
  int depth = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      const auto ur = static_cast<size_t>(r);
      for (size_t p = 0; p < scheds[ur].programs.size(); ++p) {
        const Program& prog = scheds[ur].programs[p];
        while (pc[ur][p] < prog.steps.size()) {
          const Step& st = prog.steps[pc[ur][p]];
          int& now = clock[ur][p];
          if (st.kind != StepKind::Transfer) {
            ++pc[ur][p];
            continue;
          }
          if (st.sendPeer >= 0 && !posted[ur][p]) {
            arrivals[{prog.channel, r, st.sendPeer}].push_back(now + 1);
            posted[ur][p] = 1;
            progress = true;
          }
          int end = now + 1;
          if (st.recvPeer >= 0) {
            auto& q = arrivals[{prog.channel, st.recvPeer, r}];
            if (q.empty()) break;  // the sender has not got there yet
            end = std::max(end, q.front());
            q.pop_front();
          }
          now = end;
          depth = std::max(depth, end);
          posted[ur][p] = 0;
          ++pc[ur][p];
          progress = true;
        }
      }
    }
  }
  for (int r = 0; r < n; ++r)
    for (size_t p = 0; p < pc[static_cast<size_t>(r)].size(); ++p)
      EXPECT_EQ(pc[static_cast<size_t>(r)][p], scheds[static_cast<size_t>(r)].programs[p].steps.size())
          << "rank " << r << " blocked";
  return depth;
}

size_t transfers(const Program& prog) {
  return static_cast<size_t>(std::count_if(prog.steps.begin(), prog.steps.end(),
                                           [](const Step& st) { return st.kind == StepKind::Transfer; }));
}

TEST(Depth, BinomialIsLog2AgainstTheChainsNMinusOne) {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 64, 100, 1000})
    for (int root : {0, n / 3, n - 1}) {
      for (Coll c : {Coll::Broadcast, Coll::Reduce}) {
        // One chunk: the plain tree.
        CollSpec tree = spec({c, Algo::Binomial}, n, 16, root, 1000, false);
        EXPECT_EQ(rounds(tree), ceilLog2(n)) << collName(c) << " n=" << n << " root=" << root;
        CollSpec chain = tree;
        chain.algo = Algo::Ring;
        EXPECT_EQ(rounds(chain), n - 1) << collName(c) << " chain n=" << n << " root=" << root;
        // The root (broadcast) or the rank folding the most children (reduce) has the longest program.
        size_t longest = 0;
        for (int r = 0; r < n; ++r) {
          tree.rank = r;
          for (const Program& p : buildSchedule(tree).programs) longest = std::max(longest, transfers(p));
        }
        EXPECT_EQ(longest, static_cast<size_t>(ceilLog2(n))) << collName(c) << " n=" << n;
      }
    }
}

TEST(Depth, PipelinedBinomialAddsAChildsStepPerChunk) {
  // k chunks: the root sends each to its log2(n) children in turn, so k * log2(n) rounds at most,
  // and the pipeline keeps every level busy (no store-and-forward of the whole buffer per level).
  for (int n : {8, 13, 64})
    for (size_t k : {2ul, 5ul}) {
      const int bound = static_cast<int>(k) * ceilLog2(n);
      const int got = rounds(spec(kKinds[0], n, 4 * k, 0, 4, false));
      EXPECT_LE(got, bound) << "n=" << n << " chunks=" << k;
      EXPECT_GE(got, bound) << "n=" << n << " chunks=" << k;  // the root's k * log2(n) sends
      EXPECT_LE(rounds(spec(kKinds[1], n, 4 * k, 0, 4, false)), bound + ceilLog2(n)) << "reduce n=" << n;
    }
}

TEST(Depth, BruckIsLog2AgainstTheRingsNMinusOne) {
  for (int n : {1, 2, 3, 5, 8, 9, 33, 100, 1000}) {
    CollSpec bruck = spec(kKinds[2], n, 2, 0, 1000, false);
    EXPECT_EQ(rounds(bruck), ceilLog2(n)) << "n=" << n;
    CollSpec ring = bruck;
    ring.algo = Algo::Ring;
    EXPECT_EQ(rounds(ring), n - 1) << "n=" << n;
  }
}

// ---- the verifier rejects broken variants -----------------------------------------------------

Schedule reduceSkipsAChild(const CollSpec& s) {
  CollSpec b = s;
  b.algo = Algo::Binomial;
  Schedule out = buildSchedule(b);
  if (s.rank == s.root) out.programs.at(0).steps.pop_back();  // the last child's fold, never received
  return out;
}
Schedule bruckWithoutRotation(const CollSpec& s) {
  CollSpec b = s;
  b.algo = Algo::Bruck;
  Schedule out = buildSchedule(b);
  if (s.rank == 2) {
    std::vector<Step>& steps = out.programs.at(0).steps;
    steps.back().dst = steps.back().src;  // the second copy lands back in scratch
    steps.back().dst.offset = 0;
  }
  return out;
}
Schedule broadcastForwardsTooEarly(const CollSpec& s) {
  // An inner rank forwards from its receive buffer before it received: stale data reaches the leaf.
  CollSpec b = s;
  b.algo = Algo::Binomial;
  Schedule out = buildSchedule(b);
  std::vector<Step>& steps = out.programs.at(0).steps;
  if (s.rank != s.root && steps.size() >= 2 && steps[1].sendPeer >= 0) std::swap(steps[0], steps[1]);
  return out;
}

TEST(Verifier, RejectsBrokenLogDepthSchedules) {
  CollSpec r = spec(kKinds[1], 8, 16, 3, 1000, false);
  ASSERT_TRUE(verifySchedule(r).ok);
  VerifyResult lost = verifySchedule(r, &reduceSkipsAChild);
  EXPECT_FALSE(lost.ok);

  CollSpec g = spec(kKinds[2], 6, 3, 0, 1000, false);
  ASSERT_TRUE(verifySchedule(g).ok);
  EXPECT_FALSE(verifySchedule(g, &bruckWithoutRotation).ok);

  CollSpec b = spec(kKinds[0], 8, 16, 0, 1000, false);
  ASSERT_TRUE(verifySchedule(b).ok);
  VerifyResult early = verifySchedule(b, &broadcastForwardsTooEarly);
  EXPECT_FALSE(early.ok);
  EXPECT_NE(early.error.find("contribution"), std::string::npos) << early.error;
}

}  // namespace
}  // namespace atl::algo

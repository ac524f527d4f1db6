// Every generator under rendezvous delivery: a send completes only once its receiver took it, and
// the receiver reads the sender's memory at that moment. That is how the shm transport's single
// copy moves large messages (transports/shm/shm_direct.h), so a schedule that leans on buffering
// to make progress, or that overwrites what it still offers, would hang or corrupt there.
#include <gtest/gtest.h>

#include <string>

#include "algorithms/verify.h"
#include "tests/unit/island_maps.h"
#include "tests/unit/verify_specs.h"

namespace atl::algo {
namespace {

const Coll kColls[] = {Coll::AllReduce, Coll::Broadcast, Coll::Reduce,  Coll::AllGather,
                       Coll::ReduceScatter, Coll::AlltoAll, Coll::Gather, Coll::Scatter};
const Algo kAlgos[] = {Algo::Ring,   Algo::RecursiveDoubling, Algo::Tree,     Algo::RecursiveHalvingDoubling,
                       Algo::Direct, Algo::Hierarchical,      Algo::Binomial, Algo::Bruck};

void expectRendezvousSafe(const CollSpec& s) {
  VerifyResult r = verifySchedule(s, Delivery::Rendezvous);
  EXPECT_TRUE(r.ok) << collName(s.coll) << "/" << algoName(s.algo) << " n=" << s.nranks << " count=" << s.count
                    << " root=" << s.root << " nch=" << s.nchannels << " chunk=" << s.chunkElems
                    << " inPlace=" << s.inPlace << " islands=" << (s.islands ? s.islands->members.size() : 0) << ": "
                    << r.error;
}

class Rendezvous : public ::testing::TestWithParam<Algo> {};

TEST_P(Rendezvous, EveryCollectiveShapeAndLayout) {
  const Algo algo = GetParam();
  for (Coll coll : kColls)
    for (int n : {2, 3, 4, 5, 8, 9, 16})
      for (size_t count : {1ul, 7ul, 64ul, 257ul})
        for (int nch : {1, 2})
          for (size_t chunk : {1ul, 1000ul})
            for (bool inPlace : {false, true})
              for (int root : {0, n - 1}) {
                CollSpec s = test::makeSpec(coll, algo, n, count, root, nch, chunk, inPlace);
                if (algo == Algo::Hierarchical) s.islands = n % 2 == 0 ? test::blocks({n / 2, n / 2}) : test::strided(n, 2);
                expectRendezvousSafe(s);
                if (HasFailure()) return;
              }
}

INSTANTIATE_TEST_SUITE_P(Generators, Rendezvous, ::testing::ValuesIn(kAlgos),
                         [](const auto& info) { return std::string(algoName(info.param)); });

// The mode must be able to fail, or the sweep above proves nothing.
Schedule sendThenReceive(const CollSpec& s) {
  // Both ranks send first and receive in a later step: fine with buffering, a hang without.
  Schedule out;
  Program p;
  const int peer = 1 - s.rank;
  addTransfer(p, peer, sendAt(0), s.count, -1, {}, 0);
  addTransfer(p, -1, {}, 0, peer, recvAt(0), s.count);
  out.programs.push_back(p);
  return out;
}

TEST(RendezvousVerifier, RejectsASendThatNeedsBuffering) {
  CollSpec s = test::makeSpec(Coll::AllReduce, Algo::Ring, 2, 4, 0, 1, 1, false);
  EXPECT_TRUE(verifySchedule(s, &sendThenReceive, Delivery::Buffered).error.find("deadlock") == std::string::npos);
  VerifyResult r = verifySchedule(s, &sendThenReceive, Delivery::Rendezvous);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("deadlock"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace atl::algo

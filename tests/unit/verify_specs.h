// What the schedule tests share: a CollSpec from its fields, and the verifier's verdict as a test
// expectation whose message says which shape failed.
#pragma once

#include <gtest/gtest.h>

#include "algorithms/verify.h"

namespace atl::algo::test {

inline CollSpec makeSpec(Coll c, Algo a, int n, size_t count, int root, int nch, size_t chunk, bool inPlace) {
  CollSpec s;
  s.coll = c;
  s.algo = a;
  s.nranks = n;
  s.count = count;
  s.root = root;
  s.nchannels = nch;
  s.chunkElems = chunk;
  s.inPlace = inPlace;
  return s;
}

inline void expectVerified(const CollSpec& s) {
  VerifyResult r = verifySchedule(s);
  EXPECT_TRUE(r.ok) << collName(s.coll) << "/" << algoName(s.algo) << " n=" << s.nranks << " count=" << s.count
                    << " root=" << s.root << " nch=" << s.nchannels << " chunk=" << s.chunkElems
                    << " inPlace=" << s.inPlace << " islands=" << (s.islands ? s.islands->members.size() : 0) << ": "
                    << r.error;
}

}  // namespace atl::algo::test
